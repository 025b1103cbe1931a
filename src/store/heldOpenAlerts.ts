/**
 * The open alerts of the runs a process evaluates, held in memory and kept exact by the store's own writes, so that
 * a rule's lookup after every batch needs no query.
 */
import type { AlertChange, AlertRow } from './alerts.ts';

/**
 * The open (pending or firing) alerts of the runs a process evaluates, per run, in id order, exactly as in the
 * database: every rule's lifecycle looks its alert up after every batch. Kept exact by the store that holds them: a
 * row it creates is added (`created`); its firing, escalation and announcement change the row as the store's UPDATE
 * does (`fired`, `escalated`, `notified`), a resolution or a drop takes it out (`closed`), any other change drops its
 * run's list (`changed`: an ack); a rollback, or a write by another process that may have changed one, drops them all
 * (`forget`). Changed rows are new objects: a row handed out earlier stays as it was read.
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

  /** The alert fired: as `UPDATE alerts SET state = 'firing', fired_step, fired_at, severity, summary, details`.
   * Returns its row as changed, if its run's list is held. */
  fired(id: number, c: AlertChange): AlertRow | undefined {
    return this.update(id, (a) => ({
      ...a,
      state: 'firing',
      fired_step: c.step,
      fired_at: c.at,
      severity: c.severity,
      summary: c.summary,
      details: JSON.stringify(c.details),
    }));
  }

  /** The firing alert escalated: as `UPDATE alerts SET severity, summary, details, fired_at, notified_state = NULL,
   * notified_at = NULL WHERE state = 'firing'`. Returns its row (changed if it fires), if its run's list is held. */
  escalated(id: number, c: AlertChange): AlertRow | undefined {
    return this.update(id, (a) =>
      a.state !== 'firing'
        ? a
        : {
            ...a,
            severity: c.severity,
            summary: c.summary,
            details: JSON.stringify(c.details),
            fired_at: c.at,
            notified_state: null,
            notified_at: null,
          },
    );
  }

  /** The alert's announcement was recorded: as `UPDATE alerts SET notified_state, notified_at`. */
  notified(id: number, state: 'firing' | 'resolved', at: number): void {
    this.update(id, (a) => ({ ...a, notified_state: state, notified_at: at }));
  }

  /** The alert resolved, or was dropped: it is no longer open. Returns its run, if its run's list is held. */
  closed(id: number): number | undefined {
    const runId = this.runOf.get(id);
    if (runId === undefined) return undefined;
    this.runOf.delete(id);
    const rows = this.runs.get(runId)!;
    rows.splice(
      rows.findIndex((a) => a.id === id),
      1,
    );
    return runId;
  }

  /** The alert changed: the open alerts held for its run (if it is one of them) are read again when next asked. */
  changed(id: number): void {
    const runId = this.runOf.get(id);
    if (runId !== undefined) this.forget(runId);
  }

  private update(id: number, change: (a: AlertRow) => AlertRow): AlertRow | undefined {
    const runId = this.runOf.get(id);
    if (runId === undefined) return undefined;
    const rows = this.runs.get(runId)!;
    const k = rows.findIndex((a) => a.id === id);
    return (rows[k] = change(rows[k]!));
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
