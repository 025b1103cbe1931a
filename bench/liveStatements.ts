/**
 * SQL statements per live line: the product's ingestor, rules (the GRPO preset) and SQLite store in this process,
 * `runs` runs that have logged INITIAL lines each, then `ticks` more lines appended to every run and read as the
 * watcher reads them (FILES_PER_TX files gathered into each transaction). Each statement run is counted by
 * its SQL. Unlike CPU on a shared machine, the count is the same on every run: a change that reads or writes less
 * shows here first. `node --import tsx bench/liveStatements.ts` prints the table.
 */
import { appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Statement } from 'better-sqlite3';
import { Engine } from '../src/engine/engine.ts';
import { GRPO_PRESET } from '../src/engine/presets/grpo.ts';
import { RuleBook } from '../src/engine/rules.ts';
import { Ingestor } from '../src/ingest/ingestor.ts';
import { Store } from '../src/store/sqlite/store.ts';
import { learningLogLine, rng } from './generate.ts';
import { FILES_PER_TX, INITIAL, makeRuns } from './liveScale.ts';

export interface LiveStatementsResult {
  lines: number;
  perLine: number;
  /** statements per line by SQL (its first 100 characters, spaces squeezed), most first */
  bySql: Array<{ sql: string; perLine: number }>;
}

export async function runLiveStatements(dir: string, runs = 100, ticks = 20): Promise<LiveStatementsResult> {
  rmSync(dir, { recursive: true, force: true });
  const store = Store.open(join(dir, 'rlwatch.db'));
  const engine = new Engine(store, RuleBook.build(GRPO_PRESET, []), {
    repeatIntervalMs: 4 * 3_600_000,
    targets: ['console'],
  });
  let live = false;
  const ingestor = new Ingestor(
    store,
    { maxLineBytes: 1 << 20, examplesPerStep: 2 },
    () => {},
    (r) => {
      engine.evaluate(r.runId, live);
    },
  );
  const root = join(dir, 'runs');
  const paths = makeRuns(root, runs);
  for (const path of paths) await ingestor.ingest(path, root);
  engine.caughtUp();
  live = true;

  const counts = new Map<string, number>();
  const proto = Object.getPrototypeOf(store.db.prepare('SELECT 1')) as Record<string, unknown>;
  const originals = new Map<string, (...args: unknown[]) => unknown>();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = proto[method] as (...args: unknown[]) => unknown;
    originals.set(method, original);
    proto[method] = function (this: Statement, ...args: unknown[]) {
      const sql = this.source.replace(/\s+/g, ' ').slice(0, 100);
      counts.set(sql, (counts.get(sql) ?? 0) + 1);
      return original.apply(this, args);
    };
  }
  try {
    const rand = rng(5);
    for (let tick = 0; tick < ticks; tick++) {
      for (const path of paths) appendFileSync(path, learningLogLine(INITIAL + tick + 1, INITIAL + ticks, rand));
      for (let from = 0; from < runs; from += FILES_PER_TX) {
        const group = store.group(() => paths.slice(from, from + FILES_PER_TX).map((p) => ingestor.ingest(p, root)));
        await Promise.all(group.reads);
        if (group.failed) throw group.failed;
      }
    }
  } finally {
    for (const [method, original] of originals) proto[method] = original;
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = runs * ticks;
  const bySql = [...counts].sort((a, b) => b[1] - a[1]).map(([sql, n]) => ({ sql, perLine: n / lines }));
  return { lines, perLine: bySql.reduce((sum, s) => sum + s.perLine, 0), bySql };
}

export function formatLiveStatements(r: LiveStatementsResult): string {
  const rows = r.bySql.filter((s) => s.perLine >= 0.01).map((s) => `  ${s.perLine.toFixed(2).padStart(6)}  ${s.sql}`);
  return [`SQL statements per live line: ${r.perLine.toFixed(1)} (${r.lines} lines)`, ...rows].join('\n');
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const r = await runLiveStatements(join(import.meta.dirname, 'out', 'live-statements'));
  process.stdout.write(`${formatLiveStatements(r)}\n`);
}
