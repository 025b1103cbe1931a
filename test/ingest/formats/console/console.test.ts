import { describe, expect, it } from 'vitest';
import { consoleLog } from '../../../../src/ingest/formats/console/console.ts';
import type { ParseResult } from '../../../../src/ingest/records.ts';

const reader = () => consoleLog.open({ relPath: 'train.log' });
const feed = (text: string, parse = reader()): ParseResult[] => text.split('\n').map((l) => parse(l));
const metrics = (rs: ParseResult[]) =>
  rs.flatMap((r) =>
    r.kind === 'metric' ? [{ step: r.record.step, values: Object.fromEntries(r.record.values) }] : [],
  );
const events = (rs: ParseResult[]) => rs.flatMap((r) => (r.kind === 'event' ? [r.record] : []));
const examples = (rs: ParseResult[]) => rs.flatMap((r) => (r.kind === 'example' ? [r.record] : []));

describe('console: TRL / Trainer steps', () => {
  it('numbers dicts by the tqdm counter in front, announces the total once, and keeps evaluation dicts apart', () => {
    const rs = feed(
      [
        '  0%|          | 0/50 [00:00<?, ?it/s]',
        '  2%|▏         | 1/50 [00:26<21:46, 26.66s/it]',
        " 10%|█         | 5/50 [01:07<09:21, 12.48s/it]{'loss': '0.5', 'reward': '0.25', 'epoch': '0.1'}",
        ' 40%|████      | 2/5 [00:01<00:01,  2.0it/s]',
        " 40%|████      | 2/5 [00:01<00:01,  2.0it/s]{'eval_loss': 0.7, 'eval_reward': 0.3, 'epoch': 0.1}",
        " 20%|██        | 10/50 [01:57<06:46, 10.17s/it]{'loss': '0.4', 'reward': '0.5', 'epoch': '0.2'}",
        "100%|██████████| 50/50 [09:18<00:00, 11.82s/it]{'train_runtime': '558.5', 'train_loss': '-0.0009589', 'epoch': '1.0'}",
      ].join('\n'),
    );
    expect(metrics(rs)).toEqual([
      { step: 5, values: { loss: 0.5, reward: 0.25, epoch: 0.1 } },
      { step: 5, values: { eval_loss: 0.7, eval_reward: 0.3, epoch: 0.1 } },
      { step: 10, values: { loss: 0.4, reward: 0.5, epoch: 0.2 } },
    ]);
    expect(events(rs)).toEqual([
      {
        kind: 'meta',
        title: 'total steps',
        text: '  0%|          | 0/50 [00:00<?, ?it/s]',
        values: { total_steps: 50 },
      },
      {
        kind: 'finished',
        title: 'training finished',
        step: 50,
        text: "100%|██████████| 50/50 [09:18<00:00, 11.82s/it]{'train_runtime': '558.5', 'train_loss': '-0.0009589', 'epoch': '1.0'}",
        values: { train_runtime: 558.5, train_loss: -0.0009589, epoch: 1 },
      },
    ]);
  });

  it('numbers dicts without a bar by the printed logging_steps', () => {
    const rs = feed(
      [
        'GRPOConfig(output_dir=out, logging_steps=10, learning_rate=1e-06)',
        "{'loss': 0.5, 'reward': 0.25}",
        "{'loss': 0.4, 'reward': 0.5}",
      ].join('\n'),
    );
    expect(metrics(rs).map((m) => m.step)).toEqual([10, 20]);
  });

  it("takes the Trainer's `Total optimization steps` banner as the total", () => {
    expect(events(feed('  Total optimization steps = 1,500'))).toEqual([
      { kind: 'meta', title: 'total steps', text: '  Total optimization steps = 1,500', values: { total_steps: 1500 } },
    ]);
  });
});

describe('console: OpenRLHF tqdm postfix', () => {
  it('maps pg, rm, kl, glen and act_lr to canonical names and keeps the rest; episodes continue the count', () => {
    const rs = feed(
      [
        'Train step of episode 0:  12%|█▏        | 6/50 [01:02<07:30,  1.2s/it, pg=0.12, rm=0.5, ret=0.41, glen=312, tlen=480, kl=0.0021, act_lr=5e-07]',
        'Train step of episode 1:   4%|▍         | 2/50 [00:20<07:50,  9.8s/it, pg=-0.03, rm=0.61, ret=0.55, glen=298, tlen=466, kl=0.004, act_lr=5e-07]',
      ].join('\n'),
    );
    expect(metrics(rs)).toEqual([
      {
        step: 6,
        values: { loss: 0.12, reward: 0.5, ret: 0.41, completion_length: 312, tlen: 480, kl: 0.0021, lr: 5e-7 },
      },
      {
        step: 52,
        values: { loss: -0.03, reward: 0.61, ret: 0.55, completion_length: 298, tlen: 466, kl: 0.004, lr: 5e-7 },
      },
    ]);
  });
});

describe('console: verl epochs', () => {
  const verl = (step: number, epoch: number) =>
    `(TaskRunner pid=1) step:${step} - critic/score/mean:0.5 - training/epoch:${epoch}`;

  it('derives a fractional epoch from the total steps and total_epochs the run prints at start', () => {
    const rs = feed(
      [
        "(TaskRunner pid=1)                'total_epochs': 4,",
        'Training Progress:   0%|          | 0/100 [00:00<?, ?it/s]',
        verl(1, 0),
        verl(30, 1),
      ].join('\n'),
    );
    expect(metrics(rs).map((m) => m.values['epoch'])).toEqual([1 / 25, 30 / 25]);
    expect(events(rs)).toEqual([
      {
        kind: 'meta',
        title: 'total steps',
        text: 'Training Progress:   0%|          | 0/100 [00:00<?, ?it/s]',
        values: { total_steps: 100 },
      },
    ]);
    expect(events(feed('(TaskRunner pid=1) Total training steps: 435'))[0]?.values).toEqual({ total_steps: 435 });
  });

  it('else learns steps per epoch where training/epoch ticks over, and stays silent before', () => {
    const rs = feed([verl(1, 0), verl(2, 0), verl(3, 1), verl(4, 1), verl(5, 2)].join('\n'));
    expect(metrics(rs).map((m) => m.values['epoch'])).toEqual([undefined, undefined, 1.5, 2, 2.5]);
    // resumed at step 101: epoch 0 again, so only two ticks tell the length of an epoch
    const resumed = feed([verl(101, 0), verl(110, 1), verl(119, 1), verl(139, 2)].join('\n'));
    expect(metrics(resumed).map((m) => m.values['epoch'])).toEqual([undefined, undefined, undefined, 139 / 29]);
  });
});

describe('console: TRL rich completion tables', () => {
  const table = [
    '╭──────────────────────── Step 15 ────────────────────────╮',
    '│ ┏━━━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓ │',
    '│ ┃ Prompt     ┃ Completion  ┃ accuracy_ ┃ format_r ┃ Advantage ┃ answer_parsed ┃ │',
    '│ ┃            ┃             ┃ reward    ┃ eward    ┃           ┃               ┃ │',
    '│ ┡━━━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩ │',
    "│ │ What is    │ It is 4.    │      1.00 │     0.50 │      0.71 │ [4, '4']      │ │",
    '│ │ 2+2?       │ Done.       │           │          │           │               │ │',
    '│ ├────────────┼─────────────┼───────────┼──────────┼───────────┼───────────────┤ │',
    "│ │ What is    │ 5           │      0.00 │     0.00 │     -0.71 │ [5, '5']      │ │",
    '│ │ 2+2?       │             │           │          │           │               │ │',
    '│ └────────────┴─────────────┴───────────┴──────────┴───────────┴───────────────┘ │',
    '╰─────────────────────────────────────────────────────────╯',
  ].join('\n');

  it('makes each row an example of the step in the title: reward columns summed, advantage kept, answers not', () => {
    const ex = examples(feed(table));
    expect(ex).toHaveLength(2);
    expect(ex[0]).toMatchObject({
      step: 15,
      prompt: 'What is\n2+2?',
      completion: 'It is 4.\nDone.',
      reward: 1.5,
      breakdown: { accuracy_reward: 1, format_reward: 0.5, advantage: 0.71 },
    });
    expect(ex[1]).toMatchObject({
      step: 15,
      completion: '5',
      reward: 0,
      breakdown: { accuracy_reward: 0, format_reward: 0, advantage: -0.71 },
    });
    expect(ex[0]!.key).not.toBe(ex[1]!.key);
  });

  it('lets go of a panel cut short, and reads the dict line that follows', () => {
    const cut = table.split('\n').slice(0, 7).join('\n');
    const rs = feed(`${cut}\n 30%|███       | 15/50 [02:55<07:03, 12.10s/it]{'loss': 0.1, 'reward': 0.2}`);
    expect(metrics(rs)).toEqual([{ step: 15, values: { loss: 0.1, reward: 0.2 } }]);
  });
});

describe("console: the R1-Zero GRPO logging guide's ComprehensiveLoggingCallback", () => {
  it('files every block line under the Step line above it; reads ± as printed on any platform', () => {
    const rs = feed(
      [
        'Step   10 | Loss: 2.3450 | LR: 5.00e-05 | Epoch: 0.50',
        '         GRPO | Policy: 1.2340 | Value: 0.5670 | Entropy: 0.0890',
        '',
        'Reward Breakdown:',
        '  accuracy       :  0.750 ¬± 0.433 [ 0.000,  1.000]',
        '  format         :  0.875 Â± 0.331 [ 0.000,  1.000] ',
        '  reasoning_steps:  0.625 ± 0.217 [ 0.330,  1.000]',
        '  total          :  2.250 (combined)',
        '',
        'Generation Quality:',
        '  Format compliance:  87.5% (7/8)',
        '  Reasoning indicators:  2.14 per response',
        '',
        'Performance:',
        '  Step time:      3.24s',
        '  GPU memory:     4.32GB (reserved: 5.12GB)',
        '  RAM usage:     12.45GB (62.3%)',
        '  CPU usage:     45.2%',
        '',
        '  3%|▎         | 12/400 [00:40<21:00,  3.2s/it]',
      ].join('\n'),
    );
    const merged: Record<string, number> = {};
    for (const m of metrics(rs)) {
      expect(m.step).toBe(10);
      Object.assign(merged, m.values);
    }
    expect(merged).toEqual({
      loss: 2.345,
      lr: 5e-5,
      epoch: 0.5,
      'grpo/policy_loss': 1.234,
      'grpo/value_loss': 0.567,
      entropy: 0.089,
      'rewards/accuracy': 0.75,
      'rewards/accuracy/std': 0.433,
      'rewards/accuracy/min': 0,
      'rewards/accuracy/max': 1,
      'rewards/format': 0.875,
      'rewards/format/std': 0.331,
      'rewards/format/min': 0,
      'rewards/format/max': 1,
      'rewards/reasoning_steps': 0.625,
      'rewards/reasoning_steps/std': 0.217,
      'rewards/reasoning_steps/min': 0.33,
      'rewards/reasoning_steps/max': 1,
      reward: 2.25,
      format_compliance_pct: 87.5,
      reasoning_indicators: 2.14,
      step_time: 3.24,
      gpu_memory_gb: 4.32,
      gpu_memory_reserved_gb: 5.12,
      ram_usage_gb: 12.45,
      ram_usage_pct: 62.3,
      cpu_usage_pct: 45.2,
    });
  });

  it('reads the GENERATION EXAMPLES block as the best and worst examples of the step', () => {
    const rs = feed(
      [
        'Step   50 | Loss: 0.3000 | LR: 4.00e-05 | Epoch: 1.00',
        '='.repeat(80),
        'GENERATION EXAMPLES  ',
        '='.repeat(80),
        'BEST EXAMPLE (idx 3):',
        'Content: <think>',
        'Step 1: I need to solve 2 + 2',
        '</think>',
        '',
        '<answer>',
        '4',
        '</answer>',
        '',
        'Reward breakdown:',
        '  accuracy: 1.000',
        '  format: 1.000',
        '  total: 2.000',
        '-'.repeat(40),
        'WORST EXAMPLE (idx 1): ',
        'Content: The answer is 5 because I think so.',
        '',
        'Reward breakdown:',
        '  accuracy: 0.000',
        '  format: 0.000',
        '  total: 0.000',
        '='.repeat(80),
        'Step   52 | Loss: 0.2000 | LR: 3.90e-05 | Epoch: 1.04',
      ].join('\n'),
    );
    expect(examples(rs)).toEqual([
      expect.objectContaining({
        step: 50,
        completion: '<think>\nStep 1: I need to solve 2 + 2\n</think>\n\n<answer>\n4\n</answer>',
        reward: 2,
        breakdown: { accuracy: 1, format: 1 },
      }),
      expect.objectContaining({
        step: 50,
        completion: 'The answer is 5 because I think so.',
        reward: 0,
        breakdown: { accuracy: 0, format: 0 },
      }),
    ]);
    expect(metrics(rs).map((m) => m.step)).toEqual([50, 52]);
  });

  it('ends a GENERATION EXAMPLES block that is cut short, and reads on', () => {
    const rs = feed(
      [
        'Step   50 | Loss: 0.3000 | LR: 4.00e-05',
        'GENERATION EXAMPLES',
        '='.repeat(80),
        "{'loss': 0.25, 'step': 51}",
      ].join('\n'),
    );
    expect(metrics(rs).map((m) => m.step)).toEqual([50, 51]);
  });
});
