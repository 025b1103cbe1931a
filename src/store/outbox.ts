/** The outbox on SQLite: notifications written with the alert changes, claimed, delivered, retried or set aside. */
import type { Database } from 'better-sqlite3';
import { prepared } from './sqlite/prepared.ts';

export interface OutboxRow {
  id: number;
  created_at: number;
  run_id: number;
  target: string;
  payload: string;
  attempts: number;
  next_attempt_at: number | null;
}

/** A row not delivered yet: waiting its turn, or set aside as undeliverable (`dead_at`). */
export interface OpenOutboxRow extends OutboxRow {
  last_error: string | null;
  dead_at: number | null;
  dead_reason: string | null;
}

const COLUMNS = 'id, created_at, run_id, target, payload, attempts, next_attempt_at';

/** The target of a platform-neutral row: what the engine writes (one row per notification), routed at delivery by the
 * one process that delivers (`Dispatcher`'s `route`), which writes a row per destination from it. It needs no chat
 * settings to write: a watcher on another host queues alerts with the database URL alone. No platform is named
 * `route`, so no delivery lane claims it as its own. */
export const ROUTED = 'route:*';

/** The urgency of an outbox row holding a critical item (migrations 019 and pg/004: critical 2, warning 1, else 0). */
export const CRITICAL_URGENCY = 2;

/** The urgency of an item of `severity`, as those migrations rank a row by its most severe item. */
export function urgencyOf(severity: string): number {
  return severity === 'critical' ? CRITICAL_URGENCY : severity === 'warning' ? 1 : 0;
}

/** A claimed row with the urgency its run was handed out with (the most severe of its open rows). */
export type RankedRow = OutboxRow & { rank: number };

/** Claimed rows in the order they were handed out (`StoreContract.outbox.claim`), each leased `until`. */
export function handOutOrder(
  rows: RankedRow[],
  until: number,
): Array<OutboxRow & { urgency: number; leaseUntil: number }> {
  return rows
    .sort((a, b) => b.rank - a.rank || a.id - b.id)
    .map(({ rank, ...r }) => ({ ...r, urgency: rank, leaseUntil: until }));
}

/** Items a row gathers at most by merging (`Outbox.add`): as many cards as one chat message holds. */
export const ROW_ITEMS_MAX = 5;
/** Items a row of edits only (resolutions, acks, mutes) gathers at most: they post nothing, and the edits of one
 * message waiting in several rows go out as one, of the last state (src/notify/delivery.ts). */
export const EDIT_ITEMS_MAX = 2000;

/** Whether an item only changes cards already posted (or waiting to be). */
const edits = (i: { kind?: unknown }): boolean => i.kind === 'resolved' || i.kind === 'update';

/** What of a payload a waiting row may take in, or add to the rows that may (`Outbox.add`): the payload's JSON
 * (`text`), its items' JSON without the brackets, their alert ids, how many items a row may hold before them
 * (`room`), and, for items that are all edits, how many a row of edits only may hold before them (`editRoom`, else
 * -1); null for anything but a plain `{ run, items }` notification (a report, a foreign shape). Such a payload's
 * JSON ends with its items (`]}`), where more are appended; they are cut from the one JSON text. */
export function mergeable(
  payload: unknown,
): { text: string; items: string; ids: string; room: number; editRoom: number } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const { run, items } = payload as { run?: unknown; items?: unknown };
  const keys = Object.keys(payload);
  if (keys.length !== 2 || keys[0] !== 'run' || keys[1] !== 'items' || typeof run !== 'string') return null;
  if (!Array.isArray(items) || items.length === 0) return null;
  const editRoom = items.every(edits) ? EDIT_ITEMS_MAX - items.length : -1;
  if (items.length >= ROW_ITEMS_MAX && editRoom < 0) return null;
  const ids = items.map((i: { alertId?: unknown }) => i.alertId);
  if (!ids.every((id) => Number.isSafeInteger(id))) return null;
  const text = JSON.stringify(payload);
  const head = `{"run":${JSON.stringify(run)},"items":[`.length;
  return { text, items: text.slice(head, -2), ids: JSON.stringify(ids), room: ROW_ITEMS_MAX - items.length, editRoom };
}

/**
 * Appends the items to the run's newest waiting row of the target when it may take them (`merge_alerts`, migration
 * 020: never claimed): they fit ROW_ITEMS_MAX and none of their alerts is among its own (a card and its resolution
 * stay two rows, in order); or they and the row are all edits, together at most EDIT_ITEMS_MAX (an alert's later
 * state comes after its earlier one, and delivery shows the last).
 */
const MERGE = `UPDATE outbox SET payload = substr(payload, 1, length(payload) - 2) || ',' || :items || ']}',
    merge_alerts = substr(merge_alerts, 1, length(merge_alerts) - 1) || ',' || substr(:ids, 2)
  WHERE id = (SELECT max(id) FROM outbox WHERE target = :target AND run_id = :run AND done_at IS NULL
              AND dead_at IS NULL)
    AND merge_alerts IS NOT NULL
    AND ((json_array_length(merge_alerts) <= :room
          AND NOT EXISTS (SELECT 1 FROM json_each(merge_alerts) WHERE value IN (SELECT value FROM json_each(:ids))))
      OR (json_array_length(merge_alerts) <= :editRoom
          AND NOT EXISTS (SELECT 1 FROM json_each(payload, '$.items')
                          WHERE json_extract(value, '$.kind') NOT IN ('resolved', 'update'))))`;

/** Notifications waiting for delivery, per target, in the order they were written. */
export class Outbox {
  constructor(private readonly db: Database) {}

  /**
   * Queues `payload` for `target`. Under a backlog (a slow or absent platform) a run's new items join its newest
   * waiting row instead (MERGE, as Alertmanager groups what waits to be sent): one message rather than one per batch,
   * in the same order, and a critical item rides with the row ahead of it instead of waiting for its delivery.
   */
  add(runId: number, target: string, payload: unknown, at: number): void {
    const m = mergeable(payload);
    const merge = m && { items: m.items, ids: m.ids, target, run: runId, room: m.room, editRoom: m.editRoom };
    if (merge && prepared(this.db, MERGE).run(merge).changes === 1) return;
    prepared(
      this.db,
      'INSERT INTO outbox (created_at, run_id, target, payload, merge_alerts) VALUES (?, ?, ?, ?, ?)',
    ).run(at, runId, target, m?.text ?? JSON.stringify(payload), m?.ids ?? null);
  }

  /** The rows of a target still to deliver, oldest first; set-aside rows are not among them. */
  pending(target: string, limit = 50): OutboxRow[] {
    return prepared(
      this.db,
      `SELECT ${COLUMNS} FROM outbox WHERE target = ? AND done_at IS NULL AND dead_at IS NULL ORDER BY id LIMIT ?`,
    ).all(target, limit) as OutboxRow[];
  }

  /** Every row not delivered, of every target: pending and set aside, oldest first. */
  open(): OpenOutboxRow[] {
    return prepared(
      this.db,
      `SELECT ${COLUMNS}, last_error, dead_at, dead_reason FROM outbox WHERE done_at IS NULL ORDER BY id`,
    ).all() as OpenOutboxRow[];
  }

  done(id: number, at: number): void {
    prepared(this.db, 'UPDATE outbox SET done_at = ? WHERE id = ?').run(at, id);
  }

  /** A failed try: counted, with the error, and when the row may be tried again. */
  failed(id: number, error: string, nextAttemptAt: number | null = null): void {
    prepared(
      this.db,
      'UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?',
    ).run(error, nextAttemptAt, id);
  }

  /** A try the target refused for good: counted, and set aside so that the rows after it go out. */
  setAside(id: number, reason: string, at: number): void {
    prepared(
      this.db,
      'UPDATE outbox SET attempts = attempts + 1, last_error = ?, dead_at = ?, dead_reason = ? WHERE id = ?',
    ).run(reason, at, reason, id);
  }

  /** Puts a set-aside row back in line, to be tried at once; false when `id` is no set-aside row. */
  requeue(id: number): boolean {
    return (
      prepared(
        this.db,
        `UPDATE outbox SET dead_at = NULL, dead_reason = NULL, next_attempt_at = NULL
           WHERE id = ? AND dead_at IS NOT NULL AND done_at IS NULL`,
      ).run(id).changes === 1
    );
  }

  /** The target's platform is back: its waiting rows may be tried now rather than after their backoff. */
  clearWait(target: string): void {
    prepared(
      this.db,
      'UPDATE outbox SET next_attempt_at = NULL WHERE target = ? AND done_at IS NULL AND next_attempt_at IS NOT NULL',
    ).run(target);
  }
}
