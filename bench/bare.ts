/** The ceiling: the same number of points upserted by a bare better-sqlite3 loop, same schema and pragmas. */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Store } from '../src/store/store.ts';
import { rng } from './generate.ts';

export interface BareResult {
  points: number;
  seconds: number;
  pointsPerSec: number;
}

/**
 * Inserts `points` rows step by step, `perStep` metrics per step (the order backfill writes them in),
 * in transactions of `txRows` rows.
 */
export function bareInsert(dbPath: string, points: number, perStep: number, txRows = 80_000): BareResult {
  for (const suffix of ['', '-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
  const store = Store.open(dbPath); // schema and pragmas from the migrations, as the app has them
  const db = store.db;
  const insert = db.prepare(
    `INSERT INTO points (run_id, metric_id, step, value) VALUES (?,?,?,?)
     ON CONFLICT (run_id, metric_id, step) DO UPDATE SET value = excluded.value`,
  );
  const rand = rng(3);
  const insertRange = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      insert.run(1, (i % perStep) + 1, Math.floor(i / perStep) + 1, rand());
    }
  });
  const t0 = performance.now();
  for (let from = 0; from < points; from += txRows) insertRange(from, Math.min(points, from + txRows));
  const seconds = (performance.now() - t0) / 1000;
  const stored = db.prepare('SELECT count(*) FROM points').pluck().get() as number;
  store.close();
  return { points: stored, seconds, pointsPerSec: stored / seconds };
}
