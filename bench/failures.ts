/**
 * Failure-event scenarios: crash, OOM, NCCL timeout, torchrun failure, NaN, finish, and healthy runs.
 *
 * Live part: `rlwatch start` (startApp: the watcher, ingest, store, engine) over a root of console logs in
 * TRL's and verl's shapes. Each run gets a healthy backlog, then lines appended live; for an incident run
 * the bench times the wall clock from appending the event's line to the alert row existing (checked
 * after each committed batch). Target: under 1 s for fatal lines and NaN.
 * Grace part: a non-fatal traceback is held until the run goes quiet, so its latency is the grace (2 min)
 * plus the engine's tick; it is measured on an injected clock (Ingestor + Engine over real files), against
 * a run that survives the same traceback and keeps writing.
 * Healthy part: the healthy live runs, and every run of ../shared/real-logs backfilled, must raise no
 * critical alert from the failure rules.
 *
 * A report, not a test. Alone: `node --import tsx bench/failures.ts`; also run by `npm run bench`.
 */
import { appendFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startApp } from '../src/app/start.ts';
import { ConfigSchema } from '../src/config/schema.ts';
import { Engine } from '../src/engine/engine.ts';
import { GRPO_PRESET } from '../src/engine/presets/grpo.ts';
import { RuleBook } from '../src/engine/rules.ts';
import { backfill } from '../src/ingest/backfill.ts';
import { Ingestor } from '../src/ingest/ingestor.ts';
import { silentLog } from '../src/lib/log.ts';
import { Store } from '../src/store/sqlite/store.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REAL_LOGS = join(BENCH_DIR, '../../shared/real-logs');
export const TARGET_FATAL_MS = 1000;
/** the preset's grace plus what the app's tick (src/app/start.ts, 10 s) may add */
export const TARGET_GRACE_MS = 2 * 60_000 + 10_000;
const FAILURE_RULES = new Set(['run_crashed', 'non_finite', 'run_finished', 'trainer_warning']);
const ESC = '\x1b';

// ------------------------------------------------------------------------------------------ traces

const trlDict = (i: number, loss = (0.02 - i / 5000).toFixed(4), grad = (0.4 + (i % 7) / 50).toFixed(3)): string =>
  `{'loss': ${loss}, 'grad_norm': ${grad}, 'learning_rate': 9.8e-07, 'completions/mean_length': 212.5, ` +
  `'reward': ${(0.3 + i / 400).toFixed(3)}, 'reward_std': 0.31, 'frac_reward_zero_std': 0.05, 'kl': 0.0004, ` +
  `'entropy': 0.61, 'epoch': ${(i / 1000).toFixed(3)}}`;
const tqdm = (i: number): string => ` ${Math.floor(i / 10)}%|█         | ${i}/1000 [0${i % 10}:02<09:18, 12.4s/it]`;
const verlStep = (s: number): string =>
  `${ESC}[36m(TaskRunner pid=2231)${ESC}[0m step:${s} - actor/pg_loss:0.012 - actor/grad_norm:0.31 - ` +
  `critic/score/mean:${(0.2 + s / 1000).toFixed(3)} - actor/entropy:0.61 - response_length/mean:312.0`;
const trlLines = (from: number, n: number): string[] =>
  Array.from({ length: n }, (_, k) => [tqdm(from + k), trlDict(from + k)]).flat();
const verlLines = (from: number, n: number): string[] => Array.from({ length: n }, (_, k) => verlStep(from + k));

interface LiveScenario {
  name: string;
  kind: 'trl' | 'verl';
  /** the lines that carry the event, appended at once after the healthy part; none for a healthy run */
  event: string[];
  rule: string | null;
}

const OOM = [
  'Traceback (most recent call last):',
  '  File "/workspace/open-r1/src/open_r1/grpo.py", line 286, in <module>',
  '    main(script_args, training_args, model_args)',
  '  File "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1024, in _generate_and_score_completions',
  '    logits = self._get_per_token_logps(model, input_ids, attention_mask, logits_to_keep)',
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity of 79.25 GiB of which 3.1 GiB is free.',
];
const SCENARIOS: readonly LiveScenario[] = [
  { name: 'healthy-trl', kind: 'trl', event: [], rule: null },
  { name: 'healthy-verl', kind: 'verl', event: [], rule: null },
  { name: 'oom', kind: 'trl', event: OOM, rule: 'run_crashed' },
  {
    name: 'nccl-timeout',
    kind: 'verl',
    event: [
      `${ESC}[36m(WorkerDict pid=3301, ip=10.1.2.3)${ESC}[0m [rank3]:[E1122 03:14:07.123456 3301 ProcessGroupNCCL.cpp:616] ` +
        '[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLGATHER) ran for 600043 milliseconds before timing out.',
    ],
    rule: 'run_crashed',
  },
  {
    name: 'child-failed',
    kind: 'trl',
    event: [
      'Traceback (most recent call last):',
      '  File "/usr/local/bin/torchrun", line 8, in <module>',
      'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ',
    ],
    rule: 'run_crashed',
  },
  {
    name: 'killed',
    kind: 'trl',
    event: ['/var/spool/slurmd/job42/slurm_script: line 17: 90210 Killed   python train.py'],
    rule: 'run_crashed',
  },
  { name: 'nan-loss', kind: 'trl', event: [trlDict(61, 'nan', 'nan')], rule: 'non_finite' },
  {
    name: 'finish',
    kind: 'trl',
    event: [
      "{'train_runtime': 612.3, 'train_samples_per_second': 1.307, 'train_steps_per_second': 0.082, 'train_loss': 0.0061, 'epoch': 1.0}",
    ],
    rule: 'run_finished',
  },
];

export interface LiveFailureResult {
  name: string;
  rule: string | null;
  /** append of the event's line -> its alert row; null: never (within 5 s) */
  ms: number | null;
  /** critical alerts of runs or rules other than the expected one */
  falsePages: string[];
}

export interface FailureReport {
  date: string;
  live: LiveFailureResult[];
  grace: { crashMs: number | null; survivedPages: number };
  /** the runs that died without their run_crashed, and the critical alerts of the failure rules beside those */
  realLogs: { runs: number; crashesMissed: string[]; criticalFromFailureRules: string[] };
  pass: boolean;
}

/** Healthy backlog, then per scenario: 20 healthy records appended live, then the event lines. */
async function live(dir: string): Promise<LiveFailureResult[]> {
  const root = join(dir, 'runs');
  const pathOf = (s: LiveScenario): string => join(root, s.name, s.kind === 'trl' ? 'train.log' : 'verl_demo.log');
  for (const s of SCENARIOS) {
    mkdirSync(dirname(pathOf(s)), { recursive: true });
    const backlog = s.kind === 'trl' ? trlLines(1, 40) : verlLines(1, 40);
    writeFileSync(pathOf(s), `${backlog.join('\n')}\n`);
  }
  let check: (() => void) | null = null;
  const app = await startApp({
    config: ConfigSchema.parse({}),
    dbPath: join(dir, 'failures.db'),
    roots: [root],
    log: silentLog,
    terminal: null,
    onBatch: () => check?.(),
  });
  const results: LiveFailureResult[] = [];
  try {
    for (const s of SCENARIOS) {
      const path = pathOf(s);
      for (const line of s.kind === 'trl' ? trlLines(41, 20) : verlLines(41, 20)) {
        appendFileSync(path, `${line}\n`);
        await sleep(5);
      }
      if (s.rule === null) continue;
      const runId = (): number | undefined => app.store.runs.byName(s.name)?.id;
      let firedAt: number | null = null;
      const done = new Promise<void>((resolveDone) => {
        check = () => {
          const id = runId();
          if (firedAt !== null || id === undefined) return;
          if (app.store.alerts.list({ runId: id }).some((a) => a.rule === s.rule)) {
            firedAt = performance.now();
            resolveDone();
          }
        };
      });
      const t0 = performance.now();
      appendFileSync(path, `${s.event.join('\n')}\n`);
      await Promise.race([done, sleep(5000)]);
      check = null;
      results.push({
        name: s.name,
        rule: s.rule,
        ms: firedAt === null ? null : (firedAt as number) - t0,
        falsePages: [],
      });
    }
    await sleep(300);
    // false pages: any critical alert of a healthy run, or of another rule than the scenario's
    for (const s of SCENARIOS) {
      const id = app.store.runs.byName(s.name)?.id;
      const wrong =
        id === undefined
          ? []
          : app.store.alerts
              .list({ runId: id, all: true })
              .filter((a) => a.severity === 'critical' && a.rule !== s.rule);
      const row =
        results.find((r) => r.name === s.name) ??
        (results.push({ name: s.name, rule: null, ms: null, falsePages: [] }), results[results.length - 1]!);
      row.falsePages = wrong.map((a) => `${a.rule}@${a.fired_step}`);
    }
  } finally {
    await app.stop();
  }
  return results;
}

/** A traceback the job dies of (then silence) against one it survives (lines every 30 s), on an injected
 * clock: Date.now, which the store's activity clock and the engine read, runs ahead by `offset`. */
async function grace(dir: string): Promise<FailureReport['grace']> {
  const realNow = Date.now;
  let offset = 0;
  Date.now = () => realNow() + offset;
  try {
    return await graceOnClock(dir, () => (offset += 10_000));
  } finally {
    Date.now = realNow;
  }
}

async function graceOnClock(dir: string, tickClock: () => void): Promise<FailureReport['grace']> {
  const store = Store.open(join(dir, 'grace.db'));
  const now = (): number => Date.now();
  const engine = new Engine(store, RuleBook.build(GRPO_PRESET, []), {
    repeatIntervalMs: 4 * 3_600_000,
    targets: ['console'],
  });
  const ingestor = new Ingestor(store, { maxLineBytes: 1 << 23, examplesPerStep: 2 }, (e) => {
    if (e.kind === 'batch') engine.evaluate(e.result.runId);
  });
  const root = join(dir, 'grace');
  const trace = [
    `${ESC}[36m(WorkerDict pid=71)${ESC}[0m Traceback (most recent call last):`,
    `${ESC}[36m(WorkerDict pid=71)${ESC}[0m   File "/verl/workers/rollout/vllm_rollout.py", line 210, in generate_sequences`,
    `${ESC}[36m(WorkerDict pid=71)${ESC}[0m RuntimeError: CUDA error: an illegal memory access was encountered`,
  ];
  const write = async (run: string, lines: string[]): Promise<void> => {
    const path = join(root, run, 'verl_demo.log');
    mkdirSync(dirname(path), { recursive: true });
    appendFileSync(path, `${lines.join('\n')}\n`);
    await ingestor.ingest(path, root);
  };
  await write('dies', [...verlLines(1, 10), ...trace]);
  await write('survives', [...verlLines(1, 10), ...trace]);
  let crashMs: number | null = null;
  const t0 = now();
  for (let tick = 1; tick <= 60; tick++) {
    tickClock(); // 10 s: the app's tick
    if (tick % 3 === 0) await write('survives', verlLines(10 + tick / 3, 1));
    engine.tick();
    const dies = store.runs.byName('dies')!.id;
    if (crashMs === null && store.alerts.list({ runId: dies }).some((a) => a.rule === 'run_crashed'))
      crashMs = now() - t0;
  }
  const survives = store.runs.byName('survives')!.id;
  const survivedPages = store.alerts
    .list({ runId: survives, all: true })
    .filter((a) => a.severity === 'critical').length;
  store.close();
  return { crashMs, survivedPages };
}

/** The corpus's runs whose job really died (its SOURCES.md): a verl job that failed before its first step. */
const CRASHED_RUNS = ['logic-rl-verl-crash'];

/** Every run of ../shared/real-logs backfilled as `rlwatch backfill` does: run_crashed on each run that died, and no
 * other critical alert from the failure rules. */
async function realLogs(dir: string): Promise<FailureReport['realLogs']> {
  if (!existsSync(REAL_LOGS))
    return { runs: 0, crashesMissed: [], criticalFromFailureRules: ['../shared/real-logs not found'] };
  const store = Store.open(join(dir, 'real.db'));
  const engine = new Engine(store, RuleBook.build(GRPO_PRESET, []), {
    repeatIntervalMs: 4 * 3_600_000,
    targets: ['console'],
  });
  const ingestor = new Ingestor(store, { maxLineBytes: 1 << 23, examplesPerStep: 2 }, (e) => {
    if (e.kind === 'batch') engine.evaluate(e.result.runId, false);
  });
  const summary = await backfill(ingestor, [REAL_LOGS], { depth: 8 });
  engine.tick();
  const pages = store.alerts
    .list({ all: true })
    .filter((a) => FAILURE_RULES.has(a.rule) && a.severity === 'critical')
    .map((a) => ({ run: store.runs.byId(a.run_id)?.name ?? '?', rule: a.rule, summary: a.summary }));
  store.close();
  const expected = (p: { run: string; rule: string }) => p.rule === 'run_crashed' && CRASHED_RUNS.includes(p.run);
  return {
    runs: summary.runs.length,
    crashesMissed: CRASHED_RUNS.filter((run) => !pages.some((p) => p.run === run && expected(p))),
    criticalFromFailureRules: pages.filter((p) => !expected(p)).map((p) => `${p.run}: ${p.rule} ${p.summary}`),
  };
}

export async function runFailureBench(opts: { outDir: string }): Promise<FailureReport> {
  const dir = join(opts.outDir, 'failures');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const liveResults = await live(dir);
  const graceResult = await grace(dir);
  const real = await realLogs(dir);
  rmSync(dir, { recursive: true, force: true });
  const pass =
    liveResults.every(
      (r) => (r.rule === null || (r.ms !== null && r.ms < TARGET_FATAL_MS)) && r.falsePages.length === 0,
    ) &&
    graceResult.crashMs !== null &&
    graceResult.crashMs <= TARGET_GRACE_MS &&
    graceResult.survivedPages === 0 &&
    real.crashesMissed.length === 0 &&
    real.criticalFromFailureRules.length === 0;
  const report: FailureReport = {
    date: new Date().toISOString(),
    live: liveResults,
    grace: graceResult,
    realLogs: real,
    pass,
  };
  writeFileSync(join(opts.outDir, 'failures.json'), `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

export function formatFailureReport(r: FailureReport): string {
  const out = [`failure events — line appended → alert, live through rlwatch start (target < ${TARGET_FATAL_MS} ms)`];
  for (const x of r.live) {
    const t = x.rule === null ? 'healthy' : x.ms === null ? 'never' : `${x.ms.toFixed(0)} ms`;
    out.push(
      `  ${x.name.padEnd(14)} ${(x.rule ?? '—').padEnd(14)} ${t.padEnd(9)} false pages: ${x.falsePages.length === 0 ? 0 : x.falsePages.join(', ')}`,
    );
  }
  const g = r.grace;
  out.push(
    `  crash (traceback, then silence): ${g.crashMs === null ? 'never' : `${(g.crashMs / 1000).toFixed(0)} s`} on the injected clock ` +
      `(grace 2 min + tick, ≤ ${TARGET_GRACE_MS / 1000} s); the same traceback survived: ${g.survivedPages} pages`,
  );
  out.push(
    `  real logs: ${r.realLogs.runs} runs backfilled; the ${CRASHED_RUNS.length} that died raised run_crashed: ` +
      `${r.realLogs.crashesMissed.length === 0 ? 'yes' : `no (${r.realLogs.crashesMissed.join(', ')})`}; ` +
      `other critical alerts from the failure rules: ${r.realLogs.criticalFromFailureRules.length}`,
  );
  for (const b of r.realLogs.criticalFromFailureRules) out.push(`    ${b}`);
  out.push(`  ${r.pass ? 'PASS' : 'FAIL'}`);
  return out.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const report = await runFailureBench({ outDir: join(BENCH_DIR, 'out') });
  process.stdout.write(`\n${formatFailureReport(report)}\n`);
  process.exit(0);
}
