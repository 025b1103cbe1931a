/**
 * Failure events end to end: real-shaped console logs appended to real files, read by the real ingestor
 * into a real SQLite file, evaluated by the engine with the GRPO preset. The clock (Date, which the store
 * and the engine read) is faked: minutes pass without sleeping.
 */
import { appendFileSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../../src/engine/engine.ts';
import { isFinished } from '../../src/engine/finished.ts';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent, realLogsDir } from '../helpers.ts';

const T0 = Date.UTC(2025, 0, 1, 3, 0, 0);
const MIN = 60_000;
const ESC = '\x1b';

let root: string;
let store: Store;
let engine: Engine;
let ingestor: Ingestor;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
  ({
    dir: root,
    store,
    engine,
    ingestor,
  } = pipeline({
    ingest: { maxLineBytes: 1 << 20, examplesPerStep: 2 },
    // watching live, as `start` does once the (here empty) tree was read
    engine: { repeatIntervalMs: 4 * 60 * MIN, targets: ['console'], caughtUp: true },
  }));
});
afterEach(() => {
  store.close();
  vi.useRealTimers();
});

const runsDir = (): string => join(root, 'runs');
const logOf = (run: string, name: string): string => ensureParent(join(runsDir(), run, name));
/** appends lines to the log and reads them as the watcher would */
async function write(path: string, lines: readonly string[]): Promise<void> {
  appendFileSync(path, lines.map((l) => `${l}\n`).join(''));
  utimesSync(path, new Date(), new Date()); // the file's clock is the test's clock too
  await ingestor.ingest(path, runsDir());
}
const pass = (ms: number): void => void vi.setSystemTime(Date.now() + ms);
const runId = (name: string): number => store.runs.byName(name)!.id;
const alertsOf = (name: string) => store.alerts.list({ runId: runId(name), all: true }).reverse();
const items = (): NotificationItem[] =>
  store.outbox.pending('console', 1000).flatMap((r) => (JSON.parse(r.payload) as Notification).items);
const fired = (rule: string) => items().filter((i) => i.kind === 'firing' && i.rule === rule);

const trlDict = (
  i: number,
  loss: string | number = (0.01 * i).toFixed(4),
  grad: string | number = 0.5 + i / 100,
): string =>
  `{'loss': ${loss}, 'grad_norm': ${grad}, 'learning_rate': 9.8e-07, 'completions/mean_length': 212.5, ` +
  `'reward': ${(0.3 + i / 100).toFixed(3)}, 'reward_std': 0.31, 'frac_reward_zero_std': 0.1, 'kl': 0.0004, 'entropy': 0.61, 'epoch': ${(i / 50).toFixed(2)}}`;
const tqdm = (i: number): string => ` ${i * 2}%|██        | ${i}/50 [0${i}:02<09:18, 12.4s/it]`;
const verlLines = (from: number, n: number): string[] => Array.from({ length: n }, (_, k) => verlStep(from + k));
const verlStep = (step: number): string =>
  `${ESC}[36m(TaskRunner pid=2231)${ESC}[0m step:${step} - actor/pg_loss:0.012 - actor/grad_norm:0.31 - ` +
  `critic/score/mean:${(0.2 + step / 100).toFixed(3)} - actor/entropy:0.61 - response_length/mean:312.0`;

describe('run_crashed', () => {
  it('a TRL run that dies of CUDA OOM mid-step pages at once with the exception line and the 20 lines before it', async () => {
    const log = logOf('trl-oom', 'train.log');
    const healthy = Array.from({ length: 10 }, (_, i) => [tqdm(i + 1), trlDict(i + 1)]).flat();
    await write(log, healthy);
    const trace = [
      'Traceback (most recent call last):',
      '  File "/workspace/open-r1/src/open_r1/grpo.py", line 286, in <module>',
      '    main(script_args, training_args, model_args)',
      '  File "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1024, in _generate_and_score_completions',
      '    logits = self._get_per_token_logps(model, input_ids, attention_mask, logits_to_keep)',
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity of 79.25 GiB of which 3.1 GiB is free.',
    ];
    await write(log, [tqdm(11), ...trace]);
    const [crash] = fired('run_crashed');
    expect(crash).toMatchObject({
      severity: 'critical',
      step: 10,
      summary: expect.stringMatching(/^CUDA out of memory: Tried to allocate 7\.42 GiB/),
    });
    const lines = [...healthy, tqdm(11), ...trace];
    expect(lines.length).toBeGreaterThan(21);
    expect(crash!.evidence).toEqual({ title: 'the log up to the error (last 21 lines)', lines: lines.slice(-21) });
    expect(alertsOf('trl-oom').map((a) => `${a.rule} ${a.state}`)).toEqual(['run_crashed firing']);
  });

  it('a verl run with an NCCL watchdog timeout in a Ray actor line pages at once', async () => {
    const log = logOf('verl-nccl', 'verl_demo.log');
    await write(log, [verlStep(1), verlStep(2)]);
    await write(log, [
      `${ESC}[36m(WorkerDict pid=3301, ip=10.1.2.3)${ESC}[0m [rank3]:[E1122 03:14:07.123456 3301 ProcessGroupNCCL.cpp:616] [Rank 3] ` +
        'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLGATHER, NumelIn=1, NumelOut=8, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.',
    ]);
    const [crash] = fired('run_crashed');
    expect(crash).toMatchObject({ summary: 'NCCL watchdog timeout', step: 2 });
    expect(crash!.evidence!.lines.at(-1)).toMatch(
      /^\(WorkerDict pid=3301, ip=10\.1\.2\.3\) \[rank3\]:\[E1122 .*Watchdog caught/,
    );
    expect(crash!.evidence!.lines.join('\n')).not.toContain(ESC);
  });

  it('a torchrun ChildFailedError pages at once', async () => {
    const log = logOf('torchrun', 'nohup.out');
    await write(log, [trlDict(1), trlDict(2)]);
    await write(log, [
      'W1122 03:10:01.000000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 142 closing signal SIGTERM',
      'Traceback (most recent call last):',
      '  File "/usr/local/bin/torchrun", line 8, in <module>',
      '    sys.exit(main())',
      'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ',
      '============================================================',
      'train_grpo.py FAILED',
    ]);
    expect(fired('run_crashed').map((i) => i.summary)).toEqual([
      'torchrun: a worker process failed (ChildFailedError)',
    ]);
  });

  it('a SLURM preemption or time limit pages at once, saying which', async () => {
    const log = logOf('slurm-preempted', 'slurm-6231820.out');
    await write(log, [verlStep(1), verlStep(2)]);
    await write(log, [
      'slurmstepd: error: *** JOB 6231820 ON gpu-node-17 CANCELLED AT 2025-11-22T03:14:07 DUE TO PREEMPTION ***',
    ]);
    const timed = logOf('slurm-timed-out', 'slurm-6231821.out');
    await write(timed, [verlStep(1)]);
    await write(timed, [
      'slurmstepd: error: *** STEP 6231821.0 ON gpu-node-3 CANCELLED AT 2025-11-22T09:00:01 DUE TO TIME LIMIT ***',
    ]);
    expect(fired('run_crashed').map((i) => `${i.summary} @${i.step}`)).toEqual([
      'SLURM: job preempted @2',
      'SLURM: job time limit reached @1',
    ]);
  });

  it('a traceback the job survives does not page; one followed by silence does, after the grace', async () => {
    const log = logOf('verl-survives', 'verl_demo.log');
    const trace = [
      `${ESC}[36m(CursorLoopWorker pid=57720)${ESC}[0m ERROR:2026-03-26 22:04:09,281:Traceback (most recent call last):`,
      `${ESC}[36m(CursorLoopWorker pid=57720)${ESC}[0m   File "/cursor/env_and_state.py", line 282, in _extract_action`,
      `${ESC}[36m(CursorLoopWorker pid=57720)${ESC}[0m TypeError: cannot unpack non-iterable NoneType object`,
    ];
    await write(log, [verlStep(1), ...trace]);
    for (let step = 2; step <= 8; step++) {
      pass(40_000);
      engine.tick();
      await write(log, [verlStep(step)]);
    }
    pass(90_000);
    engine.tick();
    expect(alertsOf('verl-survives').filter((a) => a.rule === 'run_crashed')).toEqual([]);

    await write(log, trace); // again, and this time the job dies with it
    pass(MIN);
    engine.tick();
    expect(fired('run_crashed')).toEqual([]);
    pass(MIN + 1000);
    engine.tick();
    const [crash] = fired('run_crashed');
    expect(crash).toMatchObject({
      severity: 'critical',
      summary: 'TypeError: cannot unpack non-iterable NoneType object (nothing written for 2m since)',
    });
    expect(crash!.evidence!.lines.at(-1)).toBe(
      '(CursorLoopWorker pid=57720) TypeError: cannot unpack non-iterable NoneType object',
    );
  });
});

describe('the events table', () => {
  it('files each event under the latest step logged before its line, in the batch that read it', async () => {
    const log = logOf('trl-steps', 'train.log');
    const results: number[] = [];
    const counting = new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 }, (e) => {
      if (e.kind === 'batch') results.push(e.result.events);
    });
    appendFileSync(
      log,
      `${[trlDict(1), 'Killed', trlDict(2), trlDict(3), 'node1:1:2 [0] NCCL WARN Cuda failure'].join('\n')}\n`,
    );
    await counting.ingest(log, runsDir());
    const rows = store.db.prepare('SELECT step, kind, title FROM events ORDER BY id').all();
    expect(rows).toEqual([
      { step: 1, kind: 'error', title: 'Killed (out of host memory, or by the scheduler)' },
      { step: 3, kind: 'warning', title: 'NCCL warning' },
    ]);
    expect(results).toEqual([2]);
  });

  it('keeps one copy of a run fact that a rewritten file repeats', async () => {
    const log = logOf('verl-meta', 'verl_demo.log');
    await write(log, [verlStep(1)]);
    const run = store.runs.byName('verl-meta')!;
    const file = store.files.ofRun(run.id)[0]!;
    const meta = {
      kind: 'meta' as const,
      step: 1,
      title: 'total steps',
      text: 'total_steps: 9',
      values: { total_steps: 9 },
    };
    store.events.write(run.id, file.id, [meta, meta, { ...meta, values: { total_steps: 10 } }], Date.now());
    expect(store.db.prepare(`SELECT vals FROM events WHERE kind = 'meta'`).pluck().all()).toEqual([
      '{"total_steps":9}',
      '{"total_steps":10}',
    ]);
    expect(store.events.meta(run.id)).toEqual({ total_steps: 10 });
  });
});

describe('non_finite', () => {
  it('a NaN loss and grad_norm at one step are one page, with each last finite value and its step, resolved after 5 finite records', async () => {
    const log = logOf('trl-nan', 'train.log');
    await write(log, [trlDict(1), trlDict(2), trlDict(3)]);
    await write(log, [trlDict(4, 'nan', 'nan')]);
    expect(fired('non_finite').map((i) => i.summary)).toEqual([
      'loss is nan at step 4 (last finite 0.03 at step 3); grad_norm is nan at step 4 (last finite 0.53 at step 3)',
    ]);
    await write(
      log,
      [5, 6, 7, 8].map((i) => trlDict(i)),
    );
    expect(alertsOf('trl-nan').map((a) => a.state)).toEqual(['firing']);
    await write(log, [trlDict(9)]);
    expect(alertsOf('trl-nan').map((a) => [a.rule, a.state, a.resolved_step])).toEqual([['non_finite', 'resolved', 9]]);
  });

  it('an infinite grad_norm fires too', async () => {
    const log = logOf('trl-inf', 'train.log');
    await write(log, [trlDict(1), trlDict(2, 0.02, 'inf')]);
    expect(fired('non_finite').map((i) => i.summary)).toEqual([
      'grad_norm is inf at step 2 (last finite 0.51 at step 1)',
    ]);
  });
});

describe('run_finished', () => {
  it('a TRL run that finishes normally gets one summary card and no stall afterwards', async () => {
    const log = logOf('trl-done', 'train.log');
    await write(log, [trlDict(1), trlDict(2), trlDict(3, 0.01)]);
    pass(30_000);
    await write(log, [
      "{'train_runtime': 612.3, 'train_samples_per_second': 1.307, 'train_steps_per_second': 0.082, 'train_loss': 0.0061, 'epoch': 1.0}",
    ]);
    expect(isFinished(store, runId('trl-done'))).toBe(true);
    for (let t = 0; t < 6; t++) {
      pass(10 * MIN);
      engine.tick();
    }
    const said = items().filter((i) => i.rule === 'run_finished' || i.rule === 'run_stalled');
    expect(said.map((i) => `${i.kind} ${i.rule}`)).toEqual(['firing run_finished']);
    const card = said[0]!;
    expect(card.metric).toBe('reward');
    expect(card.finished).toMatchObject({
      durationMs: 612_300,
      firstStep: 1,
      finalReward: { step: 3, value: 0.33 },
      bestReward: { step: 3, value: 0.33 },
    });
    // the summary dict is the end of the run, not a step: the last step is the third dict's
    expect(card.summary).toBe('training finished at step 3 in 10m 12s; reward 0.33');
  });

  it('(control: the same run without its summary is reported as stalled)', async () => {
    const log = logOf('trl-hung', 'train.log');
    await write(log, [trlDict(1), trlDict(2), trlDict(3, 0.01)]);
    for (let t = 0; t < 6; t++) {
      pass(10 * MIN);
      engine.tick();
    }
    expect(isFinished(store, runId('trl-hung'))).toBe(false);
    expect(fired('run_stalled')).toHaveLength(1);
  });

  it("verl's last step at its announced total steps finishes the run", async () => {
    const log = logOf('verl-done', 'verl_demo.log');
    await write(log, [verlStep(1), verlStep(2)]);
    const run = store.runs.byName('verl-done')!;
    const file = store.files.ofRun(run.id)[0]!;
    // what the formats branch's console parser emits for verl's "Total training steps: 3"
    store.commit(
      {
        runId: run.id,
        fileId: file.id,
        metrics: [],
        examples: [],
        events: [
          { kind: 'meta', step: 0, title: 'total steps', text: 'Total training steps: 3', values: { total_steps: 3 } },
        ],
        skips: new Map(),
        progress: { ...fileProgress(file.path), seq: 0, lines: 0, records: 0 },
      },
      2,
    );
    await write(log, [verlStep(3)]);
    expect(fired('run_finished').map((i) => i.summary)).toEqual(['training finished at step 3; reward 0.23']);
  });
});

function fileProgress(path: string) {
  const st = statSync(path);
  return { dev: st.dev, ino: st.ino, offset: st.size, size: st.size, mtimeMs: st.mtimeMs };
}

describe('trainer_warning', () => {
  it('a repeating warning is one incident with its line', async () => {
    const log = logOf('trl-kl', 'train.log');
    await write(log, [trlDict(1)]);
    const warn =
      '/trl/trainer/ppo_trainer.py:812: UserWarning: KL divergence is starting to become negative: -0.02 - this might be a precursor for failed training.';
    await write(log, [warn, trlDict(2), warn, trlDict(3), warn]);
    const said = fired('trainer_warning');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({
      severity: 'warning',
      summary: 'KL divergence is negative',
      evidence: { lines: [warn] },
    });
  });
});

describe('finished runs', () => {
  it('a segfault in teardown after the summary is not a crash', async () => {
    const log = logOf('trl-exit', 'train.log');
    await write(log, [trlDict(1), trlDict(2), "{'train_runtime': 61.2, 'train_loss': 0.01, 'epoch': 1.0}"]);
    await write(log, ['Fatal Python error: Segmentation fault', 'Segmentation fault (core dumped)']);
    expect(fired('run_crashed')).toEqual([]);
    expect(fired('run_finished')).toHaveLength(1);
  });
});

describe('trainer_warning resolution', () => {
  it('resolves once the run has gone 20 steps without that warning', async () => {
    const log = logOf('verl-dapo', 'verl_demo.log');
    await write(log, [
      verlStep(1),
      `${ESC}[36m(TaskRunner pid=9)${ESC}[0m num_gen_batches=3. Generated too many. Keep generating...`,
    ]);
    await write(log, verlLines(2, 19));
    expect(alertsOf('verl-dapo').map((a) => a.state)).toEqual(['firing']);
    await write(log, [verlStep(21)]);
    expect(alertsOf('verl-dapo').map((a) => [a.rule, a.state, a.resolved_step])).toEqual([
      ['trainer_warning', 'resolved', 21],
    ]);
  });
});

describe('real logs', () => {
  it('backfilling every run in ../shared/real-logs raises one critical alert from the failure rules: the job that died', async () => {
    const real = realLogsDir();
    expect(readdirSync(real).length).toBeGreaterThan(5);
    // as `rlwatch backfill` does: the history is evaluated without announcing, then one tick
    const history = new Ingestor(store, { maxLineBytes: 1 << 23, examplesPerStep: 2 }, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId, false);
    });
    await backfill(history, [real], { depth: 8 });
    pass(2 * MIN + 1000);
    engine.tick();
    const ours = new Set(['run_crashed', 'non_finite', 'run_finished', 'trainer_warning']);
    const alerts = store.alerts.list({ all: true }).filter((a) => ours.has(a.rule));
    // logic-rl-verl-crash ends in `AssertionError: failed to get register_center_actor` before step 1
    const crashed = store.runs.byName('logic-rl-verl-crash')!.id;
    expect(alerts.filter((a) => a.severity === 'critical').map((a) => [a.run_id, a.rule])).toEqual([
      [crashed, 'run_crashed'],
    ]);
    // the GUI-cursor run's surviving tracebacks were read, and held rather than paged
    expect(store.db.prepare(`SELECT count(*) FROM events WHERE kind = 'error'`).pluck().get()).toBeGreaterThan(0);
  });
});
