import type { AlertRow } from '../store/alerts.ts';
import type { AttemptRow } from '../store/attempts.ts';
import type { LiveStore } from '../store/live.ts';

/**
 * A restarted job logs its steps again from an earlier step (the store records each attempt). Before the run's
 * rules see the new attempt's steps: the alerts still open belong to the attempt that ended (resolved, or
 * dropped while pending), and every rule cursor at or past the step it resumed at goes back there, with its
 * carried state (streaks) cleared, so that the new attempt's values are evaluated as they arrive.
 */
export function rewindRestarts(store: LiveStore, runId: number, now: () => number, attempts: readonly AttemptRow[]): void {
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
