import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../scripts/rng.ts';
import { canonicalName, decimalAt, isCanonicalMetric, parseNumber } from '../../../src/ingest/metricNames.ts';

describe('canonicalName', () => {
  it.each([
    // TRL
    ['frac_reward_zero_std', 'frac_zero_std'],
    ['learning_rate', 'lr'],
    ['completions/mean_length', 'completion_length'],
    ['completions/clipped_ratio', 'clipped_ratio'],
    ['rewards/accuracy_reward/mean', 'rewards/accuracy_reward'],
    ['rewards/accuracy_reward/std', 'rewards/accuracy_reward/std'],
    ['reward_std', 'reward_std'],
    ['grad_norm', 'grad_norm'],
    ['kl', 'kl'],
    ['objective/kl', 'kl'],
    ['train/reward', 'reward'],
    ['train/rewards/fmt/mean', 'rewards/fmt'],
    ['train/learning_rate', 'lr'],
    ['eval/reward', 'eval/reward'],
    // verl
    ['critic/score/mean', 'reward'],
    ['actor/entropy', 'entropy'],
    ['actor/entropy_loss', 'entropy'],
    ['actor/grad_norm', 'grad_norm'],
    ['actor/pg_loss', 'loss'],
    ['actor/lr', 'lr'],
    ['actor/kl_loss', 'kl'],
    ['response_length/mean', 'completion_length'],
    ['response_length/clip_ratio', 'clipped_ratio'],
    ['critic/score/max', 'critic/score/max'],
    // the OCaml GRPO trainer's learning.log
    ['grad', 'grad_norm'],
    ['syntax_rew', 'rewards/syntax_aware_reward'],
    // home-grown loops (minimind, DeepSpeed-Chat, the R1-Zero GRPO logging callback), in any case
    ['Reward', 'reward'],
    ['average reward score', 'reward'],
    ['KL_ref', 'kl'],
    ['Actor Loss', 'loss'],
    ['act_loss', 'loss'],
    ['policy_loss', 'loss'],
    ['Avg Response Len', 'completion_length'],
    ['response_length', 'completion_length'],
    ['Learning Rate', 'lr'],
    ['actor_lr', 'lr'],
    ['LR', 'lr'],
    ['Loss', 'loss'],
    ['Adv Std', 'Adv Std'],
    ['cri_loss', 'cri_loss'],
    // OpenRLHF's wandb / tensorboard names
    ['train/policy_loss', 'loss'],
    ['train/actor_lr', 'lr'],
    ['train/response_length', 'completion_length'],
    ['train/kl', 'kl'],
    // others unchanged, trimmed
    ['  timing_s/gen ', 'timing_s/gen'],
    ['rewards/mean', 'rewards/mean'],
    ['train/', 'train/'],
  ])('%s -> %s', (raw, name) => {
    expect(canonicalName(raw)).toBe(name);
  });

  it('gives the same names from its cache, also once a stream of new keys has filled it', () => {
    for (let i = 0; i < 10_000; i++) expect(canonicalName(`key_${i}`)).toBe(`key_${i}`);
    expect(canonicalName('Actor Loss')).toBe('loss');
    expect(canonicalName('Actor Loss')).toBe('loss');
    expect(canonicalName(' train/rewards/fmt/mean ')).toBe('rewards/fmt');
    const long = `train/${'x'.repeat(10_000)}`; // not cached, read all the same
    expect(canonicalName(long)).toBe('x'.repeat(10_000));
  });

  it('knows the canonical set and rewards/*', () => {
    expect(isCanonicalMetric('frac_zero_std')).toBe(true);
    expect(isCanonicalMetric('rewards/syntax_aware_reward/std')).toBe(true);
    expect(isCanonicalMetric('frac_reward_zero_std')).toBe(false);
    expect(isCanonicalMetric('timing_s/gen')).toBe(false);
  });
});

describe('parseNumber', () => {
  it.each([
    ['0.123', 0.123],
    [' 2e-06 ', 2e-6],
    ['-1.5E+3', -1500],
    ['42', 42],
    ['.5', 0.5],
    ['np.float64(0.01)', 0.01],
    ['np.float32(-3.5)', -3.5],
    ['numpy.float64(1e-06)', 1e-6],
    ['np.int64(7)', 7],
    ['np.float64(nan)', NaN],
    ['tensor(0.5)', 0.5],
    ["tensor(0.5, device='cuda:0')", 0.5],
    ["tensor(-2.25, device='cuda:0', dtype=torch.bfloat16)", -2.25],
    ["'0.06166'", 0.06166],
    ['"0.5"', 0.5],
    ["'nan'", NaN],
    ['nan', NaN],
    ['NaN', NaN],
    ['-nan', NaN],
    ['inf', Infinity],
    ['-inf', -Infinity],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['+inf', Infinity],
  ])('%s -> %d', (raw, value) => {
    expect(parseNumber(raw)).toEqual(value);
  });

  it.each([
    'None',
    'null',
    'True',
    'False',
    '',
    '  ',
    'abc',
    '1.00%',
    '1m',
    '10/1000',
    '0x1f',
    '0b1',
    '0o7',
    "'np.float64(1)'",
    'tensor([0.5, 0.6])',
    "'abc'",
    "'",
    'np.float64()',
  ])('%j -> undefined', (raw) => {
    expect(parseNumber(raw)).toBeUndefined();
  });
});

describe('decimalAt', () => {
  /** Number() is the reference: what decimalAt reads, it must read exactly as Number() does. */
  const agrees = (s: string) => {
    const n = decimalAt(s, 0, s.length);
    if (n !== undefined) expect(Object.is(n, Number(s)), s).toBe(true);
    return n !== undefined;
  };

  it('reads plain decimals in every spelling Python and JavaScript print, bit for bit as Number()', () => {
    const rand = mulberry32(5);
    for (let i = 0; i < 20_000; i++) {
      const v = (rand() - 0.5) * 10 ** Math.floor(rand() * 24 - 12);
      const digits = 1 + Math.floor(rand() * 15);
      const spellings = [String(v), v.toFixed(digits % 10), v.toExponential(digits - 1), `${v}`.replace('e', 'E')];
      for (const s of spellings) agrees(s);
      // up to 15 significant digits of a metric's usual size: always read here, never left to the slow path
      const usual = Math.abs(v) >= 1e-6 && Math.abs(v) < 1e6;
      expect(agrees(v.toPrecision(digits)) || !usual, v.toPrecision(digits)).toBe(true);
    }
    const plain = ['-0', '+0', '0.000', '-0.0', '.5', '-.5', '+.5', '5.', '007', '0.00000030', '3.58e-06', '1E+3'];
    for (const s of [...plain, '123456789012345']) expect(agrees(s), s).toBe(true);
  });

  it('leaves to parseNumber what is not a plain decimal or is too long for one exact operation', () => {
    const others = [
      '',
      '.',
      '-',
      '+',
      'e5',
      '1e',
      '1e+',
      '1.2.3',
      '1e5.5',
      '0x1f',
      '0b1',
      '1_000',
      '1,5',
      'nan',
      'inf',
    ];
    for (const s of [...others, ' 1', '1 ', '1234567890123456', '1e23', '1e-23', '١']) {
      expect(decimalAt(s, 0, s.length), s).toBeUndefined();
    }
  });

  it('reads only its range of a longer string', () => {
    const line = 'x=0.5y 1e-5 7.25';
    expect(decimalAt(line, 2, 5)).toBe(0.5);
    expect(decimalAt(line, 7, 9)).toBeUndefined(); // `1e` whatever follows it
    expect(decimalAt(line, 12, 15)).toBe(7.2); // `7.2` of `7.25`
    expect(decimalAt(line, 3, 3)).toBeUndefined();
  });
});
