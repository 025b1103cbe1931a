/** The trainer_warning rule kind: a warning line a trainer printed opens one incident per kind of warning. */
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { TrainerWarningRule } from './rules.ts';

/** Alert keys of trainer warnings: one per kind (`log:warning:KL divergence is negative`). */
const PREFIX = 'log:warning:';
/** where the rule keeps the last warning event it has read */
const CURSOR = 'log:warnings';

/**
 * trainer_warning: a warning line the trainer printed (TRL's negative KL, verl DAPO's "Generated too many",
 * NCCL WARN, CUDA warnings) opens one incident per kind, carrying the line; more of the same kind join it.
 * It resolves once the run has gone `quietSteps` steps without that kind.
 */
export function evaluateTrainerWarning(ctx: RunContext, rule: TrainerWarningRule): void {
  const { store, runId, run } = ctx;
  if (!run) return;
  const cursor = store.alerts.cursor(runId, rule.id, CURSOR);
  let seen = Number(cursor?.state.seen ?? 0);
  const lastSeen = new Map<string, number>();
  for (const e of store.events.after(runId, ['warning'], seen)) {
    seen = e.id;
    const key = `${PREFIX}${e.title}`;
    lastSeen.set(key, e.step);
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: key }, ctx.now);
    if (lc.state !== null) continue;
    lc.apply(e.step, {
      kind: 'bad',
      firing: true,
      severity: rule.severity,
      describe: () => ({
        summary: e.title,
        details: { event: e.id, evidence: { title: 'the line the trainer printed', lines: [e.text] } },
      }),
    });
  }
  for (const [key, step] of lastSeen) store.alerts.saveCursor(runId, rule.id, key, step, {});
  const now = run.last_step ?? 0;
  for (const a of ctx.alerts.firing()) {
    if (a.rule !== rule.id || !a.metric.startsWith(PREFIX)) continue;
    const last = store.alerts.cursor(runId, rule.id, a.metric)?.step ?? a.started_step;
    if (now - last < rule.quietSteps) continue;
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: a.metric }, ctx.now);
    lc.apply(now, {
      kind: 'ok',
      recovered: true,
      describe: () => ({ summary: `not seen for ${now - last} steps`, details: {} }),
    });
  }
  store.alerts.saveCursor(runId, rule.id, CURSOR, now, { seen });
}
