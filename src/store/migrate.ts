import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';

/** `migrations/NNN_name.sql`, applied in order, each in its own transaction, recorded in `schema_migrations`. */
export function migrate(db: Database, dir: string): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const done = new Set(
    db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[],
  );
  const applied: number[] = [];
  const files = readdirSync(dir)
    .map((name) => ({ name, m: /^(\d+)_.*\.sql$/.exec(name) }))
    .filter((f): f is { name: string; m: RegExpExecArray } => f.m !== null)
    .map((f) => ({ name: f.name, version: Number(f.m[1]) }))
    .sort((a, b) => a.version - b.version);
  for (const { name, version } of files) {
    if (done.has(version)) continue;
    const sql = readFileSync(join(dir, name), 'utf8');
    db.transaction(() => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        version,
        name,
        Date.now(),
      );
    })();
    applied.push(version);
  }
  return applied;
}
