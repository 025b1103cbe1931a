/**
 * SQLite's schema changes: `migrations/NNN_name.sql` applied in order, each once, however many processes
 * open a new database.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';

interface Migration {
  name: string;
  version: number;
}

function migrationFiles(dir: string): Migration[] {
  return readdirSync(dir)
    .map((name) => ({ name, m: /^(\d+)_.*\.sql$/.exec(name) }))
    .filter((f): f is { name: string; m: RegExpExecArray } => f.m !== null)
    .map((f) => ({ name: f.name, version: Number(f.m[1]) }))
    .sort((a, b) => a.version - b.version);
}

function appliedVersions(db: Database): Set<number> {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) return new Set();
  return new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
}

/** The migrations of `dir` not yet applied to `db` (read only: nothing is written). */
export function pendingMigrations(db: Database, dir: string): Migration[] {
  const done = appliedVersions(db);
  return migrationFiles(dir).filter((m) => !done.has(m.version));
}

/**
 * `migrations/NNN_name.sql`, applied in order, recorded in `schema_migrations`. All pending ones run in one
 * exclusive transaction that re-reads what is applied once it holds the lock: several processes opening a new
 * database at once apply each migration once (a second one finds them done). An up-to-date database is not
 * locked at all, so readers beside a running `start` open it freely.
 */
export function migrate(db: Database, dir: string): number[] {
  if (pendingMigrations(db, dir).length === 0) return [];
  return db
    .transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
      const applied: number[] = [];
      for (const { name, version } of pendingMigrations(db, dir)) {
        db.exec(readFileSync(join(dir, name), 'utf8'));
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          version,
          name,
          Date.now(),
        );
        applied.push(version);
      }
      return applied;
    })
    .exclusive();
}
