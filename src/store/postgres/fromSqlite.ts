/** Copies a SQLite history into PostgreSQL, table by table (`rlwatch migrate`). */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { UserError } from '../../lib/errors.ts';
import { migratePg } from './connect.ts';

/**
 * The tables a SQLite history is moved in, parents before children; the writer row (which process holds a SQLite
 * file's lock) has no meaning elsewhere and stays behind.
 */
export const TABLES = [
  'runs',
  'files',
  'file_skips',
  'metrics',
  'points',
  'steps',
  'run_metrics',
  'examples',
  'events',
  'attempts',
  'arrivals',
  'alerts',
  'alert_events',
  'run_cursors',
  'silences',
  'outbox',
  'chat_messages',
  'alert_messages',
  'unread_files',
  'report_marks',
] as const;

/** Tables whose `id` is an identity: its sequence is moved past the ids copied. */
const IDENTITIES = [
  'runs',
  'files',
  'metrics',
  'events',
  'arrivals',
  'alerts',
  'alert_events',
  'silences',
  'outbox',
  'chat_messages',
];

/** Parameters per INSERT stay under PostgreSQL's limit of 65,535. */
const MAX_PARAMS = 60_000;

export interface TableCount {
  table: string;
  /** rows in the SQLite file */
  read: number;
  /** rows this run added (the rest were there from an earlier run) */
  copied: number;
}

/**
 * Copies every table of the SQLite store `src` into the PostgreSQL database behind `pool` (its schema brought up
 * to date first), ids kept, in one transaction: it lands whole or not at all. Rows already there are left as they
 * are, so running it again adds nothing. A target that holds other runs under the same ids is refused.
 */
export async function copySqliteToPg(
  src: Database.Database,
  pool: pg.Pool,
  onProgress: (table: string, done: number, total: number) => void = () => {},
): Promise<TableCount[]> {
  await migratePg(pool);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await refuseOtherRuns(src, client);
    const counts: TableCount[] = [];
    for (const table of TABLES) counts.push(await copyTable(src, client, table, onProgress));
    for (const table of IDENTITIES) {
      await client.query(
        `SELECT setval(pg_get_serial_sequence($1, 'id'), greatest((SELECT max(id) FROM ${table}), 1))`,
        [table],
      );
    }
    await client.query('COMMIT');
    return counts;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

async function refuseOtherRuns(src: Database.Database, db: pg.PoolClient): Promise<void> {
  const rows = (await db.query<{ id: number; path: string }>('SELECT id, path FROM runs')).rows;
  const there = new Map(rows.map((r) => [r.id, r.path]));
  if (there.size === 0) return;
  const ours = src.prepare('SELECT id, path FROM runs').all() as Array<{ id: number; path: string }>;
  const byPath = new Map([...there].map(([id, path]) => [path, id]));
  for (const r of ours) {
    const sameId = there.get(r.id);
    const samePath = byPath.get(r.path);
    if ((sameId !== undefined && sameId !== r.path) || (samePath !== undefined && samePath !== r.id)) {
      throw new UserError(
        `the PostgreSQL database already holds other runs (run ${r.id} there is not ${r.path}): ` +
          'migrate into an empty database',
      );
    }
  }
}

async function copyTable(
  src: Database.Database,
  db: pg.PoolClient,
  table: string,
  onProgress: (table: string, done: number, total: number) => void,
): Promise<TableCount> {
  const theirs = new Set(
    (
      await db.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
        [table],
      )
    ).rows.map((r) => r.column_name),
  );
  const columns = (src.prepare(`SELECT name FROM pragma_table_info('${table}')`).pluck().all() as string[]).filter(
    (c) => theirs.has(c),
  );
  const total = src.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const quoted = columns.map((c) => `"${c}"`).join(', ');
  const perInsert = Math.max(1, Math.min(5000, Math.floor(MAX_PARAMS / columns.length)));
  // SQLite stores a NaN point as NULL (it has no NaN); PostgreSQL keeps NaN itself
  const value = table === 'points' ? columns.indexOf('value') : -1;
  const convert =
    value < 0
      ? null
      : (row: unknown[]): unknown[] => {
          row[value] ??= NaN;
          return row;
        };
  let copied = 0;
  let done = 0;
  let chunk: unknown[][] = [];
  const flush = async (): Promise<void> => {
    if (chunk.length === 0) return;
    const values = chunk.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`);
    const sql = `INSERT INTO ${table} (${quoted}) VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`;
    const res = await db.query(sql, chunk.flat());
    copied += res.rowCount ?? 0;
    done += chunk.length;
    chunk = [];
    onProgress(table, done, total);
  };
  const rows = src.prepare(`SELECT ${quoted} FROM ${table}`).raw().iterate() as IterableIterator<unknown[]>;
  for (const row of rows) {
    chunk.push(convert ? convert(row) : row);
    if (chunk.length >= perInsert) await flush();
  }
  await flush();
  onProgress(table, done, total);
  return { table, read: total, copied };
}
