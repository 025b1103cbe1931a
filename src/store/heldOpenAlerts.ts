import type { AlertRow } from './alerts.ts';

/**
 * The open (pending or firing) alerts of the runs a process evaluates, per run, in id order, exactly as in the
 * database: every rule's lifecycle looks its alert up after every batch. Kept exact by the store that holds them: a
 * row it creates is added (`created`), a change to one drops its run's list (`changed`: a firing, resolution, ack or
 * announcement, rare next to the evaluations that read them), and a rollback, or a write by another process that
 * may have changed one, drops them all (`forget`).
 */
export class HeldOpenAlerts {
  private readonly runs = new Map<number, AlertRow[]>();
  /** the run of each alert held: a change finds its run without a look through every run's list */
  private readonly runOf = new Map<number, number>();

  /** The run's open alerts: held, or `read` and held. A copy: the caller may change the list. */
  of(runId: number, read: () => AlertRow[]): AlertRow[] {
    let rows = this.runs.get(runId);
    if (!rows) {
      this.runs.set(runId, (rows = read()));
      for (const a of rows) this.runOf.set(a.id, runId);
    }
    return [...rows];
  }

  /** An alert was created: the newest id, so the run's list stays in id order. */
  created(row: AlertRow): void {
    const rows = this.runs.get(row.run_id);
    if (!rows) return;
    rows.push(row);
    this.runOf.set(row.id, row.run_id);
  }

  /** The alert changed: the open alerts held for its run (if it is one of them) are read again when next asked. */
  changed(id: number): void {
    const runId = this.runOf.get(id);
    if (runId !== undefined) this.forget(runId);
  }

  forget(runId?: number): void {
    if (runId === undefined) {
      this.runs.clear();
      this.runOf.clear();
      return;
    }
    for (const a of this.runs.get(runId) ?? []) this.runOf.delete(a.id);
    this.runs.delete(runId);
  }
}
