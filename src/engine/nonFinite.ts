import { formatValue, jsonValue } from '../render/numbers.ts';
import type { RunContext } from './evaluate.ts';
import { Lifecycle } from './lifecycle.ts';
import type { NonFiniteRule } from './rules.ts';

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * non_finite: the first NaN or ±Inf of a watched metric fires at once, saying the last finite value and
 * its step; the alert resolves after `recoverFor` finite records. One alert per metric (a NaN loss and a
 * NaN grad_norm at the same step go out together, as one notification).
 */
export function evaluateNonFinite(ctx: RunContext, rule: NonFiniteRule): void {
  const { store, runId } = ctx;
  for (const metric of rule.metrics) {
    const cursor = store.alerts.cursor(runId, rule.id, metric);
    const fresh = ctx.after(metric, cursor?.step ?? -1);
    if (fresh.length === 0) continue;
    let lastFinite = (cursor?.state.lastFinite as number | null | undefined) ?? null;
    let lastFiniteStep = (cursor?.state.lastFiniteStep as number | null | undefined) ?? null;
    let finiteRun = Number(cursor?.state.finiteRun ?? 0);
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric }, ctx.now);
    for (const p of fresh) {
      if (!Number.isFinite(p.value)) {
        finiteRun = 0;
        const [value, last, lastStep] = [p.value, lastFinite, lastFiniteStep];
        lc.hold(p.step, 1, 1, rule.severity, () => ({
          summary:
            `${metric} is ${formatValue(value)} at step ${p.step}` +
            (last === null ? ' (never finite before)' : ` (last finite ${formatValue(last)} at step ${lastStep})`),
          details: { value: jsonValue(value), lastFinite: last, lastFiniteStep: lastStep },
        }));
      } else {
        finiteRun++;
        lastFinite = p.value;
        lastFiniteStep = p.step;
        const recovered = finiteRun >= rule.recoverFor;
        if (!lc.wouldChange('ok', recovered)) continue;
        const [n, value] = [finiteRun, p.value];
        lc.apply(p.step, {
          kind: 'ok',
          recovered,
          describe: () => ({
            summary: `${metric} finite again for ${plural(n, 'step')} (${formatValue(value)})`,
            details: { value },
          }),
        });
      }
    }
    store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, { lastFinite, lastFiniteStep, finiteRun });
  }
}
