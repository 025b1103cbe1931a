/** The alerts a run's announcement may read on PostgreSQL, held from the batch's round trip, to spare a read. */
import { changeDetails, type AlertChange, type AlertRow } from '../alerts.ts';

/**
 * The alerts a run's announcement may read (`alerts.announceable` for any `firedSince`: the firing ones, the resolved
 * ones whose firing was announced, and those that fired and resolved unannounced), as a batch's round trip read them,
 * kept true to the watcher's own alert writes until they are used once or the transaction ends: the rules that fire
 * or resolve an alert, and the announcement that records it, then need no read of their own. Other processes write
 * only acks, which a held answer may miss by those few milliseconds as a read would.
 */
export class HeldAnnounceable {
  private readonly runs = new Map<number, AlertRow[]>();

  hold(runId: number, rows: AlertRow[]): void {
    this.runs.set(runId, rows);
  }

  /** `announceable(runId, firedSince)`, picked by its query's test from what is held, once; undefined when none is. */
  take(runId: number, firedSince: number): AlertRow[] | undefined {
    const rows = this.runs.get(runId);
    if (!rows) return undefined;
    this.runs.delete(runId);
    return rows.filter(
      (a) =>
        a.state === 'firing' ||
        a.notified_state === 'firing' ||
        (a.notified_state === null && a.fired_at !== null && a.fired_at >= firedSince),
    );
  }

  /** An alert created, fired or escalated: its row as written (as HeldOpenAlerts changed it). A row held already
   * keeps its acks as read. */
  fired(row: AlertRow): void {
    const rows = this.runs.get(row.run_id);
    if (!rows || row.state !== 'firing') return;
    const k = rows.findIndex((a) => a.id >= row.id);
    const held = rows[k];
    if (held?.id === row.id) {
      const { acked_by, acked_by_name, acked_at, ack_comment } = held;
      rows[k] = { ...row, acked_by, acked_by_name, acked_at, ack_comment };
    } else if (k === -1) rows.push(row);
    else rows.splice(k, 0, row);
  }

  notified(id: number, state: 'firing' | 'resolved', at: number): void {
    for (const rows of this.runs.values()) {
      const k = rows.findIndex((a) => a.id === id);
      if (k !== -1) rows[k] = { ...rows[k]!, notified_state: state, notified_at: at };
    }
  }

  /**
   * A resolution, as `PgStore.alerts.resolve` writes it: its state, step and time, and `resolved` merged into the
   * details. PostgreSQL prints the merged details as jsonb does (spaced, keys reordered): the same JSON value in
   * other text, and every reader parses it. An alert not held (it was not firing) has its run's answer read again.
   */
  resolved(runId: number, id: number, c: AlertChange): void {
    const rows = this.runs.get(runId);
    const k = rows?.findIndex((a) => a.id === id) ?? -1;
    if (k === -1) return void this.runs.delete(runId);
    const row = rows![k]!;
    const details = { ...(JSON.parse(row.details) as object), resolved: changeDetails(c) };
    rows![k] = {
      ...row,
      state: 'resolved',
      resolved_step: c.step,
      resolved_at: c.at,
      details: JSON.stringify(details),
    };
  }

  clear(): void {
    this.runs.clear();
  }
}
