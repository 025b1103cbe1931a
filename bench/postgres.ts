/**
 * PostgreSQL ingest: the same points committed in the same batches through the PostgreSQL store
 * (`PgStore.commit`), through a bare `COPY` into a table shaped like its points table (the limit), and through
 * the SQLite store beside them; and the bytes each database takes per 1M points. Runs on a throwaway embedded
 * PostgreSQL with fsync off (test/pg/embedded.ts): the ratio is fair, the absolute figures flatter a real server.
 * BENCH_PG_POINTS sets the number of points (default 1,000,000).
 */
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Batch } from '../src/store/sqlite/store.ts';
import { Store } from '../src/store/sqlite/store.ts';
import { PgStore } from '../src/store/postgres/pgStore.ts';
import { SqliteAsyncStore } from '../src/store/sqlite/sqliteAsync.ts';
import { startPostgres } from '../test/pg/embedded.ts';

const METRICS = 20;
const STEPS_PER_BATCH = 250;
const TARGET_RATIO = 0.5;

interface Figures {
  points: number;
  batches: number;
  pgStore: { seconds: number; pointsPerSec: number; bytesPer1M: number };
  copy: { seconds: number; pointsPerSec: number; bytesPer1M: number };
  sqlite: { seconds: number; pointsPerSec: number; bytesPer1M: number };
  /** the same through the async adapter (SqliteAsyncStore): what phase 2 costs SQLite */
  sqliteAsync: { seconds: number; pointsPerSec: number; bytesPer1M: number };
  ratio: number;
}

/** Steps of METRICS values each, in batches of STEPS_PER_BATCH steps, as one file's reads would give them. */
function makeBatches(points: number, runId: number, fileId: number): Batch[] {
  const steps = Math.ceil(points / METRICS);
  const names = Array.from({ length: METRICS }, (_, i) => (i === 0 ? 'reward' : `metric_${i}`));
  const batches: Batch[] = [];
  for (let first = 1; first <= steps; first += STEPS_PER_BATCH) {
    const metrics: Batch['metrics'] = [];
    for (let step = first; step < first + STEPS_PER_BATCH && step <= steps; step++) {
      metrics.push({ step, values: new Map(names.map((n, i) => [n, Math.sin(step * (i + 1)) * 0.5 + 0.5])) });
    }
    batches.push({
      runId,
      fileId,
      metrics,
      examples: [],
      skips: new Map(),
      progress: {
        dev: 1,
        ino: 1,
        offset: first * 100,
        size: first * 100,
        mtimeMs: 0,
        seq: 0,
        lines: metrics.length,
        records: metrics.length,
      },
    });
  }
  return batches;
}

async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.href;
}

async function tableBytes(client: pg.Client, tables: readonly string[]): Promise<number> {
  const r = await client.query<{ n: string }>(
    'SELECT sum(pg_total_relation_size(t::regclass))::text AS n FROM unnest($1::text[]) t',
    [tables],
  );
  return Number(r.rows[0]!.n);
}

async function viaStore(url: string): Promise<{ seconds: number; bytes: number }> {
  const store = await PgStore.open(url, { max: 1 });
  const run = await store.runs.ensure('bench', '/bench');
  const file = await store.files.add(run.id, '/bench/metrics.jsonl', 'jsonl');
  const batches = makeBatches(POINTS, run.id, file.id);
  const t0 = performance.now();
  for (const b of batches) await store.commit(b, 0);
  const seconds = (performance.now() - t0) / 1000;
  await store.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('VACUUM ANALYZE');
  const bytes = await tableBytes(c, ['points', 'steps', 'run_metrics', 'metrics']);
  await c.end();
  return { seconds, bytes };
}

/** The limit: one `COPY` per batch into a bare table with the points table's columns and primary key. */
async function viaCopy(url: string): Promise<{ seconds: number; bytes: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`CREATE TABLE points (run_id integer NOT NULL, metric_id integer NOT NULL, step bigint NOT NULL,
    value double precision NOT NULL, PRIMARY KEY (run_id, metric_id, step))`);
  const batches = makeBatches(POINTS, 1, 1);
  const ids = new Map<string, number>();
  const t0 = performance.now();
  for (const b of batches) {
    const lines: string[] = [];
    for (const m of b.metrics) {
      for (const [name, value] of m.values) {
        let id = ids.get(name);
        if (id === undefined) ids.set(name, (id = ids.size + 1));
        lines.push(`1\t${id}\t${m.step}\t${value}\n`);
      }
    }
    await c.query('BEGIN');
    await pipeline(
      Readable.from([lines.join('')]),
      c.query(copyFrom('COPY points (run_id, metric_id, step, value) FROM STDIN')),
    );
    await c.query('COMMIT');
  }
  const seconds = (performance.now() - t0) / 1000;
  await c.query('VACUUM ANALYZE');
  const bytes = await tableBytes(c, ['points']);
  await c.end();
  return { seconds, bytes };
}

async function viaSqlite(async: boolean): Promise<{ seconds: number; bytes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'rlwatch-bench-sqlite-'));
  try {
    const path = join(dir, 'bench.db');
    const store = Store.open(path);
    const run = store.runs.ensure('bench', '/bench');
    const file = store.files.add(run.id, '/bench/metrics.jsonl', 'jsonl');
    const batches = makeBatches(POINTS, run.id, file.id);
    const adapter = new SqliteAsyncStore(store);
    const t0 = performance.now();
    if (async) for (const b of batches) await adapter.commit(b, 0);
    else for (const b of batches) store.commit(b, 0);
    const seconds = (performance.now() - t0) / 1000;
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    return { seconds, bytes: statSync(path).size };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const POINTS = Number(process.env['BENCH_PG_POINTS']) > 0 ? Number(process.env['BENCH_PG_POINTS']) : 1_000_000;

export async function runPgBench(): Promise<Figures> {
  const server = await startPostgres();
  try {
    const points = Math.ceil(POINTS / METRICS) * METRICS;
    const per = (r: { seconds: number; bytes: number }) => ({
      seconds: r.seconds,
      pointsPerSec: points / r.seconds,
      bytesPer1M: (r.bytes * 1e6) / points,
    });
    // COPY, store, store, COPY: alternated, so that a machine getting busier weighs on both alike; the mean of two
    const copyA = await viaCopy(await createDatabase(server.url, 'bench_copy_a'));
    const storeA = await viaStore(await createDatabase(server.url, 'bench_store_a'));
    const storeB = await viaStore(await createDatabase(server.url, 'bench_store_b'));
    const copyB = await viaCopy(await createDatabase(server.url, 'bench_copy_b'));
    const mean = (a: { seconds: number; bytes: number }, b: { seconds: number; bytes: number }) => ({
      seconds: (a.seconds + b.seconds) / 2,
      bytes: a.bytes,
    });
    const pgStore = per(mean(storeA, storeB));
    // the SQLite store the same way: direct, through the adapter twice, direct
    const sqliteA = await viaSqlite(false);
    const asyncA = await viaSqlite(true);
    const asyncB = await viaSqlite(true);
    const sqliteB = await viaSqlite(false);
    const copy = per(mean(copyA, copyB));
    return {
      points,
      batches: Math.ceil(points / METRICS / STEPS_PER_BATCH),
      pgStore,
      copy,
      sqlite: per(mean(sqliteA, sqliteB)),
      sqliteAsync: per(mean(asyncA, asyncB)),
      ratio: pgStore.pointsPerSec / copy.pointsPerSec,
    };
  } finally {
    await server.stop();
  }
}

export function formatPgReport(f: Figures): string {
  const n = (x: number, d = 0): string =>
    x.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d });
  const mb = (b: number): string => `${n(b / 2 ** 20, 1)} MB`;
  const row = (label: string, r: Figures['copy'], what: string): string =>
    `  ${label.padEnd(16)}  ${n(r.pointsPerSec)} points/s (${n(r.seconds, 2)} s)   ${mb(r.bytesPer1M)} per 1M points (${what})`;
  return [
    `PostgreSQL ingest: ${n(f.points)} points (${METRICS} metrics x ${n(f.points / METRICS)} steps) in ${n(f.batches)} batches`,
    row('PgStore.commit', f.pgStore, 'points, steps, run_metrics, metrics'),
    row('bare COPY', f.copy, 'points'),
    `  store ÷ COPY      ${n(f.ratio, 2)}   target >= ${TARGET_RATIO}   ${f.ratio >= TARGET_RATIO ? 'PASS' : 'FAIL'}`,
    row('SQLite Store', f.sqlite, 'whole file'),
    row('SQLite, async', f.sqliteAsync, 'whole file'),
    '',
  ].join('\n');
}

/** The section as `npm run bench` prints it. */
export async function pgBenchReport(): Promise<string> {
  return formatPgReport(await runPgBench());
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(await pgBenchReport());
