/**
 * The real `rlwatch backfill` (bin/rlwatch, as a user runs it: start-up, the default config's rules and the
 * terminal target included) of `root` into a fresh database, timed from spawn to exit; what it stored is read
 * from the database afterwards. Its peak RSS and its main thread's CPU time come from a preload (bench/peakRss.mjs).
 */
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';

export interface ChildResult {
  seconds: number;
  bytes: number;
  lines: number;
  records: number;
  points: number;
  steps: number;
  /** transactions that wrote the records (the product's batch size is points / batches) */
  batches: number;
  examples: number;
  alerts: number;
  skips: Record<string, number>;
  maxRssKB: number;
  /** CPU seconds of the thread that writes to SQLite (start-up and rules included); null where unknown */
  mainCpuSeconds: number | null;
}

export function runBackfillCli(opts: {
  repo: string;
  root: string;
  db: string;
  extraNodeArgs?: string[];
}): ChildResult {
  const { repo, root, db } = opts;
  for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
  const rssFile = `${db}.rss`;
  rmSync(rssFile, { force: true });
  const args = [
    ...(opts.extraNodeArgs ?? []),
    '--import',
    join(import.meta.dirname, 'peakRss.mjs'),
    join(repo, 'bin', 'rlwatch'),
    'backfill',
    root,
    '--db',
    db,
  ];
  // the default config: no RLWATCH_CONFIG, and a working directory without an rlwatch.yaml
  const { RLWATCH_CONFIG: _config, ...env } = process.env;
  const t0 = performance.now();
  const child = spawnSync(process.execPath, args, {
    cwd: dirname(db),
    encoding: 'utf8',
    env: { ...env, BENCH_RSS_FILE: rssFile },
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (child.status !== 0) throw new Error(`rlwatch backfill exited ${child.status}: ${child.stderr.slice(-2000)}`);
  const measured = JSON.parse(readFileSync(rssFile, 'utf8')) as Pick<ChildResult, 'maxRssKB' | 'mainCpuSeconds'>;
  const { maxRssKB, mainCpuSeconds } = measured;
  rmSync(rssFile, { force: true });

  const conn = new Database(db, { readonly: true });
  try {
    const one = (sql: string): number => (conn.prepare(sql).pluck().get() as number | null) ?? 0;
    const skips = conn.prepare('SELECT reason, sum(count) AS n FROM file_skips GROUP BY reason').all() as Array<{
      reason: string;
      n: number;
    }>;
    return {
      seconds,
      bytes: one('SELECT sum(offset) FROM files'),
      lines: one('SELECT sum(lines) FROM files'),
      records: one('SELECT sum(records) FROM files'),
      points: one('SELECT count(*) FROM points'),
      steps: one('SELECT count(*) FROM steps'),
      batches: one('SELECT sum(batches) FROM runs'),
      examples: one('SELECT count(*) FROM examples'),
      alerts: one('SELECT count(*) FROM alerts'),
      skips: Object.fromEntries(skips.map((s) => [s.reason, s.n])),
      maxRssKB,
      mainCpuSeconds,
    };
  } finally {
    conn.close();
  }
}
