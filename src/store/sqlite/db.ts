/** Opens the SQLite file in WAL mode with its schema up to date, every problem at open a DatabaseError. */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MIGRATIONS_DIR } from '../../lib/paths.ts';
import { DatabaseError, databaseError, isBusy } from '../dbErrors.ts';
import { migrate, pendingMigrations } from './migrate.ts';
import { SQLITE_ADDON } from './sqliteAddon.ts';

// better-sqlite3 reads this once, at its first open: `file:` URIs let a read-only open say `immutable=1` (below).
process.env.SQLITE_USE_URI ??= '1';

export interface OpenOptions {
  /** open for reading only: nothing is written, so the schema must already be up to date */
  readOnly?: boolean;
}

/**
 * Opens (creating if needed) the SQLite file in WAL mode and brings its schema up to date; read-only, checks
 * that it is. Every SQLite problem at open (a read-only path, a file that is not a database, a full disk)
 * becomes a DatabaseError saying what is wrong and what to do.
 */
export function openDb(path: string, opts: OpenOptions = {}): Database.Database {
  // Several processes creating one database at once queue behind the one migrating it; on a loaded machine that
  // can outlast one busy timeout, and an open is rare enough to wait longer for.
  const deadline = Date.now() + OPEN_BUSY_MS;
  for (;;) {
    try {
      return tryOpen(path, opts);
    } catch (err) {
      const busy = err instanceof DatabaseError ? err.problem === 'busy' : isBusy(err);
      if (!busy || Date.now() >= deadline) throw err;
      Atomics.wait(PAUSE, 0, 0, 200);
    }
  }
}

/** How long an open keeps trying while another process holds the database (each try waits 5 s itself). */
const OPEN_BUSY_MS = 30_000;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function tryOpen(path: string, opts: OpenOptions): Database.Database {
  let db: Database.Database | undefined;
  try {
    if (path !== ':memory:' && !opts.readOnly) mkdirSync(dirname(path), { recursive: true });
    // a busy timeout from the first statement: switching a new file to WAL waits for another process creating it
    db = opts.readOnly ? openReadOnly(path) : new Database(path, { timeout: 5000, nativeBinding: SQLITE_ADDON });
    if (opts.readOnly) requireUpToDate(db, path);
    else {
      db.pragma('journal_mode = WAL');
      // NORMAL in WAL mode survives a killed process (not a power cut) and keeps commits cheap.
      db.pragma('synchronous = NORMAL');
      migrate(db, MIGRATIONS_DIR);
    }
    db.pragma('foreign_keys = ON');
    return db;
  } catch (err) {
    db?.close();
    throw databaseError(err, path) ?? err;
  }
}

/**
 * A WAL database in a folder the reader cannot write cannot even be read (SQLite must create its -shm file).
 * With no -wal file there is no writer and nothing uncheckpointed: then it is opened as immutable, unlocked.
 */
function openReadOnly(path: string): Database.Database {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true, timeout: 5000, nativeBinding: SQLITE_ADDON });
    db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get(); // the -shm file is opened on the first read
    return db;
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (!/^SQLITE_(READONLY|CANTOPEN)/.test(code) || existsSync(`${path}-wal`)) throw err;
    return new Database(`${pathToFileURL(path).href}?immutable=1`, {
      readonly: true,
      fileMustExist: true,
      nativeBinding: SQLITE_ADDON,
    });
  }
}

function requireUpToDate(db: Database.Database, path: string): void {
  const pending = pendingMigrations(db, MIGRATIONS_DIR);
  if (pending.length === 0) return;
  throw new DatabaseError(
    'outdated',
    `${path} is read-only and was written by an older rlwatch (schema changes ${pending.map((m) => m.version).join(', ')} ` +
      'not applied): run `rlwatch backfill` or `start` on it once with write access',
  );
}
