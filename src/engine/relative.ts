/**
 * The relative rule kind: a metric against a baseline learnt from the run itself (its early or recent median, or
 * its running max).
 */
import { formatValue } from '../lib/numbers.ts';
import { resume, type RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import { compare, type RelativeRule } from './rules.ts';
import { median, medianOf, SlidingMedian } from './stats.ts';

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
  /** rolling: the baseline of the open alert, held until it resolves */
  held: number | null;
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
    ...{ seen: 0, early: [], baseline: null, max: null, streak: 0, quiet: 0, last: null, ssd: 0, diffs: 0, held: null },
    ...(cursor?.state as Partial<RelativeState>),
  };
  const rolling = rule.baseline === 'rolling' ? rule.baselineWindow : 0;
  const lag = rule.baseline === 'rolling' ? rule.lag : 0;
  const keep = rule.smooth - 1 + lag + rolling;
  const values = cursor && keep > 0 ? store.points.upTo(runId, metric, from, keep, true).map((p) => p.value) : [];
  const hold = { quietFor: rule.recoverFor, quiet: st.quiet };
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric }, ctx.now, hold);
  const scratch: number[] = [];
  // the rolling baseline's window moves by one record at each record: kept sorted from one to the next
  const rollingMedian = new SlidingMedian();
  let offset = 0; // values shifted out of `values` so far
  for (const p of fresh) {
    values.push(p.value);
    const gone = values.length > keep + 1 ? values.shift() : undefined;
    if (gone !== undefined) offset++;
    st.seen++;
    if (st.last !== null) {
      st.ssd += (p.value - st.last) ** 2;
      st.diffs++;
    }
    st.last = p.value;
    if (st.seen <= rule.warmup || values.length < rule.smooth) continue;
    const now = rule.smooth === 1 ? p.value : medianOf(values, values.length - rule.smooth, values.length, scratch);
    let base: number | null = null;
    let window: [number, number] | null = null;
    // an open alert keeps the rolling baseline it opened with
    const holding = rule.baseline === 'rolling' && lc.state !== null && st.held !== null;
    if (rule.baseline === 'early') {
      if (st.baseline === null) {
        st.early.push(now);
        if (st.early.length >= rule.baselineWindow) st.baseline = median(st.early);
        continue; // learning
      }
      base = st.baseline;
    } else if (rule.baseline === 'rolling') {
      // the records before the smoothed ones (`lag` records before), none of them from the warm-up (a KL is ~0
      // there by construction)
      // (early in a run, the lag is what the records since the warm-up leave: a jump is judged from the first records)
      const lagNow = Math.max(0, Math.min(lag, st.seen - rule.warmup - rule.smooth - rolling));
      const end = values.length - rule.smooth - lagNow;
      const start = Math.max(0, values.length - (st.seen - rule.warmup), end - rolling);
      if (end - start < (rule.floor === undefined ? rolling : 1)) {
        if (rule.floor === undefined) continue;
      } else {
        window = [start, end];
        base = holding ? st.held : rollingMedian.at(values, offset, offset + start, offset + end, gone);
      }
    } else {
      base = st.max;
      st.max = st.max === null ? now : Math.max(st.max, now);
      if (base === null) continue;
    }
    if ((base === null || base <= 0) && rule.floor === undefined) continue;
    const bound = lineOf(rule, rule.factor, base);
    const beyondCap = rule.cap !== undefined && compare(now, rule.op, rule.cap);
    // the gap must stand out of the run's noise: a noisy series' running max is itself an extreme (minimind's
    // response length swings 60-500 from step to step without any trend), so value and baseline each carry it
    const sigma = st.diffs > 0 ? Math.sqrt(st.ssd / (2 * st.diffs)) : 0;
    const noise = rule.sigmas * Math.SQRT2 * medianSe(rule.smooth) * sigma;
    const gap = Math.abs(now - (base ?? 0));
    const holds =
      compare(now, rule.op, bound) &&
      (beyondCap || (gap > Math.max(rule.minDelta, noise) && outOfLogNoise(rule, now, base, values, window, scratch)));
    if (holds) st.streak++;
    else st.streak = 0;
    const n = st.streak;
    const past = !holds && !compare(now, rule.op, recoveryLine(rule, base));
    // most records change nothing: the words and details are built only for those that do
    if (holds ? !lc.wouldChange('bad', n >= rule.for) : !lc.wouldChange('ok', past)) continue;
    const ratio = base !== null && base > 0 ? now / base : null;
    // the line as it was drawn: the floor or the cap when one of them set it
    const byFactor = bound === rule.factor * (base ?? NaN);
    const drawn = byFactor
      ? `${formatValue(rule.factor)}× ${NAMES[rule.baseline]} ${formatValue(base as number)}`
      : formatValue(bound);
    const details = { value: now, baseline: base, kind: rule.baseline, ratio, factor: rule.factor, line: bound };
    if (holds) {
      lc.hold(p.step, n, rule.for, rule.severity, () => ({
        summary:
          `${metric} ${formatValue(now)} ${rule.op} ${drawn}` +
          `${ratio !== null ? ` (${formatValue(ratio)}×${drawn.includes('×') ? '' : ` ${NAMES[rule.baseline]}`})` : ''} for ${n} step${n === 1 ? '' : 's'}`,
        details,
      }));
    } else {
      lc.apply(p.step, {
        kind: 'ok',
        recovered: past,
        describe: () => ({
          summary:
            // a line drawn by the floor is named as such, unless the recovery is a multiple of the baseline too
            ratio !== null && (byFactor || rule.recover !== undefined)
              ? `${metric} ${formatValue(now)}: back to ${formatValue(ratio)}× ${NAMES[rule.baseline]}`
              : `${metric} ${formatValue(now)}: back past ${formatValue(recoveryLine(rule, base))}`,
          details,
        }),
      });
    }
    if (rule.baseline === 'rolling') st.held = lc.state === null ? null : holding ? st.held : base;
  }
  st.quiet = lc.quiet;
  store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, { ...st });
}

/** The line a firing alert must be back past: `recover` × baseline, without the floor (a line to fire at, not to
 * calm down at: a norm that lives at 1.1 is not calm at 8 because 10 is the floor); else the firing line. */
const recoveryLine = (rule: RelativeRule, base: number | null): number =>
  rule.recover !== undefined && base !== null && base > 0
    ? lineOf(rule, rule.recover, base, false)
    : lineOf(rule, rule.factor, base);

/** factor × baseline, held within [floor, cap] on the rule's side (no baseline: the floor). */
function lineOf(rule: RelativeRule, factor: number, base: number | null, floored = true): number {
  const up = rule.op === '>';
  let line = base !== null && base > 0 ? factor * base : (rule.floor as number);
  if (rule.floor !== undefined && floored) line = up ? Math.max(line, rule.floor) : Math.min(line, rule.floor);
  if (rule.cap !== undefined) line = up ? Math.min(line, rule.cap) : Math.max(line, rule.cap);
  return line;
}

/** The minimum of baseline records the log gate needs before it judges (with fewer, the multiple alone). */
const LOG_GATE_MIN = 10;

/** `logSigmas`: log(value / baseline) beyond that many robust standard deviations of the logs of the baseline
 * window, 1.4826 × median |log x − median log x| (the MAD, scaled to a normal's σ); with fewer than
 * LOG_GATE_MIN records, factor × the farthest of them. */
function outOfLogNoise(
  rule: RelativeRule,
  now: number,
  base: number | null,
  values: readonly number[],
  window: [number, number] | null,
  scratch: number[],
): boolean {
  if (rule.logSigmas === 0 || window === null || base === null || base <= 0 || now <= 0) return true;
  const logs: number[] = [];
  let extreme = rule.op === '>' ? -Infinity : Infinity;
  for (let i = window[0]; i < window[1]; i++) {
    const v = values[i] as number;
    if (v > 0) logs.push(Math.log(v));
    extreme = rule.op === '>' ? Math.max(extreme, v) : Math.min(extreme, v);
  }
  // too few records to tell their spread: the factor applies to the farthest of them, not their median
  if (logs.length < LOG_GATE_MIN) return compare(now, rule.op, rule.factor * extreme);
  const centre = medianOf(logs, 0, logs.length, scratch);
  const mad = medianOf(
    logs.map((l) => Math.abs(l - centre)),
    0,
    logs.length,
    scratch,
  );
  return Math.abs(Math.log(now / base)) > rule.logSigmas * 1.4826 * mad;
}
