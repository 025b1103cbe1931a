/**
 * The floor of live at scale (bench/liveScale.ts), in a process of its own as `rlwatch start` runs in its own: the
 * same runs growing at the same pace, each new line read from its file (open, stat, read, close), its numbers split
 * out and upserted with the product's schema, pragmas and statement, its offset stored, FILES_PER_TX files per
 * transaction (what the watcher's gathering gives at this pace). No format detection, no rules, no outbox. Its CPU per line,
 * measured in the same run as the product's, says how much of a slow figure is the machine's:
 * `node --import tsx bench/bareLive.ts DIR RUNS PER_SEC SECONDS` prints one JSON line.
 */
import { appendFileSync, closeSync, fstatSync, mkdirSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Store } from '../src/store/sqlite/store.ts';
import { learningLogLine, rng } from './generate.ts';
import { FILES_PER_TX, INITIAL, makeRuns } from './liveScale.ts';

export interface BareLiveResult {
  lines: number;
  points: number;
  /** CPU seconds of the reads and writes (the appends, which the product does not make, left out) */
  cpuSeconds: number;
  cpuPerLineUs: number;
}

/** `[Epoch e]`, `name=value` and `name=value±std`, as learning.log writes them */
const FIELD = /(?:\[(Epoch) ([0-9.]+)\])|([A-Za-z_]+)=(-?[0-9.]+(?:e-?[0-9]+)?)(?:±([0-9.]+))?/g;

export async function bareLive(dir: string, runs: number, perSec: number, seconds: number): Promise<BareLiveResult> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const store = Store.open(join(dir, 'bare.db')); // schema and pragmas from the migrations, as the app has them
  const db = store.db;
  const insert = db.prepare(
    `INSERT INTO points (run_id, metric_id, step, value) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id, metric_id, step) DO UPDATE SET value = excluded.value`,
  );
  db.exec('CREATE TABLE bare_offsets (run_id INTEGER PRIMARY KEY, offset INTEGER NOT NULL)');
  const saveOffset = db.prepare('INSERT OR REPLACE INTO bare_offsets (run_id, offset) VALUES (?, ?)');
  const ids = new Map<string, number>();
  const idOf = (name: string): number => {
    let id = ids.get(name);
    if (id === undefined) ids.set(name, (id = ids.size + 1));
    return id;
  };
  const paths = makeRuns(join(dir, 'runs'), runs);
  const offsets = paths.map((p) => statSync(p).size);
  const readNew = (run: number, step: number): void => {
    const fd = openSync(paths[run]!, 'r');
    try {
      const size = fstatSync(fd).size;
      const buf = Buffer.alloc(size - offsets[run]!);
      readSync(fd, buf, 0, buf.length, offsets[run]!);
      for (const m of buf.toString('utf8').matchAll(FIELD)) {
        const name = m[1] ?? m[3]!;
        insert.run(run + 1, idOf(name), step, Number(m[2] ?? m[4]));
        if (m[5] !== undefined) insert.run(run + 1, idOf(`${name}_std`), step, Number(m[5]));
      }
      offsets[run] = size;
      saveOffset.run(run + 1, size);
    } finally {
      closeSync(fd);
    }
  };
  const commitGroup = db.transaction((from: number, to: number, step: number) => {
    for (let run = from; run < to; run++) readNew(run, step);
  });

  const rand = rng(5);
  const total = INITIAL + seconds * perSec;
  const periodMs = 1000 / perSec;
  let cpuMicros = 0;
  let lines = 0;
  const t0 = performance.now();
  for (let tick = 0; tick < seconds * perSec; tick++) {
    const step = INITIAL + tick + 1;
    for (let from = 0; from < runs; from += FILES_PER_TX) {
      const to = Math.min(runs, from + FILES_PER_TX);
      for (let run = from; run < to; run++) {
        const due = t0 + tick * periodMs + (run * periodMs) / runs;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        appendFileSync(paths[run]!, learningLogLine(step, total, rand));
      }
      const c0 = process.cpuUsage();
      commitGroup(from, to, step);
      const c = process.cpuUsage(c0);
      cpuMicros += c.user + c.system;
      lines += to - from;
    }
  }
  const points = db.prepare('SELECT count(*) FROM points').pluck().get() as number;
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return { lines, points, cpuSeconds: cpuMicros / 1e6, cpuPerLineUs: cpuMicros / lines };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const [dir, runs, perSec, seconds] = process.argv.slice(2);
  const r = await bareLive(dir!, Number(runs), Number(perSec), Number(seconds));
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
