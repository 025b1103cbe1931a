/**
 * A backfill raises what `start` raises for the same bytes: a job that died (its log ends in a traceback of its own
 * process, nothing logged after it) and a finished run. Each log is read by the real Ingestor into a real SQLite file
 * with the GRPO preset: once as `rlwatch backfill` does (history evaluated without announcing, then one tick), once as
 * `start` watching it being written (appended in pieces, evaluated live, ticks as minutes pass on a faked clock).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Engine } from '../../src/engine/engine.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import type { AlertRow } from '../../src/store/alerts.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { ensureParent, realLogsDir, tempDir } from '../helpers.ts';

const T0 = Date.UTC(2025, 0, 1, 3, 0, 0);
const MIN = 60_000;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => vi.useRealTimers());

const pass = (ms: number): void => void vi.setSystemTime(Date.now() + ms);
const engineOf = (store: Store): Engine =>
  new Engine(store, RuleBook.build(GRPO_PRESET, []), { repeatIntervalMs: 4 * 60 * MIN, targets: ['console'] });

/** The alerts of the run that fired, oldest first, as [rule, summary]. */
function firedOf(store: Store, run: string): Array<[string, string]> {
  const id = store.runs.byName(run)!.id;
  return store.alerts
    .list({ runId: id, all: true })
    .reverse()
    .filter((a: AlertRow) => a.fired_step !== null)
    .filter((a) => a.rule === 'run_crashed' || a.rule === 'run_finished')
    .map((a) => [a.rule, a.summary]);
}

/** `files` (name -> bytes) under runs/<run>/, backfilled (or, `atStart`, found by `start`: read as its backlog,
 * caught up, then its first tick); the fired crash and finish alerts. */
async function backfilled(
  run: string,
  files: Record<string, Buffer | string>,
  atStart = false,
): Promise<Array<[string, string]>> {
  const root = tempDir();
  for (const [name, bytes] of Object.entries(files)) writeFileSync(ensureParent(join(root, 'runs', run, name)), bytes);
  const { store } = freshStore({ dir: root });
  try {
    const engine = engineOf(store);
    const history = new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 }, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId, false);
    });
    await backfill(history, [join(root, 'runs')], { depth: 4 });
    engine.evaluateBehind();
    if (atStart) engine.caughtUp();
    engine.tick();
    return firedOf(store, run);
  } finally {
    store.close();
  }
}

/** The same bytes written while `start` watches: appended in `pieces`, read and evaluated live, a minute apart,
 * then five quiet minutes of ticks. */
async function watched(
  run: string,
  name: string,
  bytes: Buffer | string,
  pieces = 7,
): Promise<Array<[string, string]>> {
  const root = tempDir();
  const runs = join(root, 'runs');
  const path = ensureParent(join(runs, run, name));
  writeFileSync(path, '');
  const { store } = freshStore({ dir: root });
  try {
    const engine = engineOf(store);
    engine.caughtUp();
    const live = new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 }, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId);
    });
    const data = Buffer.from(bytes);
    for (let k = 1; k <= pieces; k++) {
      appendFileSync(
        path,
        data.subarray(Math.floor(((k - 1) * data.length) / pieces), Math.floor((k * data.length) / pieces)),
      );
      await live.ingest(path, runs);
      pass(MIN);
      engine.tick();
    }
    for (let m = 0; m < 5; m++) {
      pass(MIN);
      engine.tick();
    }
    return firedOf(store, run);
  } finally {
    store.close();
  }
}

const corpus = (path: string): Buffer => readFileSync(join(realLogsDir(), path));

describe('the corpus: the same events in a backfill and live', () => {
  it('logic-rl-verl-crash (died before step 1): run_crashed once, with the last error line', async () => {
    const bytes = corpus('logic-rl-verl-crash/grpo.log');
    // the log's last exception line, found by the test's own search
    const last = bytes
      .toString('utf8')
      .split('\n')
      .filter((l) => /^AssertionError: /.test(l))
      .at(-1)!;
    expect(last).toMatch(/^AssertionError: failed to get register_center_actor/);
    const title = last.slice(0, 40);
    for (const fired of [await backfilled('crash', { 'grpo.log': bytes }), await watched('crash', 'grpo.log', bytes)]) {
      expect(fired.map(([rule]) => rule)).toEqual(['run_crashed']);
      expect(fired[0]![1].startsWith(title)).toBe(true);
    }
  });

  it.each([
    ['trl-grpo-hotpotqa-nohup/grpo.log', 1860],
    ['unsloth-grpo-chaos-economy-tf5/train_8_episodes.log', 250],
  ])('%s (ends with its train_runtime summary): run_finished at its last step, no crash', async (path, lastStep) => {
    const bytes = corpus(path);
    for (const fired of [await backfilled('done', { 'train.log': bytes }), await watched('done', 'train.log', bytes)]) {
      expect(fired.map(([rule]) => rule)).toEqual(['run_finished']);
      expect(fired[0]![1]).toMatch(new RegExp(`^training finished at step ${lastStep}\\b`));
    }
  });

  it('walar-verl-progress-only (stops at 33/15625 with no error) raises neither', async () => {
    const bytes = corpus('walar-verl-progress-only/grpo.log');
    expect(await backfilled('quiet', { 'grpo.log': bytes })).toEqual([]);
  });
});

describe('small cases', () => {
  const config = "(main_task pid=1) {'data': {'train_batch_size': 8}, 'trainer': {'total_epochs': 1}}";
  const trace = (prefix: string): string[] => [
    `${prefix}Traceback (most recent call last):`,
    `${prefix}  File "/verl/trainer/main_ppo.py", line 120, in main_task`,
    `${prefix}    trainer.init_workers()`,
    `${prefix}ValueError: no GPU left for the rollout`,
  ];

  it("a crash before step 1 in the job's own process raises run_crashed in a backfill, as live", async () => {
    const log = [config, ...trace('')].join('\n') + '\n';
    expect(await backfilled('early', { 'train.log': log })).toEqual([
      ['run_crashed', 'ValueError: no GPU left for the rollout (the last thing the log says)'],
    ]);
    expect((await watched('early', 'train.log', log, 2)).map(([rule]) => rule)).toEqual(['run_crashed']);
    // `start` finding the log already written: its first tick after reading the backlog
    expect((await backfilled('early', { 'train.log': log }, true)).map(([rule]) => rule)).toEqual(['run_crashed']);
  });

  it('a history that ends in a traceback but grows while `start` watches is given the grace of a live error', async () => {
    const root = tempDir();
    const runs = join(root, 'runs');
    const path = ensureParent(join(runs, 'alive', 'train.log'));
    writeFileSync(path, [config, ...trace('')].join('\n') + '\n');
    const { store } = freshStore({ dir: root });
    try {
      const engine = engineOf(store);
      let catchingUp = true;
      const ingestor = new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 }, (e) => {
        if (e.kind === 'batch') engine.evaluate(e.result.runId, !catchingUp);
      });
      await ingestor.ingest(path, runs);
      catchingUp = false;
      engine.caughtUp();
      pass(30_000);
      appendFileSync(path, '(main_task pid=1) retrying the rollout workers\n');
      await ingestor.ingest(path, runs);
      engine.tick();
      expect(firedOf(store, 'alive')).toEqual([]);
      // then nothing more: quiet for the grace (2m), it is taken for dead
      pass(3 * MIN);
      engine.tick();
      expect(firedOf(store, 'alive').map(([rule]) => rule)).toEqual(['run_crashed']);
    } finally {
      store.close();
    }
  });

  it("a Ray worker's traceback at the end of the history is not taken for the job's death; one with steps after it neither", async () => {
    const worker = [config, ...trace('(WorkerDict pid=7) ')].join('\n') + '\n';
    expect(await backfilled('worker', { 'train.log': worker })).toEqual([]);
    const survived =
      [config, ...trace(''), '(main_task pid=1) step:1 - actor/pg_loss:0.01 - critic/score/mean:0.2'].join('\n') + '\n';
    expect(await backfilled('survived', { 'train.log': survived })).toEqual([]);
  });
});
