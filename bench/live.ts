/** Live latency: append learning.log lines one at a time and time each until `onBatch` commits it. */
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp } from '../src/app/start.ts';
import { ConfigSchema } from '../src/config/schema.ts';
import { silentLog } from '../src/lib/log.ts';
import { learningLogLine, rng, writeLearningLog } from './generate.ts';

export interface LiveResult {
  gapMs: number;
  appended: number;
  committed: number;
  /** lines never committed by the time the bench gave up waiting (5 s after the last append): they count
   * as infinite latency in the percentiles */
  missed: number;
  missedSteps: number[];
  /** batches that committed more than one appended line (events coalesced) */
  multiLineBatches: number;
  startMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  /** max and mean of the committed lines */
  maxMs: number;
  meanMs: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export async function liveLatency(dir: string, appends = 1000, gapMs = 20, initialLines = 100): Promise<LiveResult> {
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'root');
  const logPath = join(root, 'run1', 'learning.log');
  mkdirSync(join(root, 'run1'), { recursive: true });
  writeLearningLog(logPath, initialLines);

  const sent = new Map<number, number>();
  const got = new Map<number, number>();
  let multiLineBatches = 0;
  let wake: (() => void) | null = null;
  const onBatch = (r: { minStep: number | null; maxStep: number | null }): void => {
    const now = performance.now();
    if (r.maxStep === null || r.minStep === null) return;
    let fresh = 0;
    for (let s = Math.max(r.minStep, initialLines + 1); s <= r.maxStep; s++) {
      if (sent.has(s) && !got.has(s)) {
        got.set(s, now);
        fresh++;
      }
    }
    if (fresh > 1) multiLineBatches++;
    wake?.();
  };

  const config = ConfigSchema.parse({});
  const t0 = performance.now();
  const app = await startApp({
    config,
    dbPath: join(dir, 'live.db'),
    roots: [root],
    log: silentLog,
    terminal: null,
    onBatch,
  });
  const startMs = performance.now() - t0;
  try {
    const rand = rng(4);
    const total = initialLines + appends;
    for (let k = 1; k <= appends; k++) {
      const step = initialLines + k;
      const line = learningLogLine(step, total, rand);
      sent.set(step, performance.now());
      appendFileSync(logPath, line);
      await sleep(gapMs);
    }
    const deadline = performance.now() + 5000;
    while (got.size < appends && performance.now() < deadline) {
      await Promise.race([new Promise<void>((r) => (wake = r)), sleep(100)]);
      wake = null;
    }
  } finally {
    await app.stop();
  }

  const lat = [...sent].map(([step, at]) => (got.get(step) ?? Infinity) - at).sort((a, b) => a - b);
  const finite = lat.filter(Number.isFinite);
  return {
    gapMs,
    appended: appends,
    committed: got.size,
    missed: appends - got.size,
    missedSteps: [...sent.keys()].filter((s) => !got.has(s)),
    multiLineBatches,
    startMs,
    p50Ms: percentile(lat, 50),
    p90Ms: percentile(lat, 90),
    p99Ms: percentile(lat, 99),
    maxMs: finite.length > 0 ? (finite[finite.length - 1] as number) : NaN,
    meanMs: finite.reduce((a, b) => a + b, 0) / Math.max(1, finite.length),
  };
}
