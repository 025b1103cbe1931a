import type { Database } from 'better-sqlite3';

export interface OutboxRow {
  id: number;
  created_at: number;
  run_id: number;
  target: string;
  payload: string;
  attempts: number;
  next_attempt_at: number | null;
}

/** Notifications waiting for delivery, per target, in the order they were written. */
export class Outbox {
  constructor(private readonly db: Database) {}

  add(runId: number, target: string, payload: unknown, at: number): void {
    this.db
      .prepare('INSERT INTO outbox (created_at, run_id, target, payload) VALUES (?, ?, ?, ?)')
      .run(at, runId, target, JSON.stringify(payload));
  }

  pending(target: string, limit = 50): OutboxRow[] {
    return this.db
      .prepare('SELECT id, created_at, run_id, target, payload, attempts, next_attempt_at FROM outbox WHERE target = ? AND done_at IS NULL ORDER BY id LIMIT ?')
      .all(target, limit) as OutboxRow[];
  }

  done(id: number, at: number): void {
    this.db.prepare('UPDATE outbox SET done_at = ? WHERE id = ?').run(at, id);
  }

  /** A failed try: counted, with the error, and when the row may be tried again. */
  failed(id: number, error: string, nextAttemptAt: number | null = null): void {
    this.db
      .prepare('UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?')
      .run(error, nextAttemptAt, id);
  }
}
