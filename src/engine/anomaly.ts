/** The anomaly rule kind: a record far from its recent past by a robust z-score (median and MAD), a spike. */
import { formatValue } from '../lib/numbers.ts';
import { resume, type RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { AnomalyRule } from './rules.ts';
import { median } from './stats.ts';

/** MAD × 1.4826 estimates the standard deviation of normal data. */
const MAD_TO_SD = 1.4826;

/** 1.4826 × the MAD of a window; when more than half the values sit on the median (MAD 0, as in a series
 * that takes two values), the first non-zero absolute deviation above the middle rank instead: still robust
 * to the spikes in the window, unlike a mean. 0 only for a window of one value. */
function robustScale(values: readonly number[], med: number): number {
  const devs = values.map((v) => Math.abs(v - med)).sort((x, y) => x - y);
  for (let i = devs.length >> 1; i < devs.length; i++)
    if ((devs[i] as number) > 0) return MAD_TO_SD * (devs[i] as number);
  return 0;
}

/**
 * Anomaly: a spike against the run's recent past. The robust z-score (x - median) / (1.4826 · MAD) of each
 * record over the `window` records before it; nothing is judged before `warmup` records. A spike needs
 * `recoverFor` calm records in a row to resolve (its cooldown): spikes a few steps apart are one incident.
 */
export function evaluateAnomaly(ctx: RunContext, rule: AnomalyRule): void {
  const { store, runId } = ctx;
  const metric = rule.metric;
  const { cursor, from, fresh } = resume(ctx, rule.id, metric);
  if (fresh.length === 0) return;
  const window = cursor ? store.points.upTo(runId, metric, from, rule.window, true).map((p) => p.value) : [];
  let streak = Number(cursor?.state.streak ?? 0);
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric }, ctx.now, {
    quietFor: rule.recoverFor,
    quiet: Number(cursor?.state.quiet ?? 0),
  });
  for (const p of fresh) {
    const judged = window.length >= rule.warmup;
    const med = judged ? median(window) : 0;
    const scale = judged ? robustScale(window, med) : 0;
    window.push(p.value);
    if (window.length > rule.window) window.shift();
    if (!judged) continue;
    const dev = p.value - med;
    const z = scale > 0 ? dev / scale : dev === 0 ? 0 : Math.sign(dev) * Infinity;
    const spike =
      Math.abs(dev) > rule.minDelta &&
      (rule.direction === 'up' ? z > rule.z : rule.direction === 'down' ? z < -rule.z : Math.abs(z) > rule.z);
    const details = { value: p.value, median: med, scale, z, window: rule.window };
    const zText = Number.isFinite(z) ? `${z >= 0 ? '+' : ''}${z.toFixed(1)}` : z > 0 ? '+∞' : '-∞';
    if (spike) {
      lc.hold(p.step, ++streak, rule.for, rule.severity, () => ({
        summary: `${metric} ${formatValue(p.value)}: robust z ${zText} against the median ${formatValue(med)} of the last ${rule.window}`,
        details,
      }));
    } else {
      streak = 0;
      const calm = Math.abs(z) <= rule.z / 2 || Math.abs(dev) <= rule.minDelta;
      if (!lc.wouldChange('ok', calm)) continue;
      lc.apply(p.step, {
        kind: 'ok',
        recovered: calm,
        describe: () => ({ summary: `${metric} ${formatValue(p.value)}: calm again (z ${zText})`, details }),
      });
    }
  }
  store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, { streak, quiet: lc.quiet });
}
