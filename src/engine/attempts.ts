/**
 * Restarts: the `restart` rule kind, and the rewind of alerts and rule cursors when a job logs earlier steps again,
 * so that a new attempt's values are judged afresh.
 */
import type { AlertRow } from '../store/alerts.ts';
import type { AttemptRow } from '../store/attempts.ts';
import type { LiveStore } from '../store/live.ts';
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { RestartRule } from './rules.ts';

/**
 * A restarted job logs its steps again from an earlier step (the store records each attempt). Before the run's
 * rules see the new attempt's steps: the alerts still open belong to the attempt that ended (resolved, or
 * dropped while pending), and every rule cursor at or past the step it resumed at goes back there, with its
 * carried state (streaks) cleared, so that the new attempt's values are evaluated as they arrive.
 */
export function rewindRestarts(
  store: LiveStore,
  runId: number,
  now: () => number,
  attempts: readonly AttemptRow[],
): void {
  for (const a of attempts) {
    if (a.rewound) continue;
    const ended = attempts.find((p) => p.attempt === a.attempt - 1);
    const step = ended?.last_step ?? a.resumed_step;
    const summary = `attempt ${a.attempt - 1} ended at step ${step}: the job restarted at step ${a.resumed_step}`;
    const details = { attempt: a.attempt, resumedStep: a.resumed_step };
    for (const alert of store.alerts.openOf(runId)) {
      if (alert.state === 'pending') store.alerts.drop(alert.id);
      else store.alerts.resolve(alert.id, { step, at: now(), severity: alert.severity, summary, details });
    }
    store.alerts.rewindCursors(runId, a.resumed_step);
    store.attempts.markRewound(runId, a.attempt);
  }
}

/** ` (attempt 2, resumed at step 0)` for an alert raised after the job restarted; empty otherwise. */
export function attemptNote(store: LiveStore, alert: AlertRow): string {
  const during = store.attempts
    .list(alert.run_id)
    .filter((t) => t.at <= alert.started_at)
    .pop();
  return during && during.attempt > 1 ? ` (attempt ${during.attempt}, resumed at step ${during.resumed_step})` : '';
}

/** Where the restart rule keeps the last attempt it told of: before every step, so that no rewind clears it. */
const TOLD_AT = -1;

/**
 * restart: the run's newest attempt, once, as an info alert (said once, never repeated): "the job restarted at
 * step 40 (attempt 2; attempt 1 ended at step 100)". The next restart ends it with the run's other open alerts.
 */
export function evaluateRestart(ctx: RunContext, rule: RestartRule): void {
  const { store, runId } = ctx;
  const attempts = store.attempts.list(runId);
  const latest = attempts[attempts.length - 1];
  const cursor = store.alerts.cursor(runId, rule.id, 'attempt');
  if (!latest || latest.attempt <= Number(cursor?.state.attempt ?? 1)) return;
  const ended = attempts.find((p) => p.attempt === latest.attempt - 1);
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: 'attempt' }, ctx.now);
  const was = ended ? `; attempt ${ended.attempt} ended at step ${ended.last_step}` : '';
  lc.apply(latest.resumed_step, {
    kind: 'bad',
    firing: true,
    severity: rule.severity,
    describe: () => ({
      summary: `the job restarted at step ${latest.resumed_step} (attempt ${latest.attempt}${was})`,
      details: {
        once: true,
        attempt: latest.attempt,
        resumedStep: latest.resumed_step,
        endedStep: ended?.last_step ?? null,
      },
    }),
  });
  store.alerts.saveCursor(runId, rule.id, 'attempt', TOLD_AT, { attempt: latest.attempt });
}
