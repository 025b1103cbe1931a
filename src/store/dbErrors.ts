/** Database problems (damaged, read-only, full, busy, out of reach) in one line each: what is wrong and what to do. */
import { UserError } from '../lib/errors.ts';

export type DatabaseProblem = 'damaged' | 'readonly' | 'full' | 'busy' | 'io' | 'outdated' | 'in use';

/** A database problem in one line: what is wrong and what to do. */
export class DatabaseError extends UserError {
  constructor(
    readonly problem: DatabaseProblem,
    message: string,
  ) {
    super(message);
  }
}

/** better-sqlite3's extended result code (`SQLITE_READONLY_DIRECTORY`, ...), or undefined for other errors. */
export function sqliteCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/**
 * An error of PostgreSQL as a watcher's live store (postgres/pgLiveStore.ts) throws it: the server's SQLSTATE `code`
 * (`23505`, `57P01`, ...) or, for a connection that could not be made or was lost, Node's (`ECONNREFUSED`).
 */
export class PostgresError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'PostgresError';
  }
}

/** Whether `err` is the database's (SQLite's or PostgreSQL's) rather than a rule's or a file's: the engine and the
 * ingestor hand such errors to their caller instead of skipping a rule or a file. */
export function isDatabaseError(err: unknown): boolean {
  return sqliteCode(err) !== undefined || err instanceof PostgresError;
}

const pgCode = (err: unknown): string | undefined => (err instanceof PostgresError ? err.code : undefined);

// PostgreSQL: disk_full; a serialization failure, a deadlock or a lock not available are worth another try
export const isDiskFull = (err: unknown): boolean =>
  sqliteCode(err)?.startsWith('SQLITE_FULL') === true || pgCode(err) === '53100';
export const isBusy = (err: unknown): boolean =>
  /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(err) ?? '') || /^(40001|40P01|55P03)$/.test(pgCode(err) ?? '');
/** Whether an error code says the connection to PostgreSQL could not be made or has ended: the server's (class 08, a
 * connection exception; 57P01-57P03: terminated by an administrator, shutting down, cannot connect now) or the
 * network's (Node's E* codes). */
export const endsConnection = (code: string): boolean => /^(08|57P0[1-3]$)/.test(code) || /^E[A-Z]+$/.test(code);
/** PostgreSQL could not be reached, or ended the session: nothing of what was being written stayed, and the same
 * work may succeed once it is back. */
export const isUnreachable = (err: unknown): boolean => endsConnection(pgCode(err) ?? '');

const FS_DENIED = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR']);

/** The DatabaseError for an error of SQLite (or of creating the database's folder); undefined for others. */
export function databaseError(err: unknown, path: string): DatabaseError | undefined {
  if (err instanceof DatabaseError) return err;
  const msg = (err as Error | null)?.message ?? String(err);
  const code = sqliteCode(err);
  if (code === undefined) {
    const fsCode = (err as NodeJS.ErrnoException | null)?.code;
    if (fsCode === undefined || !FS_DENIED.has(fsCode)) return undefined;
    return new DatabaseError('readonly', `cannot create the database ${path} (${fsCode}): pass a writable --db path`);
  }
  if (/^SQLITE_(NOTADB|CORRUPT)/.test(code)) {
    return new DatabaseError(
      'damaged',
      `${path} is not an rlwatch database or is damaged (${msg}): move it aside; \`rlwatch backfill\` of your runs ` +
        'builds a new one from the logs',
    );
  }
  if (/^SQLITE_(READONLY|CANTOPEN|PERM|AUTH)/.test(code)) {
    return new DatabaseError(
      'readonly',
      `cannot write ${path} (${msg}): rlwatch needs write access to the file and its folder (SQLite keeps ` +
        '-wal and -shm files beside it); fix the permissions or pass another --db. Reading commands ' +
        '(runs, alerts, reward history) still work on a read-only database',
    );
  }
  if (isDiskFull(err)) {
    return new DatabaseError('full', `the database's disk is full (${path}): free some space and run it again`);
  }
  if (isBusy(err)) {
    return new DatabaseError('busy', `${path} stayed busy (${msg}): another process held it too long; try again`);
  }
  if (code.startsWith('SQLITE_IOERR')) {
    return new DatabaseError('io', `cannot read or write ${path} (${msg}): check the disk it is on`);
  }
  return undefined;
}
