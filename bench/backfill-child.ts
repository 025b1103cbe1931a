/**
 * `node --import tsx bench/backfill-child.ts <root> <db>`: backfills `root` into a fresh `db` and prints one
 * JSON line on stdout with the time, what was stored and the peak RSS of this process (KB).
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ConfigSchema } from '../src/config/schema.ts';
import { backfill } from '../src/ingest/backfill.ts';
import { Ingestor } from '../src/ingest/ingestor.ts';
import { Store } from '../src/store/store.ts';

export interface ChildResult {
  seconds: number;
  bytes: number;
  lines: number;
  records: number;
  points: number;
  steps: number;
  examples: number;
  skips: Record<string, number>;
  /** peak RSS after imports and opening the store, before reading anything (KB) */
  baselineMaxRssKB: number;
  maxRssKB: number;
}

const [root, dbPath] = process.argv.slice(2);
if (!root || !dbPath) {
  process.stderr.write('usage: backfill-child.ts <root> <db>\n');
  process.exit(2);
}

for (const suffix of ['', '-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
const config = ConfigSchema.parse({});
const store = Store.open(dbPath);
const ingestor = new Ingestor(store, config.ingest);
const baselineMaxRssKB = process.resourceUsage().maxRSS;

const t0 = performance.now();
const summary = await backfill(ingestor, [root], { depth: config.watch.depth, ignore: config.watch.ignore });
const seconds = (performance.now() - t0) / 1000;

const count = (table: string): number => store.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
const result: ChildResult = {
  seconds,
  bytes: summary.bytes,
  lines: summary.lines,
  records: summary.records,
  points: count('points'),
  steps: count('steps'),
  examples: count('examples'),
  skips: summary.skips,
  baselineMaxRssKB,
  maxRssKB: process.resourceUsage().maxRSS,
};
store.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
