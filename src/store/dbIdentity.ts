/** Notices when the SQLite file a long-lived writer opened is deleted or replaced, which SQLite would not say. */
import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';

/** How often `start` looks that its database is still the file it opened: two stat calls. */
export const IDENTITY_CHECK_MS = 2000;

const identity = (path: string): string | null => {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
};

/**
 * Calls `onLost` once, with one line saying what happened, when the database file a long-lived writer opened is
 * deleted or replaced, or (in WAL mode) its -wal is: SQLite goes on writing into the unlinked files, so acks, mutes
 * and the outbox would be lost without a word, and a -wal deleted alone leaves the database malformed. SQLite keeps
 * the -wal, and its inode, while a connection has the database open.
 */
export function watchDbIdentity(
  db: Database.Database,
  onLost: (line: string) => void,
  everyMs = IDENTITY_CHECK_MS,
): { stop(): void } {
  if (db.memory) return { stop: () => {} };
  const path = db.name;
  const wal = db.pragma('journal_mode', { simple: true }) === 'wal' ? `${path}-wal` : null;
  const files = [path, ...(wal ? [wal] : [])].map((p) => ({ path: p, was: identity(p) }));
  const timer = setInterval(() => {
    for (const f of files) {
      const now = identity(f.path);
      if (now === f.was) continue;
      clearInterval(timer);
      const how = now === null ? 'deleted' : 'replaced';
      onLost(
        f.path === path
          ? `the database ${path} was ${how} while rlwatch ran: stopping, since what it wrote from now on would be ` +
              'lost (restore the database, or `rlwatch backfill` your runs into a new one, then start again)'
          : `the database's write-ahead log ${f.path} was ${how} while rlwatch ran: stopping, since what it wrote ` +
              'from now on would be lost (start it again)',
      );
      return;
    }
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
