/**
 * PostgreSQL connections: pools and clients, numbers read back as SQLite gives them, rlwatch's advisory locks and
 * its migrations.
 */
import pg from 'pg';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS_DIR } from '../../lib/paths.ts';

/** PostgreSQL's own schema changes: `migrations/pg/NNN_name.sql`, separate from SQLite's. */
export const PG_MIGRATIONS_DIR = join(MIGRATIONS_DIR, 'pg');

const INT8 = 20;

/** The classid of rlwatch's advisory locks ("RLWT"), beside other applications' locks on the same server. */
export const LOCK_CLASS = 1381455956;

/** bigint columns (ids, ms times, steps) come back as numbers, as they do from SQLite; they stay below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export function newPool(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, types });
  // an idle connection that dies (server restart) is dropped from the pool; the next query opens another
  pool.on('error', () => {});
  return pool;
}

/** `name`: how the connection shows in `pg_stat_activity` (one the URL's `application_name` overrides).
 * `pipeline`: each query is sent at once, not after the answer to the one before (`withoutPipeline` for a COPY). */
export function newClient(url: string, name?: string, pipeline = false): pg.Client {
  const named = name ? { fallback_application_name: name } : {};
  return new pg.Client({ connectionString: url, types, pipeline, ...named });
}

/** `fn` on `client` out of pipeline mode, which the driver refuses a COPY in; the client must be idle (every query
 * it was sent answered), as it is between two awaited queries. */
export async function withoutPipeline<T>(client: pg.ClientBase, fn: () => Promise<T>): Promise<T> {
  const c = client as { pipeline?: boolean };
  if (!c.pipeline) return fn();
  c.pipeline = false;
  try {
    return await fn();
  } finally {
    c.pipeline = true;
  }
}

/** Distinct statements a connection prepares at most: SQL spelled with a varying part past that runs unnamed. */
const PREPARED_MAX = 256;

/**
 * Makes `client` send each statement with parameters as a named prepared statement, parsed and analysed by the
 * server once per connection and then only bound and run (its plan cached): on a watcher's connection, whose few
 * dozen statements repeat for every line, PostgreSQL spent more CPU parsing and planning them than running them.
 * Statements without parameters keep the simple protocol (several may be sent as one string).
 */
export function preparing<C extends pg.Client>(client: C): C {
  const names = new Map<string, string>();
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((config: unknown, values?: unknown, callback?: unknown) => {
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
      let name = names.get(config);
      if (name === undefined && names.size < PREPARED_MAX) names.set(config, (name = `rlwatch_${names.size}`));
      if (name !== undefined) return query({ name, text: config, values }, callback);
    }
    return query(config, values, callback);
  }) as C['query'];
  return client;
}

/**
 * Applies the pending migrations in one transaction, under a transaction-scoped advisory lock: several processes
 * opening a new database at once apply each migration once. A schema already up to date is only read, so that a
 * role allowed to read the tables and nothing more (a dashboard, a colleague's CLI) can open it.
 */
export async function migratePg(pool: pg.Pool, dir = PG_MIGRATIONS_DIR): Promise<number[]> {
  const files = readdirSync(dir)
    .map((name) => ({ name, m: /^(\d+)_.*\.sql$/.exec(name) }))
    .filter((f): f is { name: string; m: RegExpExecArray } => f.m !== null)
    .map((f) => ({ name: f.name, version: Number(f.m[1]) }))
    .sort((a, b) => a.version - b.version);
  const applied = await appliedVersions(pool);
  if (files.every((f) => applied.has(f.version))) return [];
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK_CLASS]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
    const known = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(known.rows.map((r) => r.version));
    const applied: number[] = [];
    for (const f of files) {
      if (done.has(f.version)) continue;
      await client.query(readFileSync(join(dir, f.name), 'utf8'));
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        f.version,
        f.name,
        Date.now(),
      ]);
      applied.push(f.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** The versions the database has applied; none when it has no `schema_migrations` yet (a new database). */
async function appliedVersions(pool: pg.Pool): Promise<Set<number>> {
  const table = await pool.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations') AS t`);
  if (table.rows[0]!.t === null) return new Set();
  const rows = await pool.query<{ version: number }>('SELECT version FROM schema_migrations');
  return new Set(rows.rows.map((r) => r.version));
}
