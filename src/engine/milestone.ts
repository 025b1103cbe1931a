/** The milestone rule kind: by a given epoch, a metric's recent mean should have reached a level. */
import { formatValue } from '../lib/numbers.ts';
import { START, type RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import { compare, type MilestoneRule } from './rules.ts';
import { mean } from './stats.ts';

/** Milestone: when the run first reaches the epoch, the recent mean must satisfy the rule; the alert
 * resolves once it does. */
export function evaluateMilestone(ctx: RunContext, rule: MilestoneRule): void {
  const { store, runId } = ctx;
  const cursor = store.alerts.cursor(runId, rule.id, rule.metric);
  let reached = cursor?.state.reached === true;
  // the line as judged at the epoch (in the run's range, for a `unit` milestone): its recovery is judged by it too
  let line = typeof cursor?.state.line === 'number' ? cursor.state.line : rule.value;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: rule.metric }, ctx.now);
  if (reached && lc.state === null) return; // judged and met: nothing more to watch
  const from = cursor?.step ?? START;
  const epochs = ctx.after('epoch', from);
  if (epochs.length === 0) return;
  const detailsOf = (epoch: number | null, m: number, n: number) => ({ epoch, mean: m, window: n });
  let watchFrom = from; // recovery is watched on the metric's own steps after this one
  // a `unit` milestone's range of the metric so far, carried in the cursor from the run's first record (a cursor
  // saved without it: undefined, read from the store at the epoch)
  let range: Range | null | undefined = cursor ? (cursor.state.range as Range | null | undefined) : null;
  if (!reached) {
    const at = epochs.find((e) => e.value >= rule.epoch - 1e-9);
    if (rule.scale === 'unit' && range !== undefined) {
      const upTo = (at ?? epochs[epochs.length - 1]!).step;
      range = widen(range, ctx.after(rule.metric, from), upTo);
    }
    if (at) {
      const recent = store.points.upTo(runId, rule.metric, at.step, rule.window, true).map((p) => p.value);
      // a run that does not log the metric yet is judged when it first does, at a later epoch record
      if (recent.length > 0) {
        reached = true;
        watchFrom = at.step;
        const m = mean(recent, 0, recent.length);
        const { value: target, scaled } = targetOf(ctx, rule, at.step, range);
        line = target;
        if (!compare(m, rule.op, target)) {
          // one cause, one page: a run a critical alert is firing for (mode_collapse since step 5), or one a rule
          // that explains the miss is firing for (zero_signal_too_easy), misses its milestones because of it; they
          // are recorded as info (terminal, digest, report), naming that alert
          const paged = ctx.alerts
            .firing()
            .find(
              (a) =>
                a.rule !== rule.id &&
                (a.severity === 'critical' || rule.explainedBy.includes(a.rule)) &&
                (a.fired_step ?? a.started_step) <= at.step,
            );
          const since = paged
            ? `; ${paged.rule} ${paged.severity} since step ${paged.fired_step ?? paged.started_step}`
            : '';
          // the preset's numbers are assumptions about the run (one GRPO analysis' rewards at its epochs): a miss of
          // one is news for the report, not a page; the user's own target pages
          const severity = paged || rule.assumed ? 'info' : rule.severity;
          lc.apply(at.step, {
            kind: 'bad',
            firing: true,
            severity,
            describe: () => ({
              summary: `${rule.metric} ${formatValue(m)} at epoch ${formatValue(at.value)}: expected ${rule.op} ${formatValue(target)}${scaled} by epoch ${formatValue(rule.epoch)} (mean of last ${recent.length})${since}`,
              details: { ...detailsOf(at.value, m, recent.length), target, ...(paged && { covered: paged.rule }) },
            }),
          });
        }
      }
    }
  }
  if (lc.state === 'firing') {
    // one query for the whole batch: the window before, then the new values, with a rolling mean
    const before = store.points.upTo(runId, rule.metric, watchFrom, rule.window, true).map((p) => p.value);
    const fresh = ctx.after(rule.metric, watchFrom).filter((p) => Number.isFinite(p.value));
    const window = [...before];
    for (const p of fresh) {
      window.push(p.value);
      if (window.length > rule.window) window.shift();
      const m = mean(window, 0, window.length);
      if (compare(m, rule.op, line)) {
        const n = window.length;
        lc.apply(p.step, {
          kind: 'ok',
          recovered: true,
          describe: () => ({
            summary: `${rule.metric} ${formatValue(m)} now ${rule.op} ${formatValue(line)}`,
            details: detailsOf(null, m, n),
          }),
        });
        break;
      }
    }
  }
  const state = rule.scale === 'unit' && !reached && range !== undefined ? { reached, line, range } : { reached, line };
  store.alerts.saveCursor(runId, rule.id, rule.metric, epochs[epochs.length - 1]!.step, state);
}

/** The lowest and highest finite value of a series so far. */
type Range = [lo: number, hi: number];

/** `r` widened by the finite values of `points` at or before `upTo`. */
function widen(r: Range | null, points: ReadonlyArray<{ step: number; value: number }>, upTo: number): Range | null {
  let [lo, hi] = r ?? [Infinity, -Infinity];
  for (const { step, value } of points) {
    if (step > upTo || !Number.isFinite(value)) continue;
    if (value < lo) lo = value;
    if (value > hi) hi = value;
  }
  return lo <= hi ? [lo, hi] : null;
}

/** The line a milestone is judged by at `step`: its value, or for a `unit` milestone on a run whose metric has
 * left [0, 1], that fraction of the run's range up to the step (a reward in [-1, 0] or in the hundreds): `range`
 * as the evaluations carried it, else (a cursor from before they did) read from the store. */
function targetOf(
  ctx: RunContext,
  rule: MilestoneRule,
  step: number,
  range: Range | null | undefined,
): { value: number; scaled: string } {
  if (rule.scale === 'absolute') return { value: rule.value, scaled: '' };
  const r =
    range !== undefined
      ? range
      : widen(null, ctx.store.points.upTo(ctx.runId, rule.metric, step, Number.MAX_SAFE_INTEGER, true), step);
  const [lo, hi] = r ?? [Infinity, -Infinity];
  if (lo >= 0 && hi <= 1) return { value: rule.value, scaled: '' };
  return {
    value: lo + rule.value * (hi - lo),
    scaled: ` (${formatValue(rule.value)} of its range ${formatValue(lo)}..${formatValue(hi)})`,
  };
}
