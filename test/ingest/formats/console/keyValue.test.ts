import { describe, expect, it } from 'vitest';
import { consoleLog } from '../../../../src/ingest/formats/console/console.ts';
import { readKeyValueLine } from '../../../../src/ingest/formats/console/keyValue.ts';
import { parseNumber } from '../../../../src/ingest/metricNames.ts';
import type { LineParser, ParseResult } from '../../../../src/ingest/records.ts';

const read = (line: string) => readKeyValueLine(line, parseNumber);

function metric(r: ParseResult): { step?: number; values: Record<string, number> } {
  if (r.kind !== 'metric') throw new Error(`expected a metric, got ${JSON.stringify(r)}`);
  const out: { step?: number; values: Record<string, number> } = { values: Object.fromEntries(r.record.values) };
  if (r.record.step !== undefined) out.step = r.record.step;
  return out;
}

describe('readKeyValueLine: the shapes of home-grown loops', () => {
  it('reads minimind: Epoch:[e/E](k/N) gives the global step, the total and a fractional epoch', () => {
    expect(
      read('Epoch:[2/3](12/100), Reward: -1.6523, KL_ref: -0.0069, Actor Loss: 0.0002, Learning Rate: 0.00000030'),
    ).toEqual({
      pairs: [
        ['Reward', -1.6523],
        ['KL_ref', -0.0069],
        ['Actor Loss', 0.0002],
        ['Learning Rate', 3e-7],
      ],
      step: 112,
      total: 300,
      epoch: 1.12,
    });
  });

  it('reads DeepSpeed-Chat pipes, `key=value` with spaces, `Step N |`, [k/N] and (k/N)', () => {
    expect(read('epoch: 0|step: 7|ppo_ep: 1|act_loss: 0.2099609375|cri_loss: 0.1204')).toEqual({
      pairs: [
        ['ppo_ep', 1],
        ['act_loss', 0.2099609375],
        ['cri_loss', 0.1204],
      ],
      step: 7,
      epoch: 0,
    });
    expect(read('step=3 loss=0.5 reward=nan')).toEqual({
      pairs: [
        ['loss', 0.5],
        ['reward', NaN],
      ],
      step: 3,
    });
    expect(read('Step   10 | Loss: 2.3450 | LR: 5.00e-05 | Epoch: 0.50')).toEqual({
      pairs: [
        ['Loss', 2.345],
        ['LR', 5e-5],
      ],
      step: 10,
      epoch: 0.5,
    });
    expect(read('[12/500] loss: 0.31  reward: 0.75  kl: 0.002')).toEqual({
      pairs: [
        ['loss', 0.31],
        ['reward', 0.75],
        ['kl', 0.002],
      ],
      step: 12,
      total: 500,
    });
    expect(read('(3/9) policy_loss=0.1; response_length=120')).toMatchObject({ step: 3, total: 9 });
    expect(read('Step 5: loss=0.3, reward=0.5')).toEqual({
      pairs: [
        ['loss', 0.3],
        ['reward', 0.5],
      ],
      step: 5,
    });
    expect(read('Step 5/100 - loss: 0.3')).toBeUndefined();
    expect(read('Step 5/100 | loss: 0.3')).toEqual({ pairs: [['loss', 0.3]], step: 5, total: 100 });
    expect(read('  accuracy       :  0.750')).toEqual({ pairs: [['accuracy', 0.75]] });
  });

  it("reads past Python logging's date, time and level", () => {
    const pairs = {
      pairs: [
        ['loss', 0.3],
        ['reward', 0.5],
      ],
      step: 5,
    };
    expect(read('2024-05-01 12:00:00,123 - INFO - step: 5, loss: 0.3, reward: 0.5')).toEqual(pairs);
    expect(read('[2024-05-01 12:00:00] INFO step=5 loss=0.3 reward=0.5')).toEqual(pairs);
    expect(read('2024-05-01T12:00:00.5 [INFO] Step 5 | loss: 0.3 | reward: 0.5')).toEqual(pairs);
    expect(read('2024-05-01 12:00:00 step=5 loss=0.3 reward=0.5')).toEqual(pairs);
    // the rest of the line must still be pairs
    expect(read('2024-05-01 12:00:00,123 - INFO - Saving checkpoint to out/checkpoint-500')).toBeUndefined();
    expect(
      read('[2023-04-18 08:48:01,543] [INFO] [loss_scaler.py:188:update_scale] loss scale: 65536'),
    ).toBeUndefined();
    expect(read('2024-05-01 12:00 loss=0.3 reward=0.5')).toBeUndefined();
  });

  it('refuses prose, config, logger lines, warnings, tracebacks and units', () => {
    for (const line of [
      'Setting maximum total tokens (input + output) to 512',
      'Free memory : 19.605713 (GigaBytes)',
      'Model Params: 30.03M',
      '|E2E latency=7.99s |Gather latency=0.00s (0.00%) |CurSamplesPerSec=8.01',
      '[2023-04-18 08:48:01,543] [INFO] [loss_scaler.py:188:update_scale] OVERFLOW! Attempted loss scale: 65536',
      "  'clip_ratio': 0.2,",
      '(TaskRunner pid=38606) TaskRunner hostname: pm-4ddg9, PID: 38606',
      'Namespace(lr=1e-06, batch_size=8)',
      '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl',
      'RuntimeError: CUDA error: device-side assert triggered',
      'Epoch 1 done, loss: 0.5',
      'Num examples = 7,473',
      'time: 12:30:01',
      'reward: None, loss: 0.1',
      'the final reward of this particular very long sentence that goes on: 0.5',
    ]) {
      expect(read(line), line).toBeUndefined();
    }
  });

  it('reads a 1 MB line without separators in one pass (the benchmark times it)', () => {
    expect(read('x'.repeat(1 << 20))).toBeUndefined();
    expect(read(`a: 1 ${'b'.repeat(1 << 20)}: 2`)).toBeUndefined();
  });
});

describe('the console reader on home-grown lines', () => {
  const lines = (parse: LineParser, text: string): ParseResult[] => text.split('\n').map((l) => parse(l));

  it('maps the aliases of home-grown loops onto canonical names', () => {
    const parse = consoleLog.open({ relPath: 'train.log' });
    expect(
      metric(
        parse(
          'Epoch:[1/1](12/9751), Reward: -1.6523, KL_ref: -0.0069, Adv Std: 0.9256, Actor Loss: 0.0002, Avg Response Len: 89.12, Learning Rate: 0.00000030',
        ),
      ),
    ).toEqual({
      step: 12,
      values: {
        reward: -1.6523,
        kl: -0.0069,
        'Adv Std': 0.9256,
        loss: 0.0002,
        completion_length: 89.12,
        lr: 3e-7,
        epoch: 12 / 9751,
      },
    });
    expect(metric(parse('step: 4, policy_loss: 0.3, response_length: 210, actor_lr: 1e-6'))).toEqual({
      step: 4,
      values: { loss: 0.3, completion_length: 210, lr: 1e-6 },
    });
  });

  it("files DeepSpeed-Chat's reward line under the step line before it; a lone setting elsewhere is noise", () => {
    const parse = consoleLog.open({ relPath: 'train.log' });
    const [step, reward, rule] = lines(
      parse,
      'epoch: 0|step: 7|ppo_ep: 1|act_loss: 0.25|cri_loss: 0.125|unsuper_loss: 0.0\naverage reward score: 0.3017578125\n-----',
    );
    expect(metric(step!)).toEqual({
      step: 7,
      values: { epoch: 0, ppo_ep: 1, loss: 0.25, cri_loss: 0.125, unsuper_loss: 0 },
    });
    expect(metric(reward!)).toEqual({ step: 7, values: { reward: 0.3017578125 } });
    expect(rule).toEqual({ kind: 'noise' });
    const fresh = consoleLog.open({ relPath: 'train.log' });
    expect(fresh('average reward score: 0.5')).toEqual({ kind: 'noise' });
    expect(fresh('lr: 1e-06')).toEqual({ kind: 'noise' });
  });

  it('numbers lines without a step in file order (the pipeline does), two pairs at least', () => {
    const parse = consoleLog.open({ relPath: 'train.log' });
    expect(metric(parse('loss: 0.5, reward: 0.25'))).toEqual({ values: { loss: 0.5, reward: 0.25 } });
    expect(parse('loss: 0.5')).toEqual({ kind: 'noise' });
  });
});
