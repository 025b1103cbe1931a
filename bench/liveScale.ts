/**
 * Live at scale, as a user runs it: the real `rlwatch start` (bin/rlwatch, the bundle `npm ci` builds) in its own
 * process, no chat tokens, watching `runs` runs that this process appends a learning.log line to `perSec` times a
 * second each. A line counts as committed once its run's `last_step`, polled here every POLL_MS through a
 * read-only connection, reaches it: latencies are exact to POLL_MS. CPU and RSS are the child's own, read from
 * /proc, so neither the appends nor the polling are in them. Then the floor of the same stream (bench/bareLive.ts),
 * whose CPU per line ours is reported against, and `idleRuns` runs that do not grow, the same way as the first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { BareLiveResult } from './bareLive.ts';
import { learningLogLine, rng, writeLearningLog } from './generate.ts';
import { percentile } from './live.ts';
import { bareEnv, cpuSeconds, jsonOfChild, rssMB } from './proc.ts';

export const LIVE_SCALE_P99_TARGET_MS = 50;
export const LIVE_SCALE_CPU_TARGET = 0.5;
export const IDLE_CPU_TARGET = 0.05;
export const IDLE_RSS_TARGET_MB = 200;

const POLL_MS = 5;
/** the lines each run has logged before the appending starts (bench/bareLive.ts, bench/liveStatements.ts alike) */
export const INITIAL = 20;
/** files per transaction: what the watcher's gathering gives at 100 runs x 5 lines/s (the bare floor and the
 * statement count read them so) */
export const FILES_PER_TX = 5;
const RLWATCH = join(import.meta.dirname, '..', 'bin', 'rlwatch');

export interface LiveScaleResult {
  runs: number;
  perSec: number;
  seconds: number;
  appended: number;
  committed: number;
  pollMs: number;
  p50Ms: number;
  p99Ms: number;
  /** the rlwatch process's CPU seconds per wall second over the appending window (1 = one core) */
  cpu: number;
  /** the same per line appended, in microseconds */
  cpuPerLineUs: number;
  /** the floor of the same stream (bench/bareLive.ts), run after it: its CPU per line, and ours ÷ it */
  bare: { cpuPerLineUs: number; ratio: number };
  rssMB: number;
  idle: { runs: number; seconds: number; cpu: number; rssMB: number };
}

/** `n` runs under `root`, `run0000/learning.log` on, each with INITIAL lines: their logs' paths. */
export function makeRuns(root: string, n: number): string[] {
  const paths: string[] = [];
  for (let i = 0; i < n; i++) {
    const path = join(root, `run${String(i).padStart(4, '0')}`, 'learning.log');
    mkdirSync(join(path, '..'), { recursive: true });
    writeLearningLog(path, INITIAL);
    paths.push(path);
  }
  return paths;
}

/** `rlwatch --db DB start ROOT` as a user starts it, in a directory without rlwatch.yaml or .env, no chat tokens. */
class Watcher {
  readonly child: ChildProcess;
  private stderr = '';

  constructor(dir: string, root: string, profileTo?: string) {
    const db = join(dir, 'rlwatch.db');
    const env = bareEnv();
    const prof = profileTo ? ['--cpu-prof', '--cpu-prof-dir', profileTo] : [];
    this.child = spawn(process.execPath, [...prof, RLWATCH, '--db', db, 'start', root], {
      cwd: dir,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-2000)));
  }

  cpuSeconds(): number {
    return cpuSeconds(this.child.pid!);
  }

  rssMB(): number {
    return rssMB(this.child.pid!);
  }

  /** Resolves once every run's first INITIAL lines are committed (the catch-up). */
  async caughtUp(db: string, runs: number): Promise<void> {
    const deadline = performance.now() + 120_000;
    while (performance.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`rlwatch start exited ${this.child.exitCode}: ${this.stderr}`);
      if (existsSync(db)) {
        const reader = new Database(db, { readonly: true, fileMustExist: true });
        try {
          const done = reader.prepare('SELECT count(*) FROM runs WHERE last_step >= ?').pluck().get(INITIAL) as number;
          if (done >= runs) return;
        } catch {
          // tables not created yet
        } finally {
          reader.close();
        }
      }
      await sleep(100);
    }
    throw new Error(`rlwatch start did not catch up with ${runs} runs in 120 s: ${this.stderr}`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

export async function runLiveScale(opts: {
  dir: string;
  runs?: number;
  perSec?: number;
  seconds?: number;
  idleRuns?: number;
  idleSeconds?: number;
  /** a directory for V8 CPU profiles of the rlwatch processes */
  profileTo?: string;
}): Promise<LiveScaleResult> {
  const { dir } = opts;
  const runs = opts.runs ?? 100;
  const perSec = opts.perSec ?? 5;
  const seconds = opts.seconds ?? 20;
  rmSync(dir, { recursive: true, force: true });

  // 1. `runs` growing runs
  const busyDir = join(dir, 'busy');
  const root = join(busyDir, 'runs');
  const paths = makeRuns(root, runs);
  const watcher = new Watcher(busyDir, root, opts.profileTo);
  const db = join(busyDir, 'rlwatch.db');
  const sent: number[][] = paths.map(() => []); // per run: when each step after INITIAL was appended
  const seen = new Array<number>(runs).fill(INITIAL);
  const latencies: number[] = [];
  let appended = 0;
  let cpu: number;
  let cpuSeconds: number;
  let rssMB: number;
  try {
    await watcher.caughtUp(db, runs);
    const reader = new Database(db, { readonly: true, fileMustExist: true });
    const lastSteps = reader.prepare('SELECT name, last_step FROM runs');
    const poll = (): void => {
      const now = performance.now();
      for (const row of lastSteps.all() as Array<{ name: string; last_step: number }>) {
        const i = Number(row.name.replace(/^run/, ''));
        for (let s = seen[i]! + 1; s <= row.last_step; s++) {
          const at = sent[i]![s - INITIAL - 1];
          if (at !== undefined) latencies.push(now - at);
        }
        seen[i] = Math.max(seen[i]!, row.last_step);
      }
    };
    const poller = setInterval(poll, POLL_MS);
    try {
      const rand = rng(5);
      const total = INITIAL + seconds * perSec;
      const periodMs = 1000 / perSec; // every run appends once per period, the runs spread evenly over it
      const t0 = performance.now();
      const cpu0 = watcher.cpuSeconds();
      for (let tick = 0; tick < seconds * perSec; tick++) {
        for (let i = 0; i < runs; i++) {
          const due = t0 + tick * periodMs + (i * periodMs) / runs;
          const wait = due - performance.now();
          if (wait > 1) await sleep(wait);
          const step = INITIAL + tick + 1;
          sent[i]!.push(performance.now());
          appendFileSync(paths[i]!, learningLogLine(step, total, rand));
          appended++;
        }
      }
      const deadline = performance.now() + 5000;
      while (latencies.length < appended && performance.now() < deadline) await sleep(50);
      cpuSeconds = watcher.cpuSeconds() - cpu0;
      cpu = cpuSeconds / ((performance.now() - t0) / 1000);
      rssMB = watcher.rssMB();
    } finally {
      clearInterval(poller);
      reader.close();
    }
  } finally {
    await watcher.stop();
  }
  const lat = [...latencies, ...new Array<number>(appended - latencies.length).fill(Infinity)].sort((a, b) => a - b);
  const cpuPerLineUs = (cpuSeconds * 1e6) / appended;
  const bare = jsonOfChild<BareLiveResult>('bareLive.ts', [
    join(dir, 'bare'),
    String(runs),
    String(perSec),
    String(seconds),
  ]);

  // 2. `idleRuns` runs that do not grow
  const idleDir = join(dir, 'idle');
  const idleRoot = join(idleDir, 'runs');
  const idleRuns = opts.idleRuns ?? 1000;
  const idleSeconds = opts.idleSeconds ?? 10;
  makeRuns(idleRoot, idleRuns);
  const idleWatcher = new Watcher(idleDir, idleRoot, opts.profileTo);
  let idle: LiveScaleResult['idle'];
  try {
    await idleWatcher.caughtUp(join(idleDir, 'rlwatch.db'), idleRuns);
    await sleep(2000); // past the catch-up's last evaluations
    const c0 = idleWatcher.cpuSeconds();
    const t0 = performance.now();
    await sleep(idleSeconds * 1000);
    idle = {
      runs: idleRuns,
      seconds: idleSeconds,
      cpu: (idleWatcher.cpuSeconds() - c0) / ((performance.now() - t0) / 1000),
      rssMB: idleWatcher.rssMB(),
    };
  } finally {
    await idleWatcher.stop();
  }
  rmSync(dir, { recursive: true, force: true });
  return {
    runs,
    perSec,
    seconds,
    appended,
    committed: latencies.length,
    pollMs: POLL_MS,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
    cpu,
    cpuPerLineUs,
    bare: { cpuPerLineUs: bare.cpuPerLineUs, ratio: cpuPerLineUs / bare.cpuPerLineUs },
    rssMB,
    idle,
  };
}
