/** One writer per SQLite database, by an OS file lock the kernel drops when the process ends. */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SQLITE_ADDON } from './sqliteAddon.ts';

/**
 * One writer per database. The lock is an OS file lock: SQLite's fcntl lock on `<db>.lock`, held by an exclusive
 * transaction that stays open while the process lives. The kernel drops it when the process ends, however it
 * ends (SIGKILL, OOM, a power cut of the process), so a dead `start` never blocks the next one, and no pid check
 * or heartbeat can be fooled by a reused pid or a process paused under load. Who holds it is written in the
 * database itself (`writer`), for the message the second process gets.
 */
export class WriterLock {
  private constructor(private readonly conn: Database.Database) {}

  /** The lock of the database at `dbPath`, or null when another process (or connection) holds it. */
  static tryAcquire(dbPath: string): WriterLock | null {
    mkdirSync(dirname(dbPath), { recursive: true });
    const conn = new Database(`${dbPath}.lock`, { timeout: 0, nativeBinding: SQLITE_ADDON });
    try {
      conn.exec('BEGIN EXCLUSIVE');
    } catch (err) {
      conn.close();
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return null;
      throw err;
    }
    return new WriterLock(conn);
  }

  /** Closing the connection rolls back the (empty) transaction and drops the lock. */
  release(): void {
    if (this.conn.open) this.conn.close();
  }
}
