import { describe, expect, it } from 'vitest';
import { FORMATS, detectFormat } from '../../src/ingest/formats/index.ts';
import { DICT_NOT_READ } from '../../src/ingest/formats/console/console.ts';
import type { DocumentFormat, ExampleRecord, LineFormat, MetricRecord, ParseResult } from '../../src/ingest/records.ts';

// ------------------------------------------------------------------------------------------- helpers

function format(id: string): LineFormat {
  const f = FORMATS.find((x) => x.id === id);
  if (f?.kind !== 'lines') throw new Error(`no line format ${id}`);
  return f;
}

function documentFormat(id: string): DocumentFormat {
  const f = FORMATS.find((x) => x.id === id);
  if (f?.kind !== 'document') throw new Error(`no document format ${id}`);
  return f;
}

function parse(id: string, line: string, relPath = 'x'): ParseResult {
  return format(id).open({ relPath })(line);
}

/** A metric record with its values as a plain object, for exact comparison. */
function metric(result: ParseResult): { step?: number; epoch?: number; values: Record<string, number> } {
  if (result.kind !== 'metric') throw new Error(`expected a metric, got ${JSON.stringify(result)}`);
  const { values, ...rest } = result.record as MetricRecord;
  return { ...rest, values: Object.fromEntries(values) };
}

function example(result: ParseResult): ExampleRecord {
  if (result.kind !== 'example') throw new Error(`expected an example, got ${JSON.stringify(result)}`);
  return result.record;
}

const detectId = (relPath: string, head: string) => {
  const v = detectFormat({ relPath }, head);
  return v === null || v === 'later' ? v : v.format.id;
};

// ---------------------------------------------------------------------------------------- learning.log

describe('learningLog', () => {
  const guideLine =
    '[Epoch 0.28]  loss=-0.0469  grad=0.0838  lr=3.58e-06  reward=0.102±0.077  syntax_rew=0.102±0.078  entropy=0.155  frac_zero_std=0.00';
  const guideValues = {
    epoch: 0.28,
    loss: -0.0469,
    grad_norm: 0.0838,
    lr: 3.58e-6,
    reward: 0.102,
    reward_std: 0.077,
    'rewards/syntax_aware_reward': 0.102,
    'rewards/syntax_aware_reward/std': 0.078,
    entropy: 0.155,
    frac_zero_std: 0,
  };

  it('reads a learning.log line: canonical names, ± split into mean and std, epoch, no step', () => {
    const r = metric(parse('learningLog', guideLine));
    expect(r).toEqual({ epoch: 0.28, values: guideValues });
    expect(r.step).toBeUndefined();
  });

  it('reads ± mis-encoded as Â± (as in a GRPO training analysis), and a CRLF leftover', () => {
    const line =
      '[Epoch 0.29]  loss=0.0111   grad=0.0406  lr=3.57e-06  reward=0.115Â±0.065  syntax_rew=0.115Â±0.082  entropy=0.165  frac_zero_std=0.25\r';
    expect(metric(parse('learningLog', line)).values).toEqual({
      epoch: 0.29,
      loss: 0.0111,
      grad_norm: 0.0406,
      lr: 3.57e-6,
      reward: 0.115,
      reward_std: 0.065,
      'rewards/syntax_aware_reward': 0.115,
      'rewards/syntax_aware_reward/std': 0.082,
      entropy: 0.165,
      frac_zero_std: 0.25,
    });
  });

  it('accepts the ASCII spellings +- and +/-', () => {
    expect(metric(parse('learningLog', '[Epoch 1.00]  reward=0.5+-0.1  syntax_rew=0.4+/-0.2')).values).toEqual({
      epoch: 1,
      reward: 0.5,
      reward_std: 0.1,
      'rewards/syntax_aware_reward': 0.4,
      'rewards/syntax_aware_reward/std': 0.2,
    });
  });

  it('keeps unknown pairs under their own name, nan included, and skips non-numeric ones', () => {
    expect(metric(parse('learningLog', '[Epoch 0.50]  loss=nan  kl=0.003  mode=train')).values).toEqual({
      epoch: 0.5,
      loss: NaN,
      kl: 0.003,
    });
  });

  it('takes key=value lines without an epoch tag', () => {
    expect(metric(parse('learningLog', 'loss=0.1 grad=2'))).toEqual({ values: { loss: 0.1, grad_norm: 2 } });
  });

  it('treats the banner the trainer writes as noise, other text as bad', () => {
    const p = format('learningLog').open({ relPath: 'learning.log' });
    expect(p('='.repeat(80))).toEqual({ kind: 'noise' });
    expect(p('GRPO Training - Learning Metrics Log')).toEqual({ kind: 'noise' });
    expect(p('')).toEqual({ kind: 'noise' });
    expect(p('   \r')).toEqual({ kind: 'noise' });
    expect(p('Resuming from checkpoint')).toEqual({ kind: 'bad', reason: 'unrecognised line' });
    expect(p('\u0000\u0000\u0000\u0000[Epoch 0.1]  loss=0.2')).toEqual({ kind: 'bad', reason: 'binary data' });
  });

  it('strips a BOM and ANSI colours', () => {
    expect(metric(parse('learningLog', '\uFEFF\x1b[32m[Epoch 0.10]\x1b[0m  loss=-0.0311')).values).toEqual({
      epoch: 0.1,
      loss: -0.0311,
    });
  });

  it("reads each line's own keys where the line before had others of the same length, order or case", () => {
    const p = format('learningLog').open({ relPath: 'learning.log' });
    const values = (line: string) => metric(p(line)).values;
    expect(values('grad=1  loss=2  reward=0.5±0.1')).toEqual({ grad_norm: 1, loss: 2, reward: 0.5, reward_std: 0.1 });
    expect(values('kl_a=1  LOSS=2  reward=0.6±0.2')).toEqual({ kl_a: 1, loss: 2, reward: 0.6, reward_std: 0.2 });
    expect(values('reward=0.7±0.3  grad=3')).toEqual({ reward: 0.7, reward_std: 0.3, grad_norm: 3 });
    expect(values('grad=4')).toEqual({ grad_norm: 4 });
    expect(values('grad=5  grad_norm=6  gradx=7')).toEqual({ grad_norm: 6, gradx: 7 });
  });

  it('splits mean and std at the first ±, else the first +-, else the first +/-', () => {
    expect(metric(parse('learningLog', 'reward=1+-2±3')).values).toEqual({ reward_std: 3 });
    expect(metric(parse('learningLog', 'reward=1+/-2+-3')).values).toEqual({ reward_std: 3 });
    expect(metric(parse('learningLog', 'reward=1+/-2')).values).toEqual({ reward: 1, reward_std: 2 });
    expect(metric(parse('learningLog', 'reward=0.5Â±')).values).toEqual({ reward: 0.5 });
    expect(metric(parse('learningLog', 'reward=±0.1')).values).toEqual({ reward_std: 0.1 });
  });

  it('takes a vertical tab or form feed for binary in a line with text, and for blank in a line without', () => {
    expect(parse('learningLog', 'loss=0.1\f')).toEqual({ kind: 'bad', reason: 'binary data' });
    expect(parse('learningLog', 'loss=0.1 \v grad=2')).toEqual({ kind: 'bad', reason: 'binary data' });
    expect(parse('learningLog', ' \v\f ')).toEqual({ kind: 'noise' });
  });
});

// ----------------------------------------------------------------------------------- batch_metrics.jsonl

describe('batchMetrics', () => {
  it('keeps every numeric key, with an optional step', () => {
    expect(
      metric(parse('batchMetrics', '{"pass_at_1": 0.375, "pass_at_all": 0.5, "batch_size": 24, "num_problems": 4}')),
    ).toEqual({
      values: { pass_at_1: 0.375, pass_at_all: 0.5, batch_size: 24, num_problems: 4 },
    });
    expect(metric(parse('batchMetrics', '{"step": 12, "pass_at_1": 0.25}'))).toEqual({
      step: 12,
      values: { pass_at_1: 0.25 },
    });
  });

  it('reports broken lines', () => {
    expect(parse('batchMetrics', '{"pass_at_1": 0.375, "pass_at')).toEqual({ kind: 'bad', reason: 'invalid JSON' });
    expect(parse('batchMetrics', '{"note": "warmup", "ok": true}')).toEqual({
      kind: 'bad',
      reason: 'no numeric fields',
    });
    expect(parse('batchMetrics', '[1, 2]')).toEqual({ kind: 'bad', reason: 'not a JSON object' });
    expect(parse('batchMetrics', '\u0000\u0000\u0000')).toEqual({ kind: 'bad', reason: 'binary data' });
    expect(parse('batchMetrics', '\r')).toEqual({ kind: 'noise' });
  });
});

// --------------------------------------------------------------------------- completions + breakdown

const completionText =
  'let rec f x =\n  match x with\n  | [] -> 0\n  | _ :: t -> 1 + f t\n' + '(* pad *)\n'.repeat(40) + 'END';
const completionLine = JSON.stringify({
  problem_id: 'p17',
  reward: 0.35,
  base_reward: 0.5,
  length: completionText.length,
  is_degenerate: false,
  style_penalty: 0.0,
  completion: completionText,
});
const breakdownLine = JSON.stringify({
  problem_id: 'p17',
  total_reward: 0.35,
  base_reward: 0.5,
  type_check: 0.2,
  compile: 0.1,
  tests: 0.0,
  syntax_errors: 2,
  error_sample: 'Error: Unbound value g',
  is_degenerate: false,
  style_penalty: 0.0,
  style_reasons: [],
  preview: completionText.slice(0, 200),
});

describe('completions', () => {
  it('reads a generation with its reward; booleans skipped; key from problem id and completion hash', () => {
    const e = example(parse('completions', completionLine, 'reward_logs/completions.jsonl'));
    expect(e).toEqual({
      key: expect.stringMatching(/^p17:[0-9a-f]{12}$/),
      completion: completionText,
      reward: 0.35,
      breakdown: { base_reward: 0.5, length: completionText.length, style_penalty: 0 },
    });
    expect(e.step).toBeUndefined();
    expect(e.prompt).toBeUndefined();
  });

  it('merges with its breakdown line: same key from the 200-char preview', () => {
    const c = example(parse('completions', completionLine, 'reward_logs/completions.jsonl'));
    const b = example(parse('rewardBreakdown', breakdownLine, 'reward_logs/syntax_aware_breakdown.jsonl'));
    expect(b.key).toBe(c.key);
  });

  it("hashes code points like Python's completion[:200] (emoji are two UTF-16 units)", () => {
    const text = '🐫'.repeat(150) + 'x'.repeat(100);
    const pythonPreview = Array.from(text).slice(0, 200).join('');
    const c = example(parse('completions', JSON.stringify({ problem_id: 7, reward: 1, completion: text })));
    const b = example(
      parse('rewardBreakdown', JSON.stringify({ problem_id: 7, total_reward: 1, preview: pythonPreview })),
    );
    expect(c.key).toBe(b.key);
    expect(c.key.startsWith('7:')).toBe(true);
  });

  it('takes prompt, step, total_reward/score, and chat-format messages', () => {
    const e = example(
      parse(
        'completions',
        JSON.stringify({
          prompt: [{ role: 'user', content: 'Write f' }],
          completion: [{ role: 'assistant', content: 'let f = 1' }],
          score: 0.5,
          global_step: 30,
          timestamp: 1733800000.5,
        }),
      ),
    );
    expect(e).toEqual({
      key: expect.stringMatching(/^:[0-9a-f]{12}$/),
      prompt: 'Write f',
      completion: 'let f = 1',
      reward: 0.5,
      step: 30,
      breakdown: {},
    });
  });

  it('numbers generations from a completions_<step>.jsonl file name', () => {
    expect(
      example(parse('completions', '{"completion": "x", "reward": 1}', 'completions/completions_00040.jsonl')).step,
    ).toBe(40);
  });

  it('reports lines it cannot use', () => {
    expect(parse('completions', '{"problem_id": "p1", "completion": "x"}')).toEqual({
      kind: 'bad',
      reason: 'no reward',
    });
    expect(parse('completions', '{"problem_id": "p1", "reward": 0.1}')).toEqual({
      kind: 'bad',
      reason: 'no completion text',
    });
    expect(parse('completions', completionLine.slice(0, 120))).toEqual({ kind: 'bad', reason: 'invalid JSON' });
  });
});

describe('rewardBreakdown', () => {
  it('reads total_reward, the preview as completion, other numbers as breakdown (null and strings skipped)', () => {
    const line = breakdownLine.replace('"syntax_errors":2', '"syntax_errors":null');
    expect(example(parse('rewardBreakdown', line, 'reward_logs/syntax_aware_breakdown.jsonl'))).toEqual({
      key: expect.stringMatching(/^p17:[0-9a-f]{12}$/),
      completion: completionText.slice(0, 200),
      reward: 0.35,
      breakdown: { base_reward: 0.5, type_check: 0.2, compile: 0.1, tests: 0, style_penalty: 0 },
    });
    expect(example(parse('rewardBreakdown', breakdownLine)).breakdown['syntax_errors']).toBe(2);
  });
});

// -------------------------------------------------------------------------------------- verl rollouts

describe('verlRollout', () => {
  const line = JSON.stringify({
    input: 'Q: 2+2?',
    output: '<answer>4</answer>',
    gts: 4,
    score: 1.0,
    step: 34,
    acc: 1.0,
    pred: '4',
  });

  it('reads input, output, score and step; ground truth is not a breakdown', () => {
    expect(example(parse('verlRollout', line, 'rollouts/34.jsonl'))).toEqual({
      key: expect.stringMatching(/^[0-9a-f]{12}:[0-9a-f]{12}$/),
      prompt: 'Q: 2+2?',
      completion: '<answer>4</answer>',
      reward: 1,
      step: 34,
      breakdown: { acc: 1 },
    });
  });

  it('takes the step from the file name when the line has none, and tells prompts apart', () => {
    const a = example(parse('verlRollout', '{"input": "Q1", "output": "4", "score": 0}', 'rollouts/7.jsonl'));
    const b = example(parse('verlRollout', '{"input": "Q2", "output": "4", "score": 0}', 'rollouts/7.jsonl'));
    expect(a.step).toBe(7);
    expect(a.key).not.toBe(b.key);
  });
});

// ------------------------------------------------------------------------------------ trainer_state.json

describe('trainerState', () => {
  const state = `{
  "best_metric": null,
  "epoch": 0.06,
  "global_step": 20,
  "log_history": [
    {"completion_length": 180.5, "epoch": 0.03, "frac_reward_zero_std": 0.25, "grad_norm": 1.2, "kl": 0.0,
     "learning_rate": 1e-06, "loss": 0.1, "reward": 0.5, "rewards/accuracy_reward/mean": 0.5, "step": 10},
    {"eval_loss": NaN, "eval_runtime": 3.2, "epoch": 0.03, "step": 10},
    {"epoch": 0.06, "grad_norm": Infinity, "loss": -Infinity, "step": 20, "note": "NaN in a string stays"}
  ],
  "max_steps": 300
}`;

  it('makes one record per log_history entry, with step and epoch; reads NaN/Infinity', () => {
    const results = documentFormat('trainerState').parse(state, { relPath: 'checkpoint-20/trainer_state.json' });
    expect(results.filter((r) => r.kind === 'metric').map(metric)).toEqual([
      {
        step: 10,
        epoch: 0.03,
        values: {
          completion_length: 180.5,
          epoch: 0.03,
          frac_zero_std: 0.25,
          grad_norm: 1.2,
          kl: 0,
          lr: 1e-6,
          loss: 0.1,
          reward: 0.5,
          'rewards/accuracy_reward': 0.5,
        },
      },
      { step: 10, epoch: 0.03, values: { eval_loss: NaN, eval_runtime: 3.2, epoch: 0.03 } },
      { step: 20, epoch: 0.06, values: { epoch: 0.06, grad_norm: Infinity, loss: -Infinity } },
    ]);
  });

  it('says where the Trainer stands: max_steps and global_step as a meta event', () => {
    const results = documentFormat('trainerState').parse(state, { relPath: 'trainer_state.json' });
    expect(results.filter((r) => r.kind === 'event')).toEqual([
      {
        kind: 'event',
        record: {
          kind: 'meta',
          title: 'trainer state',
          text: 'trainer_state.json',
          values: { max_steps: 300, global_step: 20 },
        },
      },
    ]);
    const done = documentFormat('trainerState').parse('{"global_step": 50, "max_steps": 50, "log_history": []}', {
      relPath: 'trainer_state.json',
    });
    expect(done).toEqual([
      {
        kind: 'event',
        record: {
          kind: 'meta',
          title: 'trainer state',
          text: 'trainer_state.json',
          values: { max_steps: 50, global_step: 50 },
        },
      },
    ]);
  });

  it('reports a half-written file as one bad result', () => {
    const f = documentFormat('trainerState');
    expect(f.parse(state.slice(0, 200), { relPath: 'trainer_state.json' })).toEqual([
      { kind: 'bad', reason: 'invalid JSON' },
    ]);
    expect(f.parse('', { relPath: 'trainer_state.json' })).toEqual([{ kind: 'bad', reason: 'invalid JSON' }]);
    expect(f.parse('{"global_step": 0}', { relPath: 'trainer_state.json' })).toEqual([
      { kind: 'bad', reason: 'no log_history' },
    ]);
    expect(f.parse('\uFEFF{"log_history": []}\n', { relPath: 'trainer_state.json' })).toEqual([]);
  });
});

// ------------------------------------------------------------------------------------- *.jsonl metrics

describe('jsonlMetrics', () => {
  it('reads TRL keys with a step', () => {
    expect(
      metric(
        parse('jsonlMetrics', '{"loss": 0.02, "reward": 0.5, "frac_reward_zero_std": 0.75, "epoch": 0.1, "step": 5}'),
      ),
    ).toEqual({
      step: 5,
      epoch: 0.1,
      values: { loss: 0.02, reward: 0.5, frac_zero_std: 0.75, epoch: 0.1 },
    });
  });

  it("reads verl's file logger: step outside, metrics in data", () => {
    expect(
      metric(
        parse(
          'jsonlMetrics',
          '{"step": 34, "data": {"actor/entropy": 0.2, "critic/score/mean": 0.5, "actor/lr": 1e-06, "timing_s/gen": 12.3}}',
        ),
      ),
    ).toEqual({ step: 34, values: { entropy: 0.2, reward: 0.5, lr: 1e-6, 'timing_s/gen': 12.3 } });
  });

  it('reads ms-swift logging.jsonl: quoted numbers, N/M step, non-numeric strings skipped', () => {
    const line =
      '{"loss": "0.0123", "grad_norm": "1.2", "learning_rate": "1e-06", "reward": "0.5", "epoch": "0.03", "global_step/max_steps": "10/1000", "percentage": "1.00%", "elapsed_time": "1m", "remaining_time": "2h"}';
    expect(metric(parse('jsonlMetrics', line))).toEqual({
      step: 10,
      epoch: 0.03,
      values: { loss: 0.0123, grad_norm: 1.2, lr: 1e-6, reward: 0.5, epoch: 0.03 },
    });
  });

  it('accepts global_step, iteration and _step; flattens nested objects with /', () => {
    expect(metric(parse('jsonlMetrics', '{"global_step": 3, "rewards": {"fmt": {"mean": 0.9}}, "ok": true}'))).toEqual({
      step: 3,
      values: { 'rewards/fmt': 0.9 },
    });
    expect(metric(parse('jsonlMetrics', '{"iteration": 8, "kl": 0.01}')).step).toBe(8);
    expect(metric(parse('jsonlMetrics', '{"_step": 9, "kl": 0.01}')).step).toBe(9);
  });

  it('keeps bare NaN / Infinity / -Infinity, and drops null', () => {
    expect(
      metric(parse('jsonlMetrics', '{"loss": NaN, "grad_norm": Infinity, "kl": -Infinity, "reward": null, "step": 1}'))
        .values,
    ).toEqual({
      loss: NaN,
      grad_norm: Infinity,
      kl: -Infinity,
    });
  });

  it('lets an exact canonical key beat an alias, whatever the order', () => {
    expect(metric(parse('jsonlMetrics', '{"train/reward": 0.1, "reward": 0.2}')).values).toEqual({ reward: 0.2 });
    expect(metric(parse('jsonlMetrics', '{"reward": 0.2, "train/reward": 0.1}')).values).toEqual({ reward: 0.2 });
  });

  it('reports broken lines', () => {
    expect(parse('jsonlMetrics', '{"run": "a", "ok": true}')).toEqual({ kind: 'bad', reason: 'no numeric fields' });
    expect(parse('jsonlMetrics', '{"loss": 0.1, "rew')).toEqual({ kind: 'bad', reason: 'invalid JSON' });
    expect(parse('jsonlMetrics', '{"loss": NaN, "rew')).toEqual({ kind: 'bad', reason: 'invalid JSON' });
    expect(parse('jsonlMetrics', '{"loss":\u0000 0.1}')).toEqual({ kind: 'bad', reason: 'binary data' });
  });
});

// ------------------------------------------------------------------------------------------- console

describe('console', () => {
  const p = (line: string) => parse('console', line, 'train.log');

  it('reads a transformers 4 dict line; no step', () => {
    const r = metric(
      p(
        "{'loss': 0.0, 'grad_norm': 0.62, 'learning_rate': 1e-06, 'rewards/accuracy_reward/mean': 0.5, 'reward': 0.5, 'frac_reward_zero_std': 0.0, 'epoch': 0.03}",
      ),
    );
    expect(r).toEqual({
      epoch: 0.03,
      values: {
        loss: 0,
        grad_norm: 0.62,
        lr: 1e-6,
        'rewards/accuracy_reward': 0.5,
        reward: 0.5,
        frac_zero_std: 0,
        epoch: 0.03,
      },
    });
    expect(r.step).toBeUndefined();
  });

  it('reads transformers 5 quoted numbers', () => {
    expect(metric(p("{'loss': '0.06166', 'grad_norm': '0.5', 'epoch': '0.03'}")).values).toEqual({
      loss: 0.06166,
      grad_norm: 0.5,
      epoch: 0.03,
    });
  });

  it('reads a dict behind tqdm progress text', () => {
    expect(
      metric(p(" 3%|▎         | 10/300 [00:20<09:40, 2.0s/it]{'loss': 0.1, 'reward': 0.25, 'epoch': 0.03}")).values,
    ).toEqual({
      loss: 0.1,
      reward: 0.25,
      epoch: 0.03,
    });
  });

  it('reads nan, inf, np.float64 and tensor values; drops None and strings', () => {
    expect(
      metric(
        p(
          "{'loss': nan, 'grad_norm': inf, 'kl': np.float64(0.01), 'entropy': tensor(0.5, device='cuda:0'), 'reward': None, 'model': 'Qwen/Qwen2.5', 'clip_ratio': -inf, 'epoch': 0.5}",
        ),
      ).values,
    ).toEqual({ loss: NaN, grad_norm: Infinity, kl: 0.01, entropy: 0.5, clip_ratio: -Infinity, epoch: 0.5 });
  });

  it('reads the end-of-training summary as a finished event, never a step; and a step when the dict has one', () => {
    const summary = "{'train_runtime': 120.5, 'train_samples_per_second': 3.3, 'train_loss': 0.01, 'epoch': 1.0}";
    expect(p(summary)).toEqual({
      kind: 'event',
      record: {
        kind: 'finished',
        title: 'training finished',
        text: summary,
        values: { train_runtime: 120.5, train_samples_per_second: 3.3, train_loss: 0.01, epoch: 1 },
      },
    });
    expect(metric(p("{'step': 12, 'loss': 0.3}"))).toEqual({ step: 12, values: { loss: 0.3 } });
  });

  it('reads verl lines with the Ray prefix, ANSI colours, np.float64, and without a prefix', () => {
    expect(
      metric(
        p(
          '(TaskRunner pid=12345) step:34 - actor/entropy:0.22 - critic/score/mean:0.5 - actor/lr:np.float64(1e-06) - timing_s/gen:12.3',
        ),
      ),
    ).toEqual({ step: 34, values: { entropy: 0.22, reward: 0.5, lr: 1e-6, 'timing_s/gen': 12.3 } });
    expect(
      metric(p('\x1b[36m(TaskRunner pid=1)\x1b[0m step:1 - actor/pg_loss:-0.013 - response_length/mean:512.0\r')),
    ).toEqual({
      step: 1,
      values: { loss: -0.013, completion_length: 512 },
    });
    expect(metric(p('step:2 - actor/kl_loss:0.001 - actor/grad_norm:nan'))).toEqual({
      step: 2,
      values: { kl: 0.001, grad_norm: NaN },
    });
  });

  it('treats bars, warnings, banners, tracebacks and printed config dicts as noise', () => {
    for (const line of [
      '',
      'Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.50s/it]',
      '/usr/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have requires_grad=True.',
      '==================== Training ====================',
      'Traceback (most recent call last):',
      "KeyError: {'loss'}",
      "{'per_device_train_batch_size': 4, 'num_generations': 6}",
      "generation kwargs: {'temperature': 0.9, 'top_p': 1.0}",
    ]) {
      expect(p(line), line).toEqual({ kind: 'noise' });
    }
  });

  it('reports a dict line it cannot read, and binary garbage', () => {
    expect(p("{'loss': 0.1, 'grad_norm': 0.")).toEqual({ kind: 'bad', reason: DICT_NOT_READ });
    expect(p(" 3%|▎ | 10/300 [00:20<09:40, 2.0s/it]{'loss' 0.1}")).toEqual({ kind: 'bad', reason: DICT_NOT_READ });
    expect(p('\u0000\u0000\u0001\u0002')).toEqual({ kind: 'bad', reason: 'binary data' });
  });
});

// ------------------------------------------------------------------------------------------ detection

describe('detectFormat', () => {
  const learning = '[Epoch 0.28]  loss=-0.0469  grad=0.0838  lr=3.58e-06  reward=0.102±0.077\n';
  const banner = `${'='.repeat(80)}\nGRPO Training - Learning Metrics Log\n${'='.repeat(80)}\n\n`;
  const hfDict = "{'loss': 0.0, 'reward': 0.5, 'epoch': 0.03}\n";

  it('lists the formats in detection order', () => {
    expect(FORMATS.map((f) => f.id)).toEqual([
      'learningLog',
      'batchMetrics',
      'completions',
      'rewardBreakdown',
      'verlRollout',
      'trainerState',
      'tfEvents',
      'parquetCompletions',
      'jsonlMetrics',
      'console',
    ]);
  });

  it('recognises learning.log, past its banner, and waits while it is empty or banner-only', () => {
    expect(detectId('learning.log', banner + learning)).toBe('learningLog');
    expect(detectId('learning.log', '')).toBe('later');
    expect(detectId('learning.log', banner)).toBe('later');
    // never console, whatever it holds
    expect(detectId('learning.log', hfDict)).toBe('later');
    expect(detectId('learning.log', hfDict.repeat(2000))).toBeNull();
  });

  it('recognises the learning.log format under another name by its first line', () => {
    expect(detectId('metrics.jsonl', banner + learning)).toBe('learningLog');
    expect(detectId('metrics.jsonl', banner)).toBe('later');
    // a `.log` other than learning.log is captured stdout, whatever its first lines
    expect(detectId('train.log', 'Loading model\n' + learning)).toBe('console');
  });

  it('recognises the OCaml GRPO reward logs by name and content', () => {
    expect(detectId('reward_logs/completions.jsonl', completionLine + '\n')).toBe('completions');
    expect(detectId('reward_logs/syntax_aware_breakdown.jsonl', breakdownLine + '\n')).toBe('rewardBreakdown');
    expect(detectId('reward_logs/batch_metrics.jsonl', '{"pass_at_1": 0.375, "pass_at_all": 0.5}\n')).toBe(
      'batchMetrics',
    );
    // completions.jsonl with a metric-looking line is still not a metric log
    expect(detectId('completions.jsonl', '{"reward": 0.5, "step": 1}\n')).toBeNull();
    // the older breakdown layout without `preview` has no text to show: ignored, not read as metrics
    expect(
      detectId(
        'reward_logs/syntax_aware_breakdown.jsonl',
        '{"problem_id": "", "total_reward": 0.0, "type_check": 0.25}\n',
      ),
    ).toBeNull();
    // a per-reward-function log with previews is not a metric log either
    expect(
      detectId('reward_logs/syntax_aware_reward.jsonl', '{"problem_id": "p1", "reward": 0.2, "preview": "let"}\n'),
    ).toBeNull();
  });

  it('waits for the first complete line of a JSON-lines file', () => {
    expect(detectId('reward_logs/completions.jsonl', '')).toBe('later');
    expect(detectId('reward_logs/completions.jsonl', completionLine.slice(0, 50))).toBe('later');
    expect(detectId('metrics.jsonl', '{"loss": 0.1, "st')).toBe('later');
    expect(detectId('metrics.jsonl', '\n\n')).toBe('later');
    // a whole object is enough even before its newline
    expect(detectId('metrics.jsonl', '{"loss": 0.1, "step": 1}')).toBe('jsonlMetrics');
    expect(detectId('metrics.jsonl', '{"loss": NaN, "step": 1}\r\n')).toBe('jsonlMetrics');
  });

  it('takes a named generations file whose first line outgrows the 64 KiB head, but no unnamed one', () => {
    const head = `{"problem_id": "p1", "prompt": "${'x'.repeat(70 * 1024)}`.slice(0, 64 * 1024);
    expect(detectId('reward_logs/completions.jsonl', head)).toBe('completions');
    expect(detectId('rollouts/3.jsonl', head)).toBe('verlRollout');
    expect(detectId('metrics.jsonl', head)).toBeNull();
  });

  it('recognises verl rollout dumps by their numeric file name', () => {
    expect(detectId('rollouts/34.jsonl', '{"input": "Q", "output": "A", "score": 1.0, "step": 34}\n')).toBe(
      'verlRollout',
    );
    expect(detectId('34.jsonl', '{"loss": 0.1}\n')).toBe('jsonlMetrics');
  });

  it('recognises trainer_state.json anywhere, including checkpoint directories', () => {
    expect(detectId('trainer_state.json', '{\n  "best_metric": null,')).toBe('trainerState');
    expect(detectId('checkpoint-500/trainer_state.json', '\uFEFF{"log_history": []}')).toBe('trainerState');
    expect(detectId('checkpoint-500/trainer_state.json', '')).toBe('later');
    expect(detectId('config.json', '{"a": 1}')).toBeNull();
  });

  it('recognises jsonl metric logs of several trainers', () => {
    expect(detectId('logging.jsonl', '{"loss": "0.0123", "global_step/max_steps": "10/1000"}\n')).toBe('jsonlMetrics');
    expect(detectId('verl/metrics.jsonl', '{"step": 1, "data": {"actor/entropy": 0.2}}\n')).toBe('jsonlMetrics');
    expect(detectId('run.jsonl', '{"my_metric": 0.5}\n')).toBe('jsonlMetrics');
    // quoted numbers need a step or a known name: dataset rows are not metric logs
    expect(detectId('data/train.jsonl', '{"question": "2+2?", "answer": "4"}\n')).toBeNull();
    expect(detectId('samples.jsonl', '{"prompt": "Q", "completion": "A", "reward": 1}\n')).toBeNull();
  });

  it('claims *.log, *.out and *.err captures by name once they hold text, before any metric line', () => {
    const noise = 'Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.50s/it]\r\n';
    expect(detectId('train.log', noise + hfDict)).toBe('console');
    expect(detectId('slurm-1234.out', '\x1b[36m(TaskRunner pid=1)\x1b[0m step:1 - actor/entropy:0.2\n')).toBe(
      'console',
    );
    expect(detectId('train.log', noise)).toBe('console');
    // a preamble far past the 64 KiB head (TRL's completion tables) never prevents reading
    expect(detectId('train.log', noise.repeat(1000))).toBe('console');
    expect(detectId('nohup.out', 'Traceback (most recent call last):\n')).toBe('console');
    expect(detectId('job-17.err', 'torch.OutOfMemoryError: CUDA out of memory.\n')).toBe('console');
    expect(detectId('train.log', '')).toBe('later');
    expect(detectId('train.log', '\n\n')).toBe('later');
    expect(detectId('train.log', '\u0000\u0001\u0002 binary')).toBeNull();
    // wandb's own debug logs are not the job's output
    expect(detectId('logs/debug-internal.log', 'INFO started\n')).toBeNull();
    expect(detectId('notes.md', hfDict)).toBeNull();
  });

  it('claims *.txt only once it shows a metric line, and gives up after 64 KiB without one', () => {
    const noise = 'Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.50s/it]\r\n';
    expect(
      detectId(
        'stdout.txt',
        ' 0%|          | 0/300 [00:00<?, ?it/s]\r 1%|          | 3/300 [00:06<09:54, 2.0s/it]' + hfDict,
      ),
    ).toBe('console');
    expect(detectId('stdout.txt', 'Epoch:[1/1](12/9751), Reward: -1.6523, KL_ref: -0.0069\n')).toBe('console');
    expect(detectId('notes.txt', noise)).toBe('later');
    expect(detectId('notes.txt', 'Remember: lr = 1e-6 worked best\n'.repeat(3000))).toBeNull();
  });
});
