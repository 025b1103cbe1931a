/**
 * TensorBoard event file reading: a Trainer-style events file (one event per tag and step, as the HF Trainer's
 * TensorBoard callback writes it) decoded alone, and backfilled into SQLite through the Ingestor.
 * BENCH_TFEVENTS_STEPS sets the number of steps (default 100,000, 10 tags each).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ConfigSchema } from '../src/config/schema.ts';
import { tfEvents } from '../src/ingest/formats/tfevents/tfEvents.ts';
import { backfill } from '../src/ingest/backfill.ts';
import { Ingestor } from '../src/ingest/ingestor.ts';
import { Store } from '../src/store/sqlite/store.ts';
import { eventRecord, versionRecord } from '../test/tfeventsWriter.ts';

const MB = 1e6;
const TAGS = [
  'train/loss',
  'train/grad_norm',
  'train/learning_rate',
  'train/reward',
  'train/reward_std',
  'train/frac_reward_zero_std',
  'train/rewards/accuracy_reward/mean',
  'train/completions/mean_length',
  'train/kl',
  'train/epoch',
];

export interface TfeventsResult {
  steps: number;
  events: number;
  bytes: number;
  generateSeconds: number;
  /** frames + protobuf decoding + grouping, no SQLite */
  decode: { seconds: number; mbPerSec: number; pointsPerSec: number };
  /** the whole path: Ingestor → Store, committed per 256 KB chunk */
  backfill: { seconds: number; mbPerSec: number; pointsPerSec: number; points: number };
}

function writeEvents(path: string, steps: number): number {
  mkdirSync(dirname(path), { recursive: true });
  const parts: Buffer[] = [versionRecord()];
  for (let step = 1; step <= steps; step++) {
    for (let t = 0; t < TAGS.length; t++) {
      parts.push(eventRecord({ step, scalars: { [TAGS[t]!]: Math.sin(step / 100 + t) } }));
    }
  }
  const data = Buffer.concat(parts);
  writeFileSync(path, data);
  return data.length;
}

export async function runTfeventsBench(opts: { outDir: string; steps?: number }): Promise<TfeventsResult> {
  const steps = opts.steps ?? (Number(process.env['BENCH_TFEVENTS_STEPS']) || 100_000);
  const root = join(opts.outDir, 'tfevents');
  const path = join(root, 'run1', 'runs', 'Nov22_00-00-00_bench', 'events.out.tfevents.1763769600.bench.1.0');
  rmSync(root, { recursive: true, force: true });
  const g0 = performance.now();
  const bytes = writeEvents(path, steps);
  const generateSeconds = (performance.now() - g0) / 1000;
  const events = steps * TAGS.length;

  // decode alone, in the ingestor's chunk size
  const data = readFileSync(path);
  const decode = await tfEvents.open({ relPath: 'x' }, 8 * 1024 * 1024);
  let points = 0;
  const d0 = performance.now();
  let pending = Buffer.alloc(0);
  for (let at = 0; at < data.length; at += 256 * 1024) {
    const chunk = Buffer.concat([pending, data.subarray(at, at + 256 * 1024)]);
    const { results, consumed } = decode(chunk);
    for (const r of results) if (r.kind === 'metric') points += r.record.values.size;
    pending = chunk.subarray(consumed);
  }
  const decodeSeconds = (performance.now() - d0) / 1000;

  const dbPath = join(opts.outDir, 'tfevents.db');
  for (const suffix of ['', '-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
  const config = ConfigSchema.parse({});
  const store = Store.open(dbPath);
  const b0 = performance.now();
  await backfill(new Ingestor(store, config.ingest), [root], { depth: config.watch.depth });
  const backfillSeconds = (performance.now() - b0) / 1000;
  const stored = store.db.prepare('SELECT count(*) FROM points').pluck().get() as number;
  store.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
  rmSync(root, { recursive: true, force: true });
  if (points !== events || stored !== events) {
    throw new Error(`tfevents bench: ${events} events, ${points} decoded, ${stored} stored`);
  }
  return {
    steps,
    events,
    bytes,
    generateSeconds,
    decode: { seconds: decodeSeconds, mbPerSec: bytes / MB / decodeSeconds, pointsPerSec: points / decodeSeconds },
    backfill: {
      seconds: backfillSeconds,
      mbPerSec: bytes / MB / backfillSeconds,
      pointsPerSec: stored / backfillSeconds,
      points: stored,
    },
  };
}

export function formatTfeventsReport(r: TfeventsResult): string {
  const n = (v: number, digits = 0): string =>
    v.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return [
    `TensorBoard events: ${n(r.steps)} steps × ${TAGS.length} tags = ${n(r.events)} events, ${n(r.bytes / MB, 1)} MB`,
    ...(['decode', 'backfill'] as const).map((k) => {
      const x = r[k];
      const label = k === 'decode' ? 'decode only    ' : 'backfill→SQLite';
      return `  ${label}  ${n(x.seconds, 2)} s  ${n(x.mbPerSec, 1)} MB/s  ${n(x.pointsPerSec)} points/s`;
    }),
  ].join('\n');
}
