/**
 * The ceiling: the same number of points upserted by a bare better-sqlite3 loop, same schema, pragmas and
 * statement, in transactions of the product's batch size. `node --import tsx bench/bare.ts DB POINTS PER_STEP
 * TX_ROWS` runs it in a process of its own (as the backfill runs in its own) and prints one JSON line.
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Store } from '../src/store/sqlite/store.ts';
import { rng } from './generate.ts';

export interface BareResult {
  points: number;
  txRows: number;
  seconds: number;
  /** CPU seconds of the loop (one thread), whatever else ran beside it */
  cpuSeconds: number;
  pointsPerSec: number;
}

/** Inserts `points` rows step by step, `perStep` metrics per step (the order backfill writes them in). */
export function bareInsert(dbPath: string, points: number, perStep: number, txRows: number): BareResult {
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
  const cpu0 = process.cpuUsage();
  for (let from = 0; from < points; from += txRows) insertRange(from, Math.min(points, from + txRows));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const stored = db.prepare('SELECT count(*) FROM points').pluck().get() as number;
  store.close();
  return { points: stored, txRows, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, pointsPerSec: stored / seconds };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const [db, points, perStep, txRows] = process.argv.slice(2);
  const r = bareInsert(db!, Number(points), Number(perStep), Number(txRows));
  for (const suffix of ['', '-wal', '-shm']) rmSync(db! + suffix, { force: true });
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
