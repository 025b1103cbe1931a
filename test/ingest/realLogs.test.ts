/**
 * The real training logs others published (../shared/real-logs, see its SOURCES.md), each read by the real
 * Ingestor into a real SQLite store. Expected values are lines of those files typed in by hand, not rlwatch's
 * output; the files are read in place, never copied into this repository.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { unreadSummary } from '../../src/commands/files.ts';
import { discoverFiles } from '../../src/ingest/discover/discover.ts';
import { cleanLine } from '../../src/ingest/formats/common.ts';
import { consoleLog } from '../../src/ingest/formats/console/console.ts';
import { readKeyValueLine } from '../../src/ingest/formats/console/keyValue.ts';
import type { FileOutcome } from '../../src/ingest/ingestor.ts';
import { parseNumber } from '../../src/ingest/metricNames.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { realLogsDir } from '../helpers.ts';

const CORPUS = realLogsDir();

let store: Store;
const outcomes = new Map<string, FileOutcome>();

beforeAll(async () => {
  const { store: opened, ingestor } = pipeline({ ingest: { maxLineBytes: 1024 * 1024, examplesPerStep: 2 } });
  store = opened;
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
  for (const [metric, value] of Object.entries(values))
    expect(at(run, metric, step), `${run} ${metric}@${step}`).toBe(value);
}

describe('the real-log corpus', () => {
  it('reads every run of the corpus, each file with its format and no unread lines reported as bad', () => {
    // every directory of the corpus is one run (SOURCES.md: ten in the first set, five in the second)
    const dirs = readdirSync(CORPUS, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(dirs.length).toBe(15);
    expect(
      store.runs
        .list()
        .map((r) => r.name)
        .sort(),
    ).toEqual(dirs.sort());
    expect(Object.fromEntries([...outcomes].map(([path, o]) => [path, o.format]))).toEqual({
      'custom-grpo-metrics-jsonl/train_metrics.jsonl': 'jsonlMetrics',
      'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': 'console',
      'homegrown-ppo-gemma-lora/ppo_20251228_2.log': 'console',
      'logic-rl-verl-crash/grpo.log': 'console',
      'minimind-grpo/logs/grpo.log': 'console',
      'trl-asyncgrpo-gsm8k/run_1.log': 'console',
      'trl-grpo-finance-poison/trainer_state.json': 'trainerState',
      'trl-grpo-hotpotqa-nohup/grpo.log': 'console',
      'trl-grpo-tf5-gsm8k/run_1.log': 'console',
      'unsloth-gemma3-grpo/checkpoint-250/trainer_state.json': 'trainerState',
      'unsloth-grpo-chaos-economy-tf5/train_8_episodes.log': 'console',
      'verl-dapo-gui-cursor/verl_demo.log': 'console',
      'verl-ppo-gsm8k-dstack/verl_demo.log': 'console',
      'verl-ppo-qwen3-slurm/slurm-6231820.out': 'console',
      'walar-verl-progress-only/grpo.log': 'console',
    });
    for (const [path, o] of outcomes) expect(o.skips, path).toEqual({});
  });

  it('gives a record from every file but the two with no metric line, which files and backfill name', async () => {
    const empty = [...outcomes].filter(([, o]) => o.records === 0).map(([path, o]) => [path, o.lines > 0]);
    expect(empty).toEqual([
      ['logic-rl-verl-crash/grpo.log', true],
      ['walar-verl-progress-only/grpo.log', true],
    ]);
    const said = await unreadSummary(new SqliteAsyncStore(store), [CORPUS]);
    expect(said.filter((l) => l.startsWith('not understood: '))).toEqual([
      expect.stringMatching(/^not understood: logic-rl-verl-crash\/grpo\.log \(no metric line in [\d,]+ lines read\)$/),
      expect.stringMatching(
        /^not understood: walar-verl-progress-only\/grpo\.log \(no metric line in [\d,]+ lines read\)$/,
      ),
    ]);
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
    expectValues(run, 50, {
      loss: 7.268e-6,
      reward: 0.55,
      reward_std: 0.3594,
      frac_zero_std: 0.2,
      entropy: 0.105,
      step_time: 11.45,
    });
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
    expectValues(run, 5, {
      loss: -0.002829,
      grad_norm: 0.3569,
      lr: 9.583e-6,
      ratio: 0.9549,
      kl: 0.1829,
      entropy: 0.07907,
    });
    expectValues(run, 5, {
      clip_ratio: 0.07829,
      reward: 0.075,
      'rewards/accuracy_reward': 0.075,
      completion_length: 149.9,
    });
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
    expectValues(run, 1, {
      entropy: 0.08739477023482323,
      frac_zero_std: 0.75,
      lr: 5e-6,
      'rewards/FinancePoisonReward': 0.0625,
    });
    expectValues(run, 100, { frac_zero_std: 1, reward: 0, completion_length: 67.6875, step_time: 19.618122961999916 });
  });

  it('reads older TRL keys in a checkpoint folder as the run above it, steps 10..250', () => {
    const run = 'unsloth-gemma3-grpo';
    expect(stepsOf(run, 'reward')).toEqual(range(10, 250, 10));
    expectValues(run, 250, {
      completion_length: 340.375,
      kl: 0.02123948831576854,
      reward: 1.5109375,
      'rewards/correctness_reward_func': 0.95,
    });
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
    expectValues(run, 30, {
      entropy: 0.3529861271381378,
      loss: -0.47793042461853474,
      kl: 0,
      lr: 1e-6,
      'training/epoch': 1,
    });
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
    expectValues(run, 146, {
      entropy: 0.03,
      loss: -0.262,
      'training/epoch': 2,
      reward: 0.945,
      completion_length: 126.656,
    });
    // training/epoch restarted at 0 on resume and ticks at 117 and 146: step / 29, the run's real epoch
    expect(stepsOf(run, 'epoch')[0]).toBe(146);
    expect(at(run, 'epoch', 179)).toBeCloseTo(179 / 29, 12);
  });

  it('DAPO with rollout filtering: steps 1..2, no epoch from a total of 563,250 steps alone', () => {
    const run = 'verl-dapo-gui-cursor';
    expect(stepsOf(run, 'reward')).toEqual([1, 2]);
    expectValues(run, 2, {
      'rollout/too_bad_sample_ratio': 0.46875,
      entropy: 0.5658401250839233,
      reward: 0.6419896483421326,
    });
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

  it('DeepSpeed-Chat PPO: pipe-separated steps 0..425, the reward line after each joins that step', () => {
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

// ------------------------------------------------------------------ the second set, each read by its own regexes

const textOf = (path: string): string => readFileSync(join(CORPUS, path), 'utf8');
/** The lines as the tailer splits them (tqdm's bare `\r` included), without ANSI colours. */
const linesOf = (path: string): string[] =>
  textOf(path)
    .split(/\r\n|\r|\n/)
    .map(cleanLine);
/** `'key': 0.5` or `'key': '0.5'` in a printed dict, by a regex of its own */
function dictValue(dict: string, key: string): number {
  const m = new RegExp(`'${key.replace(/[/.]/g, '\\$&')}': '?(-?[\\d.]+(?:e[-+]?\\d+)?)'?[,}]`).exec(dict);
  if (!m) throw new Error(`no ${key} in ${dict.slice(0, 80)}`);
  return Number(m[1]);
}
const firstMiddleLast = <T>(items: readonly T[]): T[] => [items[0]!, items[items.length >> 1]!, items.at(-1)!];

describe('TRL stdout under nohup (trl-grpo-hotpotqa-nohup): the dicts come in bursts after the bar moved on', () => {
  const run = 'trl-grpo-hotpotqa-nohup';
  const path = `${run}/grpo.log`;
  const dicts = linesOf(path).filter((l) => l.startsWith("{'loss': "));
  // the training bar's total (the bar without a description), and logging_steps=20 (SOURCES.md): the epoch,
  // printed to two decimals, names its multiple of 20
  const bar = linesOf(path)
    .map((l) => /^\s*\d+%\|[^|]*\|\s*\d+\/(\d+) \[/.exec(l))
    .find((m) => m !== null);
  const total = Number(bar![1]);
  const stepOf = (dict: string): number => 20 * Math.round((dictValue(dict, 'epoch') * total) / 20);

  it("stores the 93 dicts at the Trainer's steps 20..1860, where their epochs put them", () => {
    expect(total).toBe(1875);
    expect(dicts.length).toBe(93);
    expect(dicts.map(stepOf)).toEqual(range(20, 1860, 20));
    expect(stepsOf(run, 'loss')).toEqual(dicts.map(stepOf));
  });

  it('stores the first, middle and last values under canonical names', () => {
    for (const d of firstMiddleLast(dicts)) {
      expectValues(run, stepOf(d), {
        loss: dictValue(d, 'loss'),
        grad_norm: dictValue(d, 'grad_norm'),
        lr: dictValue(d, 'learning_rate'),
        reward: dictValue(d, 'reward'),
        reward_std: dictValue(d, 'reward_std'),
        kl: dictValue(d, 'kl'),
        completion_length: dictValue(d, 'completion_length'),
        'rewards/combined_reward': dictValue(d, 'rewards/combined_reward'),
      });
    }
  });
});

describe('Unsloth console, transformers 5 (unsloth-grpo-chaos-economy-tf5): error lines quoting dicts', () => {
  const run = 'unsloth-grpo-chaos-economy-tf5';
  const path = `${run}/train_8_episodes.log`;
  const lines = linesOf(path);
  const dicts = lines.filter((l) => l.startsWith("{'loss': '"));
  // steps per epoch: the banner's `Total steps = 250` over the summary's final epoch
  const total = Number(/Total steps = (\d+)/.exec(textOf(path))![1]);
  const perEpoch = total / dictValue(lines.find((l) => l.startsWith("{'train_runtime'"))!, 'epoch');
  const stepOf = (dict: string): number => Math.round(dictValue(dict, 'epoch') * perEpoch);

  it('stores the 50 metric dicts at steps 5..250, and none of the dicts the W&B errors quote', () => {
    expect(perEpoch).toBe(80);
    expect(dicts.map(stepOf)).toEqual(range(5, 250, 5));
    expect(stepsOf(run, 'loss')).toEqual(range(5, 250, 5));
    expect(stepsOf(run, 'reward')).toEqual(range(5, 250, 5));
    // [W&B] Episode snapshot failed: ... {'step': 0, 'agent_id': 'market_maker', 'direction': 0.03, ...} of type {...}
    expect(lines.filter((l) => l.startsWith("{'step': 0, 'agent_id'")).length).toBe(11);
    expect(names(run)).not.toContain('direction');
  });

  it('stores the first, middle and last values of its quoted numbers under canonical names', () => {
    for (const d of firstMiddleLast(dicts)) {
      expectValues(run, stepOf(d), {
        loss: dictValue(d, 'loss'),
        grad_norm: dictValue(d, 'grad_norm'),
        lr: dictValue(d, 'learning_rate'),
        reward: dictValue(d, 'reward'),
        kl: dictValue(d, 'kl'),
        frac_zero_std: dictValue(d, 'frac_reward_zero_std'),
        completion_length: dictValue(d, 'completions/mean_length'),
        clipped_ratio: dictValue(d, 'completions/clipped_ratio'),
      });
    }
  });
});

describe('a home-grown PPO loop (homegrown-ppo-gemma-lora): debug dicts, step lines, epoch summaries', () => {
  const run = 'homegrown-ppo-gemma-lora';
  const lines = linesOf(`${run}/ppo_20251228_2.log`);
  // per step: the debug dict, then `Step: N | Loss: x | KL: y`; per epoch: `[step N] avg_loss=x acc=y`
  const stepLines = lines.flatMap((l) => {
    const m = /^Step: (\d+) \| Loss: (\S+) \| KL: (\S+)$/.exec(l);
    return m ? [{ step: Number(m[1]), loss: Number(m[2]), kl: Number(m[3]) }] : [];
  });
  const debug = lines.filter((l) => l.startsWith("{'prompt_id_length': "));
  const summaries = lines.flatMap((l) => {
    const m = /^\[step (\d+)\] avg_loss=(\S+) acc=(\S+)$/.exec(l);
    return m ? [{ step: Number(m[1]), avg_loss: Number(m[2]), accuracy: Number(m[3]) }] : [];
  });

  it('reads steps 1..110, each debug dict with the step line after it', () => {
    expect(stepLines.map((s) => s.step)).toEqual(range(1, 110));
    expect(debug.length).toBe(110);
    for (const metric of ['kl', 'reward', 'value_loss']) expect(stepsOf(run, metric), metric).toEqual(range(1, 110));
    for (const i of [0, 54, 109]) {
      const { step, loss, kl } = stepLines[i]!;
      const reward = Number(/'reward_mean': tensor\((-?[\d.]+)/.exec(debug[i]!)![1]);
      // the step line comes after the dict: its Loss is the step's loss (the dict's policy_loss is stored first)
      expectValues(run, step, { loss, kl, reward, value_loss: dictValue(debug[i]!, 'value_loss') });
    }
  });

  it('reads the ten epoch summaries at their steps; debug counters are not metrics', () => {
    expect(summaries.map((s) => s.step)).toEqual(range(11, 110, 11));
    for (const { step, avg_loss, accuracy } of firstMiddleLast(summaries))
      expectValues(run, step, { avg_loss, accuracy });
    expect(names(run)).toEqual([
      'accuracy',
      'adv_mean',
      'avg_loss',
      'kl',
      'loss',
      'ratio_mean',
      'reward',
      'value_loss',
    ]);
  });
});

// ------------------------------------------------------------------------------ non-metric lines stay inert

/** Hand-written: the lines of each console log that carry a step's metrics. Everything else is not metrics. */
const METRIC_LINE: Record<string, (line: string) => boolean> = {
  'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': (l) =>
    l.startsWith('epoch: ') || l.startsWith('average reward score: '),
  'homegrown-ppo-gemma-lora/ppo_20251228_2.log': (l) =>
    l.startsWith("{'prompt_id_length': ") || l.startsWith('Step: ') || l.startsWith('[step '),
  'logic-rl-verl-crash/grpo.log': () => false,
  'minimind-grpo/logs/grpo.log': (l) => l.startsWith('Epoch:['),
  'trl-grpo-hotpotqa-nohup/grpo.log': (l) => l.startsWith("{'loss': "),
  'unsloth-grpo-chaos-economy-tf5/train_8_episodes.log': (l) => l.startsWith("{'loss': "),
  'walar-verl-progress-only/grpo.log': () => false,
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
    expect(metrics > 0).toBe(!path.startsWith('logic-rl-') && !path.startsWith('walar-'));
  });
});

describe('the generic key-value reader on every line of every file of the corpus', () => {
  // a lone pair (`KL coef: 0.01`, DeepSpeed-Chat's reward line) is the console reader's call, by the lines around it
  it('takes the step lines of the three home-grown logs and nothing else: no JSON, config, bar, warning or prose', () => {
    const homeGrown: Record<string, (line: string) => boolean> = {
      'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': (l) => l.startsWith('epoch: '),
      'homegrown-ppo-gemma-lora/ppo_20251228_2.log': (l) => l.startsWith('Step: ') || l.startsWith('[step '),
      'minimind-grpo/logs/grpo.log': (l) => l.startsWith('Epoch:['),
    };
    const taken: Record<string, number> = {};
    const wrong: string[] = [];
    for (const path of discoverFiles(CORPUS, 4)) {
      const name = path.slice(CORPUS.length + 1);
      const isMetric = homeGrown[name];
      for (const raw of readFileSync(path, 'utf8').split(/\r\n|\r|\n/)) {
        const line = cleanLine(raw);
        const kv = readKeyValueLine(line, parseNumber);
        const read = kv !== undefined && (kv.pairs.length > 1 || kv.step !== undefined);
        if (read) taken[name] = (taken[name] ?? 0) + 1;
        if (read !== (isMetric?.(line) ?? false)) wrong.push(`${name}: ${line.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
    // 426 step lines (steps 0..425); 110 steps and 10 epoch summaries; 499 steps
    expect(taken).toEqual({
      'deepspeed-chat-ppo/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log': 426,
      'homegrown-ppo-gemma-lora/ppo_20251228_2.log': 120,
      'minimind-grpo/logs/grpo.log': 499,
    });
  });
});
