/**
 * The real training logs others published (../shared/real-logs, see its SOURCES.md), each read by the real
 * Ingestor into a real SQLite store. Expected values are lines of those files typed in by hand, not rlwatch's
 * output; the files are read in place, never copied into this repository.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { discoverFiles } from '../../src/ingest/discover.ts';
import { cleanLine } from '../../src/ingest/formats/common.ts';
import { consoleLog } from '../../src/ingest/formats/console.ts';
import { readKeyValueLine } from '../../src/ingest/formats/keyValue.ts';
import { Ingestor, type FileOutcome } from '../../src/ingest/ingestor.ts';
import { parseNumber } from '../../src/ingest/metricNames.ts';
import { Store } from '../../src/store/store.ts';
import { realLogsDir, tempDir } from '../helpers.ts';

const CORPUS = realLogsDir();

let store: Store;
const outcomes = new Map<string, FileOutcome>();

beforeAll(async () => {
  store = Store.open(join(tempDir(), 'real.db'));
  const ingestor = new Ingestor(store, { maxLineBytes: 1024 * 1024, examplesPerStep: 2 });
  for (const path of discoverFiles(CORPUS, 4)) {
    const out = await ingestor.ingest(path, CORPUS);
    if (out) outcomes.set(path.slice(CORPUS.length + 1), out);
  }
  return () => store.close();
}, 120_000);

const runId = (run: string): number => {
  const r = store.runs.byName(run);
  if (!r) throw new Error(`run ${run} was not read`);
  return r.id;
};
const at = (run: string, metric: string, step: number): number | undefined =>
  store.points.series(runId(run), metric).find((p) => p.step === step)?.value;
const stepsOf = (run: string, metric: string): number[] => store.points.series(runId(run), metric).map((p) => p.step);
const names = (run: string): string[] => [...store.points.metricsOf(runId(run))].sort();
const range = (from: number, to: number, by = 1): number[] =>
  Array.from({ length: Math.floor((to - from) / by) + 1 }, (_, i) => from + i * by);

/** Values as the file prints them: exact for quoted/full-precision numbers. */
function expectValues(run: string, step: number, values: Record<string, number>): void {
  for (const [metric, value] of Object.entries(values)) expect(at(run, metric, step), `${run} ${metric}@${step}`).toBe(value);
}

describe('the real-log corpus', () => {
  it('reads every run of the corpus, each file with its format and no unread lines reported as bad', () => {
    expect(store.runs.list().map((r) => r.name).sort()).toEqual([
      'custom-grpo-metrics-jsonl',
      'deepspeed-chat-ppo',
      'minimind-grpo',
      'trl-asyncgrpo-gsm8k',
      'trl-grpo-finance-poison',
      'trl-grpo-tf5-gsm8k',
      'unsloth-gemma3-grpo',
      'verl-dapo-gui-cursor',
      'verl-ppo-gsm8k-dstack',
      'verl-ppo-qwen3-slurm',
    ]);
    expect(Object.fromEntries([...outcomes].map(([path, o]) => [path, o.format]))).toEqual({
      'custom-grpo-metrics-jsonl/train_metrics.jsonl': 'jsonlMetrics',
      'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': 'console',
      'minimind-grpo/logs/grpo.log': 'console',
      'trl-asyncgrpo-gsm8k/run_1.log': 'console',
      'trl-grpo-finance-poison/trainer_state.json': 'trainerState',
      'trl-grpo-tf5-gsm8k/run_1.log': 'console',
      'unsloth-gemma3-grpo/checkpoint-250/trainer_state.json': 'trainerState',
      'verl-dapo-gui-cursor/verl_demo.log': 'console',
      'verl-ppo-gsm8k-dstack/verl_demo.log': 'console',
      'verl-ppo-qwen3-slurm/slurm-6231820.out': 'console',
    });
    for (const [path, o] of outcomes) expect(o.skips, path).toEqual({});
  });
});

describe('TRL GRPOTrainer stdout, transformers 5 (trl-grpo-tf5-gsm8k)', () => {
  const run = 'trl-grpo-tf5-gsm8k';

  it("stores the Trainer's global steps 5..50 from the tqdm counter, and no summary step", () => {
    expect(stepsOf(run, 'loss')).toEqual(range(5, 50, 5));
    expect(store.runs.byName(run)).toMatchObject({ first_step: 5, last_step: 50, records: 10 });
    expect(names(run)).not.toContain('train_runtime');
  });

  it('stores the quoted numbers under canonical names', () => {
    // {'loss': '-4.768e-16', 'grad_norm': '1.433e-15', 'learning_rate': '9.583e-06', ... 'frac_reward_zero_std': '0.8'
    expectValues(run, 5, {
      loss: -4.768e-16,
      grad_norm: 1.433e-15,
      lr: 9.583e-6,
      completion_length: 257.3,
      clipped_ratio: 0.2,
      'rewards/accuracy_reward': 0.375,
      'rewards/accuracy_reward/std': 0.07071,
      reward: 0.375,
      frac_zero_std: 0.8,
      entropy: 0.137,
      epoch: 0.0006691,
    });
    expectValues(run, 50, { loss: 7.268e-6, reward: 0.55, reward_std: 0.3594, frac_zero_std: 0.2, entropy: 0.105, step_time: 11.45 });
  });

  it('keeps the best and worst rows of the completion tables as examples of their step', () => {
    const examples = store.examples.atOrBefore(runId(run), 5);
    // eight rows, several with the same prompt and opening: merged by key, then the best and worst kept
    expect(examples.length).toBeGreaterThanOrEqual(2);
    expect(examples.every((e) => e.step === 5)).toBe(true);
    // │ We are given: │ 1.00 │ 0.35 │ ... and the one row │ 0.00 │ -2.47 │
    expect(examples[0]).toMatchObject({ reward: 1, breakdown: { accuracy_reward: 1, advantage: 0.35 } });
    expect(examples.at(-1)).toMatchObject({ reward: 0, breakdown: { accuracy_reward: 0, advantage: -2.47 } });
    expect(examples[0]!.completion.startsWith('We are given:')).toBe(true);
    expect(examples[0]!.prompt).toContain('In a graveyard, there are 20 skeletons.');
  });
});

describe('TRL AsyncGRPOTrainer stdout (trl-asyncgrpo-gsm8k): first metric dict at byte 100,193', () => {
  const run = 'trl-asyncgrpo-gsm8k';

  it('reads past the completion tables, steps 5..50 (a dict printed behind 46/50 is step 45, the last one 50)', () => {
    expect(stepsOf(run, 'loss')).toEqual(range(5, 50, 5));
    expectValues(run, 5, { loss: -0.002829, grad_norm: 0.3569, lr: 9.583e-6, ratio: 0.9549, kl: 0.1829, entropy: 0.07907 });
    expectValues(run, 5, { clip_ratio: 0.07829, reward: 0.075, 'rewards/accuracy_reward': 0.075, completion_length: 149.9 });
    expectValues(run, 50, { loss: 0.05986, reward: 0.45, reward_std: 0.1661, 'training_tok/s': 326.8, epoch: 1 });
  });

  it('reads the tables titled Step 0..8 with their `reward` column', () => {
    const examples = store.examples.atOrBefore(runId(run), 0);
    expect(examples.length).toBeGreaterThan(0);
    expect(examples.every((e) => e.step === 0 && 'reward' in e.breakdown)).toBe(true);
  });
});

describe('trainer_state.json (trl-grpo-finance-poison, unsloth-gemma3-grpo)', () => {
  it('reads recent TRL keys, steps 1..100', () => {
    const run = 'trl-grpo-finance-poison';
    expect(stepsOf(run, 'reward')).toEqual(range(1, 100));
    expectValues(run, 1, { entropy: 0.08739477023482323, frac_zero_std: 0.75, lr: 5e-6, 'rewards/FinancePoisonReward': 0.0625 });
    expectValues(run, 100, { frac_zero_std: 1, reward: 0, completion_length: 67.6875, step_time: 19.618122961999916 });
  });

  it('reads older TRL keys in a checkpoint folder as the run above it, steps 10..250', () => {
    const run = 'unsloth-gemma3-grpo';
    expect(stepsOf(run, 'reward')).toEqual(range(10, 250, 10));
    expectValues(run, 250, { completion_length: 340.375, kl: 0.02123948831576854, reward: 1.5109375, 'rewards/correctness_reward_func': 0.95 });
  });
});

describe("a home-grown loop's JSON lines (custom-grpo-metrics-jsonl)", () => {
  it('reads steps 1..250 with every key under its own name', () => {
    const run = 'custom-grpo-metrics-jsonl';
    expect(stepsOf(run, 'reward')).toEqual(range(1, 250));
    expectValues(run, 1, { reward: 0.7187499999999999, valid_action: 0.9375, retrieval_reward: 1.25 });
    expectValues(run, 250, { reward: 1.36875, attack_reward: 0.1875, judge_err: 0 });
  });
});

describe('verl console', () => {
  it('qwen3 on SLURM: steps 1..47, full precision, a fractional epoch once training/epoch ticks over', () => {
    const run = 'verl-ppo-qwen3-slurm';
    expect(stepsOf(run, 'reward')).toEqual(range(1, 47));
    // step:30 - ... actor/entropy:0.3529861271381378 ... actor/pg_loss:-0.47793042461853474 ... training/epoch:1
    expectValues(run, 30, { entropy: 0.3529861271381378, loss: -0.47793042461853474, kl: 0, lr: 1e-6, 'training/epoch': 1 });
    expectValues(run, 30, { reward: 0.62109375, completion_length: 347.8046875 });
    // epoch 0 is steps 1..29 (training/epoch turns 1 at step 30): 29 steps per epoch
    expect(at(run, 'epoch', 30)).toBeCloseTo(30 / 29, 12);
    expect(at(run, 'epoch', 47)).toBeCloseTo(47 / 29, 12);
    expect(stepsOf(run, 'epoch')[0]).toBe(30);
  });

  it('gsm8k on dstack, resumed at step 101: its steps, and epochs once two ticks show 29 steps per epoch', () => {
    const run = 'verl-ppo-gsm8k-dstack';
    expect(stepsOf(run, 'reward')).toEqual(range(101, 179));
    // step:146 - ... actor/entropy_loss:0.030 ... actor/pg_loss:-0.262 ... training/epoch:2.000 ... critic/score/mean:0.945
    expectValues(run, 146, { entropy: 0.03, loss: -0.262, 'training/epoch': 2, reward: 0.945, completion_length: 126.656 });
    // training/epoch restarted at 0 on resume and ticks at 117 and 146: step / 29, the run's real epoch
    expect(stepsOf(run, 'epoch')[0]).toBe(146);
    expect(at(run, 'epoch', 179)).toBeCloseTo(179 / 29, 12);
  });

  it('DAPO with rollout filtering: steps 1..2, no epoch from a total of 563,250 steps alone', () => {
    const run = 'verl-dapo-gui-cursor';
    expect(stepsOf(run, 'reward')).toEqual([1, 2]);
    expectValues(run, 2, { 'rollout/too_bad_sample_ratio': 0.46875, entropy: 0.5658401250839233, reward: 0.6419896483421326 });
    expect(stepsOf(run, 'epoch')).toEqual([]);
  });
});

describe('home-grown stdout', () => {
  it('minimind GRPO: Epoch:[1/1](k/9751) lines, steps 1..499, canonical names from its own spellings', () => {
    const run = 'minimind-grpo';
    expect(stepsOf(run, 'reward')).toEqual(range(1, 499));
    // Epoch:[1/1](12/9751), Reward: -1.6523, KL_ref: -0.0069, Adv Std: 0.9256, Adv Mean: -0.0000,
    // Actor Loss: 0.0002, Avg Response Len: 89.12, Learning Rate: 0.00000030   (SQLite keeps -0 as 0)
    expectValues(run, 12, { reward: -1.6523, kl: -0.0069, 'Adv Std': 0.9256, 'Adv Mean': 0, loss: 0.0002 });
    expectValues(run, 12, { completion_length: 89.12, lr: 3e-7, epoch: 12 / 9751 });
    expect(names(run)).toEqual(['Adv Mean', 'Adv Std', 'completion_length', 'epoch', 'kl', 'loss', 'lr', 'reward']);
  });

  it("DeepSpeed-Chat PPO: pipe-separated steps 0..425, the reward line after each joins that step", () => {
    const run = 'deepspeed-chat-ppo';
    expect(stepsOf(run, 'loss')).toEqual(range(0, 425));
    expect(stepsOf(run, 'reward')).toEqual(range(0, 425));
    // epoch: 0|step: 7|ppo_ep: 1|act_loss: 0.0040283203125|cri_loss: 0.09228515625|unsuper_loss: 0.0
    // average reward score: 0.3017578125
    expectValues(run, 7, { epoch: 0, ppo_ep: 1, loss: 0.0040283203125, cri_loss: 0.09228515625, unsuper_loss: 0 });
    expectValues(run, 7, { reward: 0.3017578125 });
    expectValues(run, 425, { loss: 0.0212860107421875, cri_loss: 0.01715087890625, reward: 4.71875 });
    expect(names(run)).toEqual(['cri_loss', 'epoch', 'loss', 'ppo_ep', 'reward', 'unsuper_loss']);
  });
});

// ------------------------------------------------------------------------------ non-metric lines stay inert

/** Hand-written: the lines of each console log that carry a step's metrics. Everything else is not metrics. */
const METRIC_LINE: Record<string, (line: string) => boolean> = {
  'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': (l) =>
    l.startsWith('epoch: ') || l.startsWith('average reward score: '),
  'minimind-grpo/logs/grpo.log': (l) => l.startsWith('Epoch:['),
  'trl-asyncgrpo-gsm8k/run_1.log': (l) => l.includes("{'loss': "),
  'trl-grpo-tf5-gsm8k/run_1.log': (l) => l.includes("{'loss': "),
  'verl-dapo-gui-cursor/verl_demo.log': (l) => / step:\d+ - /.test(l),
  'verl-ppo-gsm8k-dstack/verl_demo.log': (l) => / step:\d+ - /.test(l),
  'verl-ppo-qwen3-slurm/slurm-6231820.out': (l) => / step:\d+ - /.test(l),
};

describe('the console reader on every line of the corpus', () => {
  it.each(Object.entries(METRIC_LINE))('%s: a metric from exactly the metric lines', (path, isMetric) => {
    const parse = consoleLog.open({ relPath: path });
    const text = readFileSync(join(CORPUS, path), 'utf8');
    const wrong: string[] = [];
    let metrics = 0;
    for (const line of text.split(/\r\n|\r|\n/)) {
      const kind = parse(line).kind;
      if (kind === 'metric') metrics++;
      if ((kind === 'metric') !== isMetric(line)) wrong.push(`${kind}: ${line.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
    expect(metrics).toBeGreaterThan(0);
  });
});

describe('the generic key-value reader on every line of every file of the corpus', () => {
  it('takes the metric lines of the two home-grown logs and nothing else: no JSON, config, bar, warning or prose', () => {
    const taken: Record<string, number> = {};
    const wrong: string[] = [];
    for (const path of discoverFiles(CORPUS, 4)) {
      const name = path.slice(CORPUS.length + 1);
      const isMetric = name.startsWith('minimind-grpo/') || name.startsWith('deepspeed-chat-ppo/') ? METRIC_LINE[name] : undefined;
      for (const raw of readFileSync(path, 'utf8').split(/\r\n|\r|\n/)) {
        const line = cleanLine(raw);
        const kv = readKeyValueLine(line, parseNumber);
        const read = kv !== undefined && kv.pairs.length > 0;
        if (read) taken[name] = (taken[name] ?? 0) + 1;
        if (read !== (isMetric?.(line) ?? false)) wrong.push(`${name}: ${line.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
    // 426 step lines and 426 reward lines (steps 0..425); 499 steps
    expect(taken).toEqual({
      'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': 852,
      'minimind-grpo/logs/grpo.log': 499,
    });
  });
});
