import { formatValue } from '../render/numbers.ts';
import { resume, type RunContext } from './evaluate.ts';
import { Lifecycle } from './lifecycle.ts';
import { compare, type RelativeRule } from './rules.ts';
import { median, medianOf } from './stats.ts';

/** What a relative rule remembers between evaluations (its rule cursor's state). */
interface RelativeState {
  /** finite records seen */
  seen: number;
  /** early baseline: the records collected so far, then their median */
  early: number[];
  baseline: number | null;
  /** max baseline: the running maximum of the smoothed value */
  max: number | null;
  streak: number;
  quiet: number;
  /** the run's noise: the last finite value and the sum of squared successive differences over `diffs` */
  last: number | null;
  ssd: number;
  diffs: number;
}

/** The standard error of the median of n independent values, in standard deviations (the mean's is 1/√n). */
const medianSe = (n: number): number => (n === 1 ? 1 : 1.2533 / Math.sqrt(n));

const NAMES = { early: 'its early median', rolling: 'its recent median', max: 'its running max' } as const;

/**
 * Relative: a metric against a baseline learnt from the run itself. Until the baseline exists (the run's
 * `learning` period: `warmup` + `baselineWindow` records) the rule only learns; a baseline of 0 or less
 * judges nothing (a factor of it means nothing).
 */
export function evaluateRelative(ctx: RunContext, rule: RelativeRule): void {
  const { store, runId } = ctx;
  const metric = rule.metric;
  const { cursor, from, fresh } = resume(ctx, rule.id, metric);
  if (fresh.length === 0) return;
  const st: RelativeState = {
    ...{ seen: 0, early: [], baseline: null, max: null, streak: 0, quiet: 0, last: null, ssd: 0, diffs: 0 },
    ...(cursor?.state as Partial<RelativeState>),
  };
  const rolling = rule.baseline === 'rolling' ? rule.baselineWindow : 0;
  const keep = rule.smooth - 1 + rolling;
  const values = cursor && keep > 0 ? store.points.upTo(runId, metric, from, keep, true).map((p) => p.value) : [];
  const hold = { quietFor: rule.recoverFor, quiet: st.quiet };
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric }, ctx.now, hold);
  const scratch: number[] = [];
  for (const p of fresh) {
    values.push(p.value);
    if (values.length > keep + 1) values.shift();
    st.seen++;
    if (st.last !== null) {
      st.ssd += (p.value - st.last) ** 2;
      st.diffs++;
    }
    st.last = p.value;
    if (st.seen <= rule.warmup || values.length < rule.smooth) continue;
    const now = rule.smooth === 1 ? p.value : medianOf(values, values.length - rule.smooth, values.length, scratch);
    let base: number | null = null;
    if (rule.baseline === 'early') {
      if (st.baseline === null) {
        st.early.push(now);
        if (st.early.length >= rule.baselineWindow) st.baseline = median(st.early);
        continue; // learning
      }
      base = st.baseline;
    } else if (rule.baseline === 'rolling') {
      if (values.length < keep + 1) continue;
      base = medianOf(values, 0, rolling, scratch);
    } else {
      base = st.max;
      st.max = st.max === null ? now : Math.max(st.max, now);
      if (base === null) continue;
    }
    if (base <= 0) continue;
    const bound = rule.factor * base;
    // the gap must stand out of the run's noise: a noisy series' running max is itself an extreme (minimind's
    // response length swings 60-500 from step to step without any trend), so value and baseline each carry it
    const sigma = st.diffs > 0 ? Math.sqrt(st.ssd / (2 * st.diffs)) : 0;
    const noise = rule.sigmas * Math.SQRT2 * medianSe(rule.smooth) * sigma;
    const holds = compare(now, rule.op, bound) && Math.abs(now - base) > Math.max(rule.minDelta, noise);
    if (holds) st.streak++;
    else st.streak = 0;
    const n = st.streak;
    const past = !holds && !compare(now, rule.op, (rule.recover ?? rule.factor) * base);
    // most records change nothing: the words and details are built only for those that do
    if (holds ? !lc.wouldChange('bad', n >= rule.for) : !lc.wouldChange('ok', past)) continue;
    const ratio = now / base;
    const words = () =>
      `${metric} ${formatValue(now)} ${rule.op} ${formatValue(rule.factor)}× ${NAMES[rule.baseline]} ` +
      formatValue(base as number);
    const details = { value: now, baseline: base, kind: rule.baseline, ratio, factor: rule.factor };
    if (holds) {
      lc.hold(p.step, n, rule.for, rule.severity, () => ({
        summary: `${words()} (${formatValue(ratio)}×) for ${n} step${n === 1 ? '' : 's'}`,
        details,
      }));
    } else {
      lc.apply(p.step, {
        kind: 'ok',
        recovered: past,
        describe: () => ({
          summary: `${metric} ${formatValue(now)}: back to ${formatValue(ratio)}× ${NAMES[rule.baseline]}`,
          details,
        }),
      });
    }
  }
  st.quiet = lc.quiet;
  store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, { ...st });
}
