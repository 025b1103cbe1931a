/** Which chat message shows which alerts, per target: what lets delivery edit a card when its alert changes. */
import type { Database } from 'better-sqlite3';
import { prepared } from './sqlite/prepared.ts';

export interface ChatMessageRow {
  id: number;
  target: string;
  ref: string;
  run_id: number;
  alert_ids: string;
  payload: string;
  delivery: string;
  posted_at: number;
}

/** Which chat message shows which alerts, per target. */
export class ChatMessages {
  constructor(private readonly db: Database) {}

  record(
    target: string,
    ref: string,
    m: { runId: number; alertIds: readonly number[]; payload: unknown; delivery: string },
    at: number,
  ): void {
    this.db.transaction(() => {
      const info = prepared(
        this.db,
        'INSERT OR IGNORE INTO chat_messages (target, ref, run_id, alert_ids, payload, delivery, posted_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(target, ref, m.runId, JSON.stringify(m.alertIds), JSON.stringify(m.payload), m.delivery, at);
      const id = info.changes > 0 ? Number(info.lastInsertRowid) : this.byRef(target, ref)!.id;
      const link = prepared(this.db, 'INSERT OR IGNORE INTO alert_messages (alert_id, message_id) VALUES (?, ?)');
      for (const a of m.alertIds) link.run(a, id);
    })();
  }

  /** What a posted message shows now: its notification with each alert's latest captured state. */
  setPayload(id: number, payload: unknown): void {
    prepared(this.db, 'UPDATE chat_messages SET payload = ? WHERE id = ?').run(JSON.stringify(payload), id);
  }

  /** The message already posted for this delivery (outbox row and part), if any. */
  byDelivery(target: string, delivery: string): ChatMessageRow | undefined {
    return prepared(this.db, 'SELECT * FROM chat_messages WHERE target = ? AND delivery = ?').get(target, delivery) as
      | ChatMessageRow
      | undefined;
  }

  byRef(target: string, ref: string): ChatMessageRow | undefined {
    return prepared(this.db, 'SELECT * FROM chat_messages WHERE target = ? AND ref = ?').get(target, ref) as
      | ChatMessageRow
      | undefined;
  }

  /** The messages of every target that show this alert, newest first. */
  showing(alertId: number): ChatMessageRow[] {
    return prepared(
      this.db,
      `SELECT m.* FROM chat_messages m JOIN alert_messages a ON a.message_id = m.id
         WHERE a.alert_id = ? ORDER BY m.id DESC`,
    ).all(alertId) as ChatMessageRow[];
  }

  /** The messages of `target` that show this alert, newest first. */
  ofAlert(alertId: number, target: string): ChatMessageRow[] {
    return prepared(
      this.db,
      `SELECT m.* FROM chat_messages m JOIN alert_messages a ON a.message_id = m.id
         WHERE a.alert_id = ? AND m.target = ? ORDER BY m.id DESC`,
    ).all(alertId, target) as ChatMessageRow[];
  }
}
