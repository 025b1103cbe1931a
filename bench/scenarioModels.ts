/**
 * Scenario traces of preset v2: healthy runs of three "models" logged by three trainers, and the
 * failures practitioners watch, each under the trainer's own metric names (the store maps them through
 * `canonicalName`, as the ingestor does).
 *
 * - low (TRL names): entropy ~0.02, reward 0.3 -> 0.7 in [0, 1], two reward functions, epoch to 1.2
 * - mid (verl names): entropy ~0.22 slowly down, score 0.3 -> 0.7, PPO with a critic
 * - rising (OpenRLHF names): entropy rising 0.3 -> 0.5, reward in [-3, 0] rising -2.5 -> -1.0, PPO
 * - untuned (TRL names): what nobody tuned for: reward in [-1, 0] rising -0.8 -> -0.2 under AR(1) noise (φ 0.6),
 *   a large model's grad norm (median 2.5, log-normal σ 0.6: past 10 now and then), KL from 0 (the policy starts
 *   as the reference) to 0.06 in 40 records, epoch to 1.2
 */
import { rng } from './generate.ts';
import type { Expectation, Scenario } from './scenarioTraces.ts';

const N = 300;
const ONSET = 150;

type Values = Record<string, number>;
type Model = 'low' | 'mid' | 'rising' | 'untuned';
type Trainer = 'trl' | 'verl' | 'openrlhf';

const TRAINER_OF: Record<Model, Trainer> = { low: 'trl', mid: 'verl', rising: 'openrlhf', untuned: 'trl' };

/** canonical -> the trainer's own key (the inverse of the aliases in src/ingest/metricNames.ts) */
const NAMES: Record<Trainer, Record<string, string>> = {
  trl: {
    frac_zero_std: 'frac_reward_zero_std',
    completion_length: 'completions/mean_length',
    clipped_ratio: 'completions/clipped_ratio',
    pg_clipfrac: 'clip_ratio/region_mean',
    lr: 'learning_rate',
    'rewards/accuracy_reward': 'rewards/accuracy_reward/mean',
    'rewards/format_reward': 'rewards/format_reward/mean',
  },
  verl: {
    reward: 'critic/score/mean',
    entropy: 'actor/entropy',
    completion_length: 'response_length/mean',
    clipped_ratio: 'response_length/clip_ratio',
    kl: 'actor/kl_loss',
    ppo_kl: 'actor/ppo_kl',
    pg_clipfrac: 'actor/pg_clipfrac',
    value_loss: 'critic/vf_loss',
    step_time: 'timing_s/step',
    grad_norm: 'actor/grad_norm',
    loss: 'actor/pg_loss',
  },
  openrlhf: {
    reward: 'train/reward',
    entropy: 'train/entropy_loss',
    completion_length: 'train/response_length',
    kl: 'train/kl',
    ppo_kl: 'train/ppo_kl',
    pg_clipfrac: 'train/ppo_clip_ratio',
    value_loss: 'train/critic_loss',
    loss: 'train/policy_loss',
  },
};

function gaussian(rand: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
}
const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));
const lerp = (a: number, b: number, t: number): number => a + (b - a) * t;
const r4 = (v: number): number => Math.round(v * 1e4) / 1e4;

/** Canonical values of a healthy run of `model`, steps 1..N. */
function healthy(model: Model, seed: number): Values[] {
  const rand = rng(seed);
  const g = gaussian(rand);
  let meander = 0; // the untuned model's AR(1) reward noise
  return Array.from({ length: N }, (_, i): Values => {
    const t = (i + 1) / N;
    const common = { grad_norm: clamp(Math.exp(Math.log(0.3) + 0.4 * g()), 0.05, 2), loss: 0.02 * g() };
    if (model === 'low') {
      const accuracy = clamp(lerp(0.2, 0.6, t) + 0.04 * g(), 0, 1);
      const format = clamp(lerp(0.5, 0.9, t) + 0.03 * g(), 0, 1);
      let agree = 0;
      for (let k = 0; k < 8; k++) if (rand() < 0.03) agree++;
      return {
        ...common,
        epoch: 1.2 * t,
        reward: (accuracy + format) / 2,
        reward_std: clamp(0.3 + 0.02 * g(), 0.05, 0.5),
        'rewards/accuracy_reward': accuracy,
        'rewards/format_reward': format,
        frac_zero_std: agree / 8,
        entropy: clamp(0.02 + 0.002 * g(), 0.01, 0.03),
        completion_length: 500 + 30 * g(),
        clipped_ratio: clamp(0.02 + 0.01 * g(), 0, 1),
        kl: clamp(lerp(0.001, 0.01, t) + 0.0005 * g(), 0, 1),
        pg_clipfrac: clamp(0.002 + 0.001 * g(), 0, 1),
        step_time: 12 + g(),
      };
    }
    if (model === 'untuned') {
      meander = 0.6 * meander + Math.sqrt(1 - 0.36) * 0.05 * g();
      return {
        epoch: 1.2 * t,
        grad_norm: 2.5 * Math.exp(0.6 * g()),
        loss: 0.02 * g(),
        reward: clamp(lerp(-0.8, -0.2, t) + meander, -1, 0),
        reward_std: clamp(0.3 + 0.02 * g(), 0.05, 0.5),
        frac_zero_std: clamp(0.05 + 0.02 * g(), 0, 1),
        entropy: 0.3 + 0.02 * g(),
        completion_length: 300 + 20 * g(),
        clipped_ratio: clamp(0.01 + 0.005 * g(), 0, 1),
        kl: Math.max(0, 0.06 * Math.min(1, (i + 1) / 40) * (1 + 0.25 * g())),
      };
    }
    if (model === 'mid') {
      return {
        ...common,
        reward: clamp(lerp(0.3, 0.7, t) + 0.04 * g(), 0, 1),
        entropy: lerp(0.22, 0.18, t) + 0.01 * g(),
        completion_length: 400 + 20 * g(),
        clipped_ratio: clamp(0.01 + 0.005 * g(), 0, 1),
        kl: clamp(lerp(0.001, 0.005, t) + 0.0005 * g(), 0, 1),
        ppo_kl: clamp(0.002 + 0.001 * g(), -1, 1),
        pg_clipfrac: clamp(0.003 + 0.001 * g(), 0, 1),
        value_loss: 0.3 + 0.03 * g(),
        step_time: 60 + 4 * g(),
      };
    }
    return {
      ...common,
      reward: clamp(lerp(-2.5, -1.0, t) + 0.15 * g(), -3, 0),
      entropy: lerp(0.3, 0.5, t) + 0.02 * g(),
      completion_length: lerp(300, 450, t) + 20 * g(),
      kl: clamp(lerp(0.01, 0.05, t) + 0.003 * g(), 0, 1),
      ppo_kl: clamp(0.003 + 0.001 * g(), -1, 1),
      pg_clipfrac: clamp(0.01 + 0.003 * g(), 0, 1),
      value_loss: 0.5 + 0.05 * g(),
    };
  });
}

/** Under the trainer's names, rounded as a logger would print them. */
function named(model: Model, steps: Values[]): Values[] {
  const names = NAMES[TRAINER_OF[model]];
  return steps.map((v) => Object.fromEntries(Object.entries(v).map(([k, x]) => [names[k] ?? k, r4(x)])));
}

interface Failure {
  name: string;
  description: string;
  expected: Expectation;
  friends: string[];
  /** canonical values from the onset on */
  patch: (v: Values, step: number, g: () => number, level: Values) => Values;
  onset?: number;
}

const FAILURES: Record<string, Failure> = {
  entropy: {
    name: 'entropy-collapse',
    description: 'entropy falls to 15% of its level within 5 steps and stays there',
    expected: { rule: 'entropy_drop', metric: 'entropy', severities: ['warning'] },
    friends: ['entropy_collapse'],
    patch: (v, s, g, level) => ({
      ...v,
      entropy: (level.entropy as number) * lerp(1, 0.15, Math.min(1, (s - ONSET + 1) / 5)) * (1 + 0.05 * g()),
    }),
  },
  truncation: {
    name: 'truncation',
    description: 'a quarter of the completions hit the length limit',
    expected: { rule: 'truncation', metric: 'clipped_ratio', severities: ['warning'] },
    friends: [],
    patch: (v, _s, g) => ({ ...v, clipped_ratio: clamp(0.25 + 0.03 * g(), 0, 1) }),
  },
  length: {
    name: 'length-collapse',
    description: 'completion length falls to 35% of its level',
    expected: { rule: 'length_collapse', metric: 'completion_length', severities: ['warning'] },
    friends: [],
    patch: (v, _s, g, level) => ({ ...v, completion_length: 0.35 * (level.completion_length as number) + 10 * g() }),
  },
  kl: {
    name: 'kl-blowup',
    description: 'the KL to the reference jumps to ~0.15 (tens of times its early level)',
    expected: { rule: 'kl_blowup', metric: 'kl', severities: ['warning'] },
    friends: [],
    patch: (v, _s, g) => ({ ...v, kl: 0.15 + 0.02 * g() }),
  },
  value: {
    name: 'value-loss-spike',
    description: 'one value-loss spike of 10x at the onset, healthy otherwise',
    expected: { rule: 'value_loss_spike', metric: 'value_loss', severities: ['warning'] },
    friends: [],
    patch: (v, s) => (s === ONSET ? { ...v, value_loss: 10 * (v.value_loss as number) } : v),
  },
  slow: {
    name: 'slow-steps',
    description: 'steps take 3.5x as long from the onset (a slow node)',
    expected: { rule: 'slow_steps', metric: 'step_time', severities: ['warning'] },
    friends: [],
    patch: (v) => ({ ...v, step_time: 3.5 * (v.step_time as number) }),
  },
  grad: {
    name: 'grad-spike',
    description:
      'one grad norm of 30 at the onset: 12x the median of 2.5 (the fixed line of 10 is crossed by healthy records)',
    expected: { rule: 'grad_explosion', metric: 'grad_norm', severities: ['critical'] },
    friends: [],
    patch: (v, s) => (s === ONSET ? { ...v, grad_norm: 30 } : v),
  },
  hacking: {
    name: 'reward-hacking',
    description: 'format reward 0.7 -> 0.95 while accuracy 0.4 -> 0.1 over 20 steps (open-r1 issue pattern)',
    expected: { rule: 'reward_hacking', metric: 'rewards/*', severities: ['warning'] },
    friends: ['reward_trend'],
    patch: (v, s, g) => {
      const t = Math.min(1, (s - ONSET + 1) / 20);
      const accuracy = clamp(lerp(0.4, 0.1, t) + 0.04 * g(), 0, 1);
      const format = clamp(lerp(0.7, 0.95, t) + 0.03 * g(), 0, 1);
      return {
        ...v,
        'rewards/accuracy_reward': accuracy,
        'rewards/format_reward': format,
        reward: (accuracy + format) / 2,
      };
    },
  },
};

/** Which failures each model shows (a failure needs the metric the model logs). */
const CASES: Record<Model, Array<keyof typeof FAILURES>> = {
  low: ['length', 'truncation', 'slow', 'hacking'],
  mid: ['entropy', 'truncation', 'length', 'kl', 'value', 'slow'],
  rising: ['entropy', 'length', 'kl', 'value'],
  untuned: ['grad', 'entropy', 'length'],
};

/** The v2 suite: a healthy run of each model, then each failure on the models that log its metric. */
export function buildModelScenarios(seedOffset = 0): Scenario[] {
  const out: Scenario[] = [];
  const models: Model[] = ['low', 'mid', 'rising', 'untuned'];
  models.forEach((model, m) => {
    const seed = 9001 + 100 * m + seedOffset;
    const trainer = TRAINER_OF[model];
    out.push({
      name: `healthy-${model}-${trainer}`,
      description: `healthy ${model} model under ${trainer} names`,
      seed,
      onset: null,
      expected: null,
      friends: [],
      steps: named(model, healthy(model, seed)),
      stall: false,
      format: 'jsonl',
    });
    CASES[model].forEach((key, k) => {
      const f = FAILURES[key]!;
      const fseed = seed + 1 + k;
      const base = healthy(model, fseed);
      const level = base[ONSET - 2]!;
      const g = gaussian(rng(fseed ^ 0x5eed));
      const steps = base.map((v, i) => (i + 1 >= ONSET ? f.patch(v, i + 1, g, level) : v));
      out.push({
        name: `${f.name}-${model}-${trainer}`,
        description: `${f.description} (${model} model, ${trainer} names)`,
        seed: fseed,
        onset: ONSET,
        expected: f.expected,
        friends: f.friends,
        steps: named(model, steps),
        stall: false,
        format: 'jsonl',
      });
    });
  });
  return out;
}
