/** The saturation rule kind: a reward component pinned at its highest value with no spread, which teaches nothing. */
import { formatValue } from '../lib/numbers.ts';
import { resume, StepLookup, type RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { SaturationRule } from './rules.ts';

const EPSILON = 1e-9;

/**
 * Saturation: a reward component at the highest value it has reached (above 0) with a within-batch std of
 * 0: every completion gets the same full score from it, so it teaches nothing (and often means it is being
 * gamed). A component pinned at 0 is the other failure (`zero_signal_too_hard`), not this one.
 */
export function evaluateSaturation(ctx: RunContext, rule: SaturationRule): void {
  const { store, runId } = ctx;
  const logged = ctx.metrics();
  for (const metric of ctx.expand(rule.metrics)) {
    if (!logged.includes(`${metric}/std`)) continue;
    const { cursor, from, fresh } = resume(ctx, rule.id, metric);
    if (fresh.length === 0) continue;
    const std = new StepLookup(ctx.after(`${metric}/std`, from));
    let max = Number(cursor?.state.max ?? -Infinity);
    let streak = Number(cursor?.state.streak ?? 0);
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric }, ctx.now, {
      quietFor: rule.recoverFor,
      quiet: Number(cursor?.state.quiet ?? 0),
    });
    for (const p of fresh) {
      max = Math.max(max, p.value);
      const s = std.get(p.step);
      if (s === undefined || !Number.isFinite(s)) continue;
      const details = { value: p.value, std: s, max };
      if (p.value > 0 && p.value >= max - EPSILON && Math.abs(s) <= EPSILON) {
        const n = ++streak;
        lc.hold(p.step, n, rule.for, rule.severity, () => ({
          summary: `${metric} saturated at its max ${formatValue(p.value)} with std 0 for ${n} steps: no signal left`,
          details,
        }));
      } else {
        streak = 0;
        if (!lc.wouldChange('ok', true)) continue;
        const describe = () => ({
          summary: `${metric} ${formatValue(p.value)} ± ${formatValue(s)}: varies again`,
          details,
        });
        lc.apply(p.step, { kind: 'ok', recovered: true, describe });
      }
    }
    store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, { max, streak, quiet: lc.quiet });
  }
}
