/** The files rlwatch looked at and could not read, so that they are reported rather than silently ignored. */
import type { Database } from 'better-sqlite3';
import { prepared } from './sqlite/prepared.ts';

/** A file that looks like a log but that no format claims (yet). */
export interface UnreadRow {
  path: string;
  run: string;
  run_dir: string;
  rel_path: string;
  reason: string;
  size: number;
  seen_at: number;
  /** PostgreSQL only: the scope (host prefix) of the watcher that saw it */
  scope?: string;
}

/** The files rlwatch looked at and could not read, so that they are reported rather than silently ignored. */
export class Unread {
  constructor(private readonly db: Database) {}

  note(row: UnreadRow): void {
    prepared(
      this.db,
      `INSERT INTO unread_files (path, run, run_dir, rel_path, reason, size, seen_at)
         VALUES (:path, :run, :run_dir, :rel_path, :reason, :size, :seen_at)
         ON CONFLICT (path) DO UPDATE SET run = excluded.run, run_dir = excluded.run_dir,
           rel_path = excluded.rel_path, reason = excluded.reason, size = excluded.size, seen_at = excluded.seen_at`,
    ).run(row);
  }

  /** The file was recognised after all (or is gone). */
  forget(path: string): void {
    prepared(this.db, 'DELETE FROM unread_files WHERE path = ?').run(path);
  }

  list(run?: string): UnreadRow[] {
    const sql = 'SELECT * FROM unread_files' + (run === undefined ? '' : ' WHERE run = ?') + ' ORDER BY run, rel_path';
    const stmt = prepared(this.db, sql);
    return (run === undefined ? stmt.all() : stmt.all(run)) as UnreadRow[];
  }
}
