/**
 * Labelled, deterministic learning.log traces for the alert-scenario suite (bench/scenarios.ts).
 *
 * Every trace is built on a healthy run that follows the trajectory of a GRPO training analysis (Qwen2.5-Coder-1.5B
 * on OCaml problems: "Expected Training Trajectory (After Fixes)"), with the noise seen in its sample lines; an
 * incident trace replaces values from its onset step with the pattern the learning.log metrics guide describes for
 * that failure. Values are rounded as
 * learning.log prints them (`loss=%.4f grad=%.4f lr=%.2e reward=%.3f±%.3f ... frac_zero_std=%.2f`),
 * under the canonical names the learning.log parser gives them.
 */
import { rng } from './generate.ts';

export const METRICS = [
  'epoch',
  'loss',
  'grad_norm',
  'lr',
  'reward',
  'reward_std',
  'rewards/syntax_aware_reward',
  'rewards/syntax_aware_reward/std',
  'entropy',
  'frac_zero_std',
] as const;
export type MetricName = (typeof METRICS)[number];
export type StepValues = Record<MetricName, number>;

export type Severity = 'info' | 'warning' | 'critical';

export interface Expectation {
  rule: string;
  /** the alert key's metric (a threshold rule's first metric; `activity` for stalls) */
  metric: string;
  /** severities that count as catching it (reward_trend: the fall, not the info-level rise) */
  severities: readonly Severity[];
}

export interface Scenario {
  name: string;
  description: string;
  seed: number;
  /** first abnormal step (1-based record number, as the pipeline numbers learning.log lines); null: healthy */
  onset: number | null;
  expected: Expectation | null;
  /** rules that may rightly fire once the incident is under way (consequences of the same failure) */
  friends: readonly string[];
  /** values of steps 1..n (index 0 is step 1), under the names the trainer logs them with */
  steps: Array<Record<string, number>>;
  /** the records stop after the last step: evaluate the stall by the clock */
  stall: boolean;
  /** a slow failure (a plateau): significant only after a while, so judged by the gradual delay target */
  gradual?: boolean;
  /** one step every this many ms (default: the suite's 30 s) */
  stepMs?: number;
  /** an evaluation every `every` steps: no record for `ms`, a progress line every `printEveryMs` */
  evalPause?: { every: number; ms: number; printEveryMs: number };
  /** how the trace is written out for looking at it (default: learning.log lines) */
  format?: 'learningLog' | 'jsonl';
}

export const TOTAL_STEPS = 300;
export const FINAL_EPOCH = 1.2;
export const ONSET = 150;
export const PLATEAU_ONSET = 100;

// ------------------------------------------------------------------------------------------ helpers

const round = (v: number, dp: number): number => {
  const f = 10 ** dp;
  const r = Math.round(v * f) / f;
  return r === 0 ? 0 : r; // no -0 in the store
};
const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));
/** `%.2e`: three significant digits */
const sig3 = (v: number): number => Number(v.toExponential(2));

/** Box–Muller on top of the bench's mulberry32. */
function gaussian(rand: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const u = Math.max(rand(), 1e-12);
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

/**
 * Binomial(n, p) / n: frac_zero_std of a batch of 4 prompt groups is a multiple of 0.25 (the training analysis'
 * lines).
 */
function fracOf(rand: () => number, groups: number, p: number): number {
  let k = 0;
  for (let i = 0; i < groups; i++) if (rand() < p) k++;
  return k / groups;
}

export const epochOf = (step: number): number => (FINAL_EPOCH * step) / TOTAL_STEPS;

/** The training analysis: rewards 0.05 → 0.15 (epoch 0.3) → 0.35 (0.6) → 0.55 (1.0) → 0.70+ later. */
const REWARD_KNOTS: ReadonlyArray<readonly [number, number]> = [
  [0, 0.05],
  [0.3, 0.15],
  [0.6, 0.35],
  [1.0, 0.55],
  [1.2, 0.62],
];
export function rewardTrajectory(epoch: number): number {
  for (let i = 1; i < REWARD_KNOTS.length; i++) {
    const [e1, r1] = REWARD_KNOTS[i]!;
    const [e0, r0] = REWARD_KNOTS[i - 1]!;
    if (epoch <= e1) return r0 + ((r1 - r0) * (epoch - e0)) / (e1 - e0);
  }
  return REWARD_KNOTS[REWARD_KNOTS.length - 1]![1];
}

/** The training analysis: frac_zero_std "drops from 0.50 → 0.10" over epoch 0-0.3, "< 0.10" at 0.5 and after. */
export function fracTrajectory(epoch: number): number {
  return Math.max(0.01, 0.5 * Math.exp((-Math.log(5) / 0.3) * epoch));
}

/** within-batch reward std as a fraction of the mean: the training analysis sees 50-70% early, "< 0.30" is healthy */
const cvOf = (epoch: number): number => 0.7 - (0.4 * Math.min(epoch, 1.2)) / 1.2;

/** Peak 5e-6 (the training analysis' GRPO_LEARNING_RATE) after 10 warm-up steps, then linear decay. */
const lrOf = (step: number): number =>
  step <= 10 ? (5e-6 * step) / 10 : 5e-6 - (4.5e-6 * (step - 10)) / (TOTAL_STEPS - 10);

// ------------------------------------------------------------------------------------------ healthy

/**
 * A healthy run of `n` steps: reward on the training analysis' trajectory, with batch-to-batch noise of ~0.3× the
 * within-batch std (the analysis: 0.066-0.115 around 0.09 with std 0.044-0.081); loss oscillating within
 * -0.19..+0.12, grad_norm log-normal around 0.04 (the analysis: 0.015-0.087; expected 0.01-0.5), entropy
 * 0.10-0.20 slowly decreasing, frac_zero_std a multiple of 0.25 following `fracTrajectory`.
 */
export function healthySteps(seed: number, n = TOTAL_STEPS): StepValues[] {
  const rand = rng(seed);
  const g = gaussian(rand);
  const out: StepValues[] = [];
  for (let step = 1; step <= n; step++) {
    const epoch = epochOf(step);
    const t = step / TOTAL_STEPS;
    const mean = rewardTrajectory(epoch);
    const stdExpected = mean * cvOf(epoch);
    const reward = clamp(mean + 0.3 * stdExpected * g(), 0.005, 1);
    const rewardStd = clamp(stdExpected * (1 + 0.15 * g()), 0.005, 0.25);
    const syntaxStd = clamp(rewardStd + 0.006 * Math.abs(g()), 0.005, 0.25);
    out.push({
      epoch: round(epoch, 2),
      loss: round(clamp(-0.02 + 0.04 * g(), -0.19, 0.12), 4),
      grad_norm: round(clamp(Math.exp(Math.log(0.04) + 0.5 * g()), 0.01, 0.5), 4),
      lr: sig3(lrOf(step)),
      reward: round(reward, 3),
      reward_std: round(rewardStd, 3),
      // one reward function: its mean is the reward; its std is computed a little differently (the training analysis)
      'rewards/syntax_aware_reward': round(reward, 3),
      'rewards/syntax_aware_reward/std': round(syntaxStd, 3),
      entropy: round(clamp(0.16 - 0.03 * t + 0.015 * g(), 0.1, 0.2), 3),
      frac_zero_std: round(fracOf(rand, 4, fracTrajectory(epoch)), 2),
    });
  }
  return out;
}

/** Replaces values from `from` (1-based step) on with what `patch` returns. */
function patchFrom(
  steps: StepValues[],
  from: number,
  seed: number,
  patch: (v: StepValues, step: number, g: () => number) => Partial<StepValues>,
): StepValues[] {
  const g = gaussian(rng(seed ^ 0x5eed));
  return steps.map((v, i) => (i + 1 >= from ? { ...v, ...patch(v, i + 1, g) } : v));
}

// ------------------------------------------------------------------------------------------ scenarios

/** The suite. `seedOffset` shifts every seed: the same scenarios with other noise (for what-if runs). */
export function buildScenarios(seedOffset = 0): Scenario[] {
  const healthy = (name: string, seed: number): Scenario => ({
    name,
    description: "healthy run on the training analysis' expected trajectory",
    seed,
    onset: null,
    expected: null,
    friends: [],
    steps: healthySteps(seed),
    stall: false,
  });

  const milestones = ['milestone_reward_epoch_1', 'stop_reward_epoch_1', 'stop_frac_zero_std_epoch_1'];

  // the learning.log guide's "Mode Collapse Warning":
  // loss=0.0000 grad=0.000 reward=0.210±0.000 syntax_rew=0.210±0.000
  // entropy=0.044 frac_zero_std=1.00 (here entropy ~0.035: "Sudden drops to ~0.04")
  const collapseSeed = 2001 + seedOffset;
  const collapse: Scenario = {
    name: 'collapse',
    description: 'mode collapse at step 150: frac_zero_std 1.00, reward 0.210±0.000, entropy ~0.035, loss/grad 0',
    seed: collapseSeed,
    onset: ONSET,
    expected: { rule: 'mode_collapse', metric: 'frac_zero_std', severities: ['critical'] },
    friends: ['entropy_collapse', 'entropy_drop', 'no_learning', 'reward_trend', 'reward_plateau', ...milestones],
    steps: patchFrom(healthySteps(collapseSeed), ONSET, collapseSeed, (_v, _s, g) => ({
      loss: 0,
      grad_norm: 0,
      reward: 0.21,
      reward_std: 0,
      'rewards/syntax_aware_reward': 0.21,
      'rewards/syntax_aware_reward/std': 0,
      entropy: round(clamp(0.035 + 0.002 * g(), 0.03, 0.039), 3),
      frac_zero_std: 1,
    })),
    stall: false,
  };

  // the learning.log guide's "Runaway Completions": loss=-0.0311 grad=0.028 reward=0.050±0.000 syntax_rew=0.050±0.000
  // entropy=0.055 frac_zero_std=1.00
  const runawaySeed = 3001 + seedOffset;
  const runaway: Scenario = {
    name: 'runaway',
    description: 'runaway completions from step 150: reward 0.050±0.000, frac_zero_std 1.00, entropy ~0.055',
    seed: runawaySeed,
    onset: ONSET,
    expected: { rule: 'runaway_completions', metric: 'reward', severities: ['critical'] },
    friends: ['mode_collapse', 'reward_trend', 'reward_plateau', ...milestones],
    steps: patchFrom(healthySteps(runawaySeed), ONSET, runawaySeed, (_v, _s, g) => ({
      reward: 0.05,
      reward_std: 0,
      'rewards/syntax_aware_reward': 0.05,
      'rewards/syntax_aware_reward/std': 0,
      entropy: round(clamp(0.055 + 0.003 * g(), 0.048, 0.062), 3),
      frac_zero_std: 1,
    })),
    stall: false,
  };

  // the learning.log guide's "Gradient Instability": loss=0.0947 grad=15.786 ... entropy=0.103, then back to normal
  const spikeSeed = 4001 + seedOffset;
  const spike: Scenario = {
    name: 'grad-spike',
    description: 'single grad_norm spike of 15.786 at step 150 (the learning.log guide), healthy otherwise',
    seed: spikeSeed,
    onset: ONSET,
    expected: { rule: 'grad_explosion', metric: 'grad_norm', severities: ['critical'] },
    friends: [],
    steps: healthySteps(spikeSeed).map((v, i) =>
      i + 1 === ONSET ? { ...v, grad_norm: 15.786, loss: 0.0947, entropy: 0.103 } : v,
    ),
    stall: false,
  };

  // the learning.log guide: "Plateau at < 0.3: Model stuck in low-quality local optimum"
  const plateauSeed = 5001 + seedOffset;
  const plateau: Scenario = {
    name: 'plateau',
    description: 'reward stuck at ~0.20 (noise σ 0.01) from step 100',
    seed: plateauSeed,
    onset: PLATEAU_ONSET,
    gradual: true,
    expected: { rule: 'reward_plateau', metric: 'reward', severities: ['warning'] },
    friends: ['milestone_reward_epoch_0.5', ...milestones],
    steps: patchFrom(healthySteps(plateauSeed), PLATEAU_ONSET, plateauSeed, (_v, step, g) => {
      const reward = round(clamp(0.2 + 0.01 * g(), 0.16, 0.24), 3);
      const std = clamp(0.2 * cvOf(epochOf(step)) * (1 + 0.15 * g()), 0.005, 0.25);
      return {
        reward,
        reward_std: round(std, 3),
        'rewards/syntax_aware_reward': reward,
        'rewards/syntax_aware_reward/std': round(std + 0.006 * Math.abs(g()), 3),
      };
    }),
    stall: false,
  };

  // the R1-Zero GRPO logging guide: "Warnings for significant reward changes (>10%)";
  // "format ↘️ -12.1% (0.923 → 0.811)"
  const dropSeed = 6001 + seedOffset;
  const dropLevel = 0.8 * rewardTrajectory(epochOf(ONSET));
  const drop: Scenario = {
    name: 'reward-drop',
    description: `reward falls by 20% at step 150 (${rewardTrajectory(epochOf(ONSET)).toFixed(3)} → ${dropLevel.toFixed(3)}) and stays there`,
    seed: dropSeed,
    onset: ONSET,
    expected: { rule: 'reward_trend', metric: 'reward', severities: ['warning', 'critical'] },
    friends: ['reward_plateau', ...milestones],
    steps: patchFrom(healthySteps(dropSeed), ONSET, dropSeed, (_v, step, g) => {
      const std = dropLevel * cvOf(epochOf(step));
      const reward = round(clamp(dropLevel + 0.3 * std * g(), 0.005, 1), 3);
      return { reward, 'rewards/syntax_aware_reward': reward };
    }),
    stall: false,
  };

  const stallSeed = 7001 + seedOffset;
  const stall: Scenario = {
    name: 'stall',
    description: 'healthy until step 150, then no more records (the job hung)',
    seed: stallSeed,
    onset: ONSET,
    expected: { rule: 'run_stalled', metric: 'activity', severities: ['warning'] },
    friends: [],
    steps: healthySteps(stallSeed, ONSET),
    stall: true,
  };

  // hang detection fitted to the run's pace, on fast and slow steps
  const hang = (name: string, seed: number, stepMs: number, pace: string): Scenario => ({
    name,
    description: `${pace} steps, healthy until step 150, then no more lines (the job hung)`,
    seed,
    onset: ONSET,
    expected: { rule: 'run_stalled', metric: 'activity', severities: ['warning'] },
    friends: [],
    steps: healthySteps(seed, ONSET),
    stall: true,
    stepMs,
  });
  const slowEvalSeed = 1101 + seedOffset;
  const slowEval: Scenario = {
    ...healthy('healthy-3m-eval', slowEvalSeed),
    description: 'healthy, a step every 3 min, a 20-min evaluation every 100 steps (a progress line a minute)',
    stepMs: 180_000,
    evalPause: { every: 100, ms: 20 * 60_000, printEveryMs: 60_000 },
  };

  return [
    healthy('healthy-1', 1001 + seedOffset),
    healthy('healthy-2', 1002 + seedOffset),
    healthy('healthy-3', 1003 + seedOffset),
    collapse,
    runaway,
    spike,
    plateau,
    drop,
    stall,
    slowEval,
    hang('hang-20s', 7101 + seedOffset, 20_000, '20 s'),
    hang('hang-3m', 7201 + seedOffset, 180_000, '3-min'),
  ];
}

// ------------------------------------------------------------------------------------------ log text

const pyExp = (v: number): string => {
  const [mant, exp] = v.toExponential(2).split('e') as [string, string];
  return `${mant}e${exp.startsWith('-') ? '-' : '+'}${exp.replace(/^[+-]/, '').padStart(2, '0')}`;
};

/** The step as the trainer would have written it to learning.log (for looking at a trace). */
export function learningLogLine(v: StepValues): string {
  return (
    `[Epoch ${v.epoch.toFixed(2)}]  loss=${v.loss.toFixed(4)}  grad=${v.grad_norm.toFixed(4)}  lr=${pyExp(v.lr)}  ` +
    `reward=${v.reward.toFixed(3)}±${v.reward_std.toFixed(3)}  ` +
    `syntax_rew=${v['rewards/syntax_aware_reward'].toFixed(3)}±${v['rewards/syntax_aware_reward/std'].toFixed(3)}  ` +
    `entropy=${v.entropy.toFixed(3)}  frac_zero_std=${v.frac_zero_std.toFixed(2)}`
  );
}
