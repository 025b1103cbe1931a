/** Prepared statements cached per connection and SQL text. */
import type { Database, Statement } from 'better-sqlite3';

const caches = new WeakMap<Database, Map<string, Statement>>();

/**
 * `db.prepare(sql)`, once per connection and SQL text: preparing costs more than running most of rlwatch's
 * statements (25% of the CPU of a live watch before this). The SQL texts are a fixed set (no values in them),
 * so the cache stays small. A reused statement comes back unplucked: the caller plucks it again if it wants to.
 */
export function prepared(db: Database, sql: string): Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  else if (stmt.reader) stmt.pluck(false);
  return stmt;
}
