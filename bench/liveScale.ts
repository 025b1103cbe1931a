/**
 * Live at scale, through `startApp` as `rlwatch start` runs: `runs` runs each appending a learning.log line
 * `perSec` times a second; each line timed from its append until the batch holding it is committed (onBatch).
 * CPU is this process's (the watcher and the appends, which are a small share) over the appending window, as a
 * fraction of one core; RSS is this process's at the end. Then `idleRuns` runs that do not grow: CPU and RSS
 * while watching them.
 */
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp } from '../src/app.ts';
import { ConfigSchema } from '../src/config/schema.ts';
import { silentLog } from '../src/log.ts';
import { learningLogLine, rng, writeLearningLog } from './generate.ts';
import { percentile } from './live.ts';

export const LIVE_SCALE_P99_TARGET_MS = 50;
export const LIVE_SCALE_CPU_TARGET = 0.5;
export const IDLE_CPU_TARGET = 0.05;
export const IDLE_RSS_TARGET_MB = 200;

export interface LiveScaleResult {
  runs: number;
  perSec: number;
  seconds: number;
  appended: number;
  committed: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU seconds per wall second over the appending window (1 = one core) */
  cpu: number;
  rssMB: number;
  idle: { runs: number; seconds: number; cpu: number; rssMB: number };
}

const INITIAL = 20;

function makeRuns(root: string, n: number): string[] {
  const paths: string[] = [];
  for (let i = 0; i < n; i++) {
    const path = join(root, `run${String(i).padStart(4, '0')}`, 'learning.log');
    mkdirSync(join(path, '..'), { recursive: true });
    writeLearningLog(path, INITIAL);
    paths.push(path);
  }
  return paths;
}

const cpuSeconds = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

export async function runLiveScale(opts: {
  dir: string;
  runs?: number;
  perSec?: number;
  seconds?: number;
  idleRuns?: number;
  idleSeconds?: number;
}): Promise<LiveScaleResult> {
  const { dir } = opts;
  const runs = opts.runs ?? 100;
  const perSec = opts.perSec ?? 5;
  const seconds = opts.seconds ?? 20;
  rmSync(dir, { recursive: true, force: true });
  const config = ConfigSchema.parse({});

  // 1. `runs` growing runs
  const root = join(dir, 'busy');
  const paths = makeRuns(root, runs);
  const sent = new Map<string, number>(); // `${runIndex}:${step}` -> when appended
  const latencies: number[] = [];
  const nameOf = new Map<number, number>(); // runId -> run index
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  const onBatch = (r: { runId: number; minStep: number | null; maxStep: number | null }): void => {
    const now = performance.now();
    if (r.minStep === null || r.maxStep === null || !app) return;
    let index = nameOf.get(r.runId);
    if (index === undefined) {
      index = Number(app.store.runs.byId(r.runId)?.name.replace(/^run/, '') ?? -1);
      nameOf.set(r.runId, index);
    }
    for (let s = r.minStep; s <= r.maxStep; s++) {
      const key = `${index}:${s}`;
      const at = sent.get(key);
      if (at !== undefined) {
        latencies.push(now - at);
        sent.delete(key);
      }
    }
  };
  app = await startApp({ config, dbPath: join(dir, 'busy.db'), roots: [root], log: silentLog, terminal: null, onBatch });
  let appended = 0;
  let cpu: number;
  let rssMB: number;
  try {
    const rand = rng(5);
    const total = INITIAL + seconds * perSec;
    // every run appends once per period, the runs spread evenly over it
    const periodMs = 1000 / perSec;
    const t0 = performance.now();
    const cpu0 = cpuSeconds();
    for (let tick = 0; tick < seconds * perSec; tick++) {
      for (let i = 0; i < runs; i++) {
        const due = t0 + tick * periodMs + (i * periodMs) / runs;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        const step = INITIAL + tick + 1;
        sent.set(`${i}:${step}`, performance.now());
        appendFileSync(paths[i]!, learningLogLine(step, total, rand));
        appended++;
      }
    }
    const deadline = performance.now() + 5000;
    while (sent.size > 0 && performance.now() < deadline) await sleep(50);
    cpu = (cpuSeconds() - cpu0) / ((performance.now() - t0) / 1000);
    rssMB = process.memoryUsage().rss / 2 ** 20;
  } finally {
    await app.stop();
  }
  const lat = [...latencies, ...[...sent.keys()].map(() => Infinity)].sort((a, b) => a - b);

  // 2. `idleRuns` runs that do not grow
  const idleRoot = join(dir, 'idle');
  const idleRuns = opts.idleRuns ?? 1000;
  const idleSeconds = opts.idleSeconds ?? 10;
  makeRuns(idleRoot, idleRuns);
  const idleApp = await startApp({ config, dbPath: join(dir, 'idle.db'), roots: [idleRoot], log: silentLog, terminal: null });
  let idle: LiveScaleResult['idle'];
  try {
    await sleep(2000); // past the catch-up
    const c0 = cpuSeconds();
    const t0 = performance.now();
    await sleep(idleSeconds * 1000);
    idle = {
      runs: idleRuns,
      seconds: idleSeconds,
      cpu: (cpuSeconds() - c0) / ((performance.now() - t0) / 1000),
      rssMB: process.memoryUsage().rss / 2 ** 20,
    };
  } finally {
    await idleApp.stop();
  }
  rmSync(dir, { recursive: true, force: true });
  return {
    runs,
    perSec,
    seconds,
    appended,
    committed: latencies.length,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
    cpu,
    rssMB,
    idle,
  };
}
