/**
 * What a captured stdout's lines are, and at which step: the Trainer's dicts when stdout is block-buffered behind
 * the tqdm bar, dicts that are not training records, a home-grown loop's lines. Small cases written here, each read by
 * the real console reader; then corpus files fed to the real Ingestor in random chunks, as a live read gets them.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { runFiles, unreadSummary } from '../../src/commands/files.ts';
import { STEP_LINE_NOT_READ, consoleLog } from '../../src/ingest/formats/console/console.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import type { MetricRecord } from '../../src/ingest/records.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { ensureParent, realLogsDir, tempDir } from '../helpers.ts';

/** The metric records of `lines` read by one console reader, as [step, values]. */
function records(lines: readonly string[]): Array<[number | undefined, Record<string, number>]> {
  const parse = consoleLog.open({ relPath: 'train.log' });
  const out: Array<[number | undefined, Record<string, number>]> = [];
  for (const line of lines) {
    const r = parse(line);
    if (r.kind === 'metric') out.push([r.record.step, Object.fromEntries((r.record as MetricRecord).values)]);
  }
  return out;
}
const stepsOf = (lines: readonly string[]): Array<number | undefined> => records(lines).map(([step]) => step);

const bar = (k: number, total = 100): string =>
  ` ${Math.floor((100 * k) / total)}%|█         | ${k}/${total} [00:${k}<09:00, 6.0s/it]`;
/** tqdm.write's clear: the bar's width in spaces, then the bar drawn again */
const CLEAR = ' '.repeat(50);
const dict = (epoch: number, loss = 0.1): string =>
  `{'loss': ${loss}, 'reward': 0.5, 'learning_rate': 1e-06, 'epoch': ${epoch}}`;

describe("the Trainer's global step of a dict without one", () => {
  it('nohup: dicts that arrive in a burst take the steps at which the bar was cleared and drawn again, in order', () => {
    // logging_steps=2: the Trainer logged at 2, 4 and 6 (clear + redraw), stdout held the dicts until after 7
    const lines = [
      bar(1),
      bar(2),
      CLEAR,
      '',
      bar(2),
      bar(3),
      bar(4),
      CLEAR,
      '',
      bar(4),
      bar(5),
      bar(6),
      CLEAR,
      '',
      bar(6),
      bar(7),
      dict(0.02),
      dict(0.04),
      dict(0.06),
    ];
    expect(stepsOf(lines)).toEqual([2, 4, 6]);
  });

  it('a counter that did not move while the epochs did is stale: the epoch times the steps per epoch places the dict', () => {
    // the first dict sits behind its bar (step 2 at epoch 0.02: 100 steps per epoch); then the bar runs on to 8
    // with no marks of the logs (stderr went elsewhere for a while) and three dicts come at once
    const lines = [`${bar(2)}${dict(0.02)}`, bar(8), dict(0.04), dict(0.06), dict(0.08)];
    expect(stepsOf(lines)).toEqual([2, 4, 6, 8]);
    // without the epochs the same counter is all there is: the first dict after it takes it, the next follow on
    const noEpoch = lines.map((l) => l.replace(/, 'epoch': [\d.]+/, ''));
    expect(stepsOf(noEpoch)).toEqual([2, 8, 14, 20]);
  });

  it('a mark the epoch rules out (a bar redrawn for another message) is passed over', () => {
    // 100 steps per epoch from the first dict; the mark at 14 is no log, the one at 26 is
    const lines = [
      `${bar(13)}${dict(0.13)}`,
      bar(14),
      CLEAR,
      '',
      bar(14),
      bar(26),
      CLEAR,
      '',
      bar(26),
      bar(27),
      dict(0.26),
    ];
    expect(stepsOf(lines)).toEqual([13, 26]);
  });

  it('an epoch that is no number of steps (nan, 1e300, inf) is no evidence: the next there is places the dict', () => {
    const odd = (epoch: string): string => dict(0).replace("'epoch': 0", `'epoch': ${epoch}`);
    // nan: the counter that moved; 1e300: nothing fits (numbered by the pipeline); inf: the spacing of the two before
    const lines = [`${bar(2)}${dict(0.02)}`, bar(8), odd('nan'), odd('1e300'), odd('inf')];
    expect(stepsOf(lines)).toEqual([2, 8, undefined, 14]);
  });

  it("the Trainer's banner gives the steps per epoch when nothing else does", () => {
    // 400 steps over 2 epochs: 200 per epoch
    const lines = ['  Num Epochs = 2', '  Total optimization steps = 400', dict(0.05), dict(0.1)];
    expect(stepsOf(lines)).toEqual([10, 20]);
  });
});

describe('only training records are records', () => {
  it('a dict quoted in an error, a logger line or a config print is text, whatever its keys', () => {
    expect(
      records([
        '[W&B] Episode snapshot failed: Data row contained incompatible types:',
        "{'step': 0, 'agent_id': 'market_maker', 'direction': 0.03, 'reward': 2.6094} of type {'step': Number, 'reward': Number}",
        "INFO:root:{'loss': 0.5, 'reward': 0.1}",
        "(WorkerDict pid=7) model_path: /m, config: {'name': 'vllm', 'temperature': 1.0, 'response_length': 1024}",
        "(WorkerDict pid=7) kwargs: {'n': 8, 'logprobs': 0, 'max_tokens': 1024, 'temperature': 1.0}",
        "{'n': 8, 'temperature': 1.0, 'top_p': 1}",
      ]),
    ).toEqual([]);
  });

  it("a whole-line dict naming a training metric is, a process's too, its debug counters left out", () => {
    expect(
      records([
        "{'prompt_id_length': 98, 'steps_taken': 240, 'reward_mean': tensor(-0.0008, device='mps:0'), 'policy_loss': -0.0015}",
      ]),
    ).toEqual([[undefined, { reward: -0.0008, loss: -0.0015 }]]);
    expect(records(["(TrainerActor pid=7) {'loss': 0.5, 'step': 3}", "[rank0]: {'loss': 0.25, 'step': 4}"])).toEqual([
      [3, { loss: 0.5 }],
      [4, { loss: 0.25 }],
    ]);
  });

  it('a verl log with config dicts and progress bars only is read, gives no record, and is named not understood', async () => {
    const root = tempDir();
    const path = ensureParent(join(root, 'runs', 'verl-config-only', 'grpo.log'));
    writeFileSync(
      path,
      [
        "(TaskRunner pid=1) {'actor_rollout_ref': {'actor': {'checkpoint': {'load_contents': ['model',",
        "(WorkerDict pid=2) model_path: /m, config: {'name': 'vllm', 'temperature': 1.0, 'response_length': 1024}",
        "(WorkerDict pid=2) kwargs: {'n': 8, 'logprobs': 0, 'max_tokens': 1024, 'temperature': 1.0}",
        'Training Progress:   0%|          | 1/15625 [01:06<288:57:10, 66.71s/it]',
        'Training Progress:   0%|          | 2/15625 [02:12<288:57:10, 66.71s/it]',
      ].join('\n') + '\n',
    );
    const { store } = freshStore({ dir: root });
    try {
      const outcome = await new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 }).ingest(
        path,
        join(root, 'runs'),
      );
      expect(outcome).toMatchObject({ format: 'console', lines: 5, records: 0, skips: {} });
      const db = new SqliteAsyncStore(store);
      expect(await unreadSummary(db, [join(root, 'runs')])).toEqual([
        'not understood: verl-config-only/grpo.log (no metric line in 5 lines read)',
      ]);
      expect((await runFiles(db))[0]!.files).toMatchObject([{ path: 'grpo.log', records: 0, lines: 5 }]);
    } finally {
      store.close();
    }
  });
});

describe('a home-grown loop', () => {
  const loop = (step: number): string[] => [
    `{'prompt_id_length': 98, 'tokens_shape': (8, 338), 'truncated': [False, True], 'steps_taken': 240, 'ratio_mean': tensor(1.0001, device='mps:0', grad_fn=<DivBackward0>), 'reward_mean': tensor(0.${step}, device='mps:0'), 'policy_loss': -0.00${step}, 'value_loss': 0.03${step}}`,
    'Average LoRA Gradient Magnitude: 0.0000295349',
    `Step: ${step} | Loss: 0.000${step} | KL: -0.000${step}`,
  ];

  it('reads the debug dict with the step of the line after it, `Step: N | ...`, and `[step N] k=v` with its step', () => {
    const lines = [
      '=== Epoch 1/10 ===',
      ...loop(1),
      ...loop(2),
      '[step 2] avg_loss=0.0002 acc=0.4773',
      '=== Epoch 2/10 ===',
      ...loop(3),
    ];
    const debug = (step: number) => ({
      ratio_mean: 1.0001,
      reward: Number(`0.${step}`),
      loss: Number(`-0.00${step}`),
      value_loss: Number(`0.03${step}`),
    });
    expect(records(lines)).toEqual([
      [undefined, debug(1)], // the first: numbered 1 by the pipeline, as the loop's first record
      [1, { loss: 0.0001, kl: -0.0001 }],
      [2, debug(2)],
      [2, { loss: 0.0002, kl: -0.0002 }],
      [2, { avg_loss: 0.0002, accuracy: 0.4773 }],
      [3, debug(3)],
      [3, { loss: 0.0003, kl: -0.0003 }],
    ]);
  });

  it('counts a step line it cannot read as skipped, with the line as its example', async () => {
    const parse = consoleLog.open({ relPath: 'train.log' });
    expect(parse('Step 5: loss=0.1 reward=n/a')).toEqual({ kind: 'bad', reason: STEP_LINE_NOT_READ });
    expect(parse('[step 5] loss=0.25 accuracy=high')).toEqual({ kind: 'bad', reason: STEP_LINE_NOT_READ });
    expect(parse('Step 5 of the recipe: mix well')).toEqual({ kind: 'noise' });
    const root = tempDir();
    const path = ensureParent(join(root, 'runs', 'loop', 'train.log'));
    writeFileSync(path, 'Step: 1 | Loss: 0.5 | KL: 0.01\nStep 2: loss=0.1 reward=n/a\n');
    const { store } = freshStore({ dir: root });
    try {
      await new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 }).ingest(path, join(root, 'runs'));
      const [file] = (await runFiles(new SqliteAsyncStore(store)))[0]!.files;
      expect(file!.skips).toEqual([{ reason: STEP_LINE_NOT_READ, count: 1, example: 'Step 2: loss=0.1 reward=n/a' }]);
    } finally {
      store.close();
    }
  });
});

// ------------------------------------------------------------------------------------- chunked as a live read

/** Every stored point of the run: metric -> [step, value] in step order. */
function pointsOf(store: Store, run: string): Record<string, Array<[number, number]>> {
  const id = store.runs.byName(run)!.id;
  return Object.fromEntries(
    [...store.points.metricsOf(id)].sort().map((m) => [m, store.points.series(id, m).map((p) => [p.step, p.value])]),
  );
}

/** Reads `file` of the corpus as one backfill read, or appended in random pieces (cut anywhere, mid-line and
 * mid-character) with a read after each, as a live watcher gets it. */
async function readCorpusFile(file: string, seed: number | null): Promise<Record<string, Array<[number, number]>>> {
  const bytes = readFileSync(join(realLogsDir(), file));
  const root = tempDir();
  const runs = join(root, 'runs');
  const path = ensureParent(join(runs, 'run', 'train.log'));
  const { store } = freshStore({ dir: root });
  try {
    const rand = seed === null ? null : mulberry32(seed);
    const chunkBytes = rand ? 256 + Math.floor(rand() * 4096) : undefined;
    const ingestor = new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2, chunkBytes });
    writeFileSync(path, '');
    for (let at = 0; at < bytes.length; ) {
      const end = rand ? Math.min(bytes.length, at + 1 + Math.floor(rand() * 12_000)) : bytes.length;
      appendFileSync(path, bytes.subarray(at, end));
      await ingestor.ingest(path, runs);
      at = end;
    }
    return pointsOf(store, 'run');
  } finally {
    store.close();
  }
}

describe('a corpus file read in random chunks gives the records of one read', () => {
  const files = [
    'trl-grpo-hotpotqa-nohup/grpo.log',
    'unsloth-grpo-chaos-economy-tf5/train_8_episodes.log',
    'homegrown-ppo-gemma-lora/ppo_20251228_2.log',
    'trl-asyncgrpo-gsm8k/run_1.log',
  ];
  it.each(files)(
    '%s',
    async (file) => {
      const whole = await readCorpusFile(file, null);
      expect(Object.keys(whole).length).toBeGreaterThan(3);
      for (const seed of [1, 2, 3]) expect(await readCorpusFile(file, seed), `seed ${seed}`).toEqual(whole);
    },
    120_000,
  );
});
