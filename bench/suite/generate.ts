/**
 * The suite's training runs as arrays of canonical metrics, one value per logged step (every step logged).
 *
 * A healthy run is built from how GRPO/PPO training behaves: a reward that rises and saturates
 * (a − b·exp(−t/τ)), measured as a batch mean of n samples (noise ∝ 1/√n), with AR(1) meander and Student-t
 * innovations; an LR warm-up over the first ~5% of steps whose transient widens the noise and drifts the values;
 * KL from 0 to ~1e-4 and growing slowly; heavy-tailed grad norms; a slowly decaying entropy; a drifting completion
 * length with a few truncated completions; a low, noisy share of prompt groups with equal rewards.
 * Failures (failures.ts) are overlays on such a run from a labelled onset step.
 */
import { ar1, binomialShare, rng, studentT, warmupFactor, type Rng } from './noise.ts';

export type RewardScale = '01' | 'neg' | 'hundreds';

export interface HealthyParams {
  steps: number;
  seed: number;
  /** samples per step (prompts × generations): the batch mean's noise ∝ 1/√batch */
  batch: number;
  /** generations per prompt (GRPO group) */
  group: number;
  scale: RewardScale;
  /** AR(1) coefficient of the reward's step-to-step noise, and the innovations' degrees of freedom */
  phi: number;
  df: number;
  /** the median grad norm after warm-up */
  gradMedian: number;
  entropy0: number;
  length0: number;
  /** completion length change over the run, as a fraction of length0 (−0.2 .. +0.5) */
  lengthDrift: number;
  /** max completion length (tokens) */
  maxLength: number;
  /** KL after the warm-up, and its growth factor by the end */
  kl0: number;
  klGrowth: number;
  peakLr: number;
  /** seconds per step at length0 */
  stepTime: number;
  epochs: number;
  /** TRL reward functions: one (it is the reward) or two (accuracy and format, weights 0.5 each) */
  fns?: readonly string[];
  /** verl PPO: a critic's value loss */
  critic?: boolean;
  /** the reward's saturation level and rise: r(t) = top − rise·exp(−t/τ) in the run's own units */
  top: number;
  rise: number;
  /** τ as a fraction of the run */
  tau: number;
}

export interface Generated {
  steps: number[];
  /** canonical metric name → one value per step (NaN allowed) */
  metrics: Map<string, number[]>;
}

const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** per-sample standard deviation of the reward, in the run's units */
function sampleSd(scale: RewardScale, level: number): number {
  if (scale === '01') return Math.max(0.15, Math.sqrt(clamp(level, 0.02, 0.98) * (1 - clamp(level, 0.02, 0.98))));
  if (scale === 'neg') return 0.35;
  return 0.3 * Math.abs(level);
}

/** A bounded [0, 1] batch mean of Bernoulli(p) samples (a pass/fail reward function) with AR noise `z`. */
export function passRate(p: number, n: number, z: number, warm: number): { mean: number; std: number } {
  const pp = clamp(p, 0.005, 0.995);
  const mean = clamp(pp + Math.sqrt((pp * (1 - pp)) / n) * z * warm, 0, 1);
  return { mean, std: Math.sqrt(mean * (1 - mean)) };
}

export function generateHealthy(p: HealthyParams): Generated {
  const r: Rng = rng(p.seed);
  const n = p.steps;
  const warm = Math.max(5, Math.round(0.05 * n));
  const groups = Math.max(1, Math.round(p.batch / p.group));
  const tau = p.tau * n;
  const noiseR = ar1(r, n, p.phi, p.df);
  const noiseF = ar1(r, n, p.phi * 0.8, p.df);
  const noiseE = ar1(r, n, 0.7, p.df);
  const noiseL = ar1(r, n, 0.6, p.df);
  const noiseK = ar1(r, n, 0.8, p.df);
  const noiseV = ar1(r, n, 0.5, p.df);
  const noiseS = ar1(r, n, 0.3, p.df);
  const cols: Record<string, number[]> = {};
  const put = (k: string, v: number): void => {
    (cols[k] ??= []).push(v);
  };
  const stepsPerEpoch = n / p.epochs;
  const steps: number[] = [];
  for (let i = 0; i < n; i++) {
    steps.push(i + 1);
    const W = warmupFactor(i, warm, 2);
    /** the warm-up's drift: 1 at the end of it, up to 1 + 1 at the first step */
    const drift = warmupFactor(i, warm, 1);
    const level = p.top - p.rise * Math.exp(-i / tau);
    let reward: number;
    if (p.fns && p.fns.length === 2) {
      // accuracy follows the run's curve; format is learnt early and sits near (not at) its ceiling
      const acc = passRate(level, p.batch, noiseR[i]!, W);
      const fmtLevel = 0.93 - 0.6 * Math.exp(-i / (tau / 4));
      const fmt = passRate(fmtLevel, p.batch, noiseF[i]!, W);
      put(`rewards/${p.fns[0]}`, acc.mean);
      put(`rewards/${p.fns[0]}/std`, acc.std);
      put(`rewards/${p.fns[1]}`, fmt.mean);
      put(`rewards/${p.fns[1]}/std`, fmt.std);
      // TRL's reward is the weighted sum of its reward functions (GRPOTrainer: rewards_per_func × reward_weights,
      // summed over the functions; the weights default to 1), not their mean
      reward = acc.mean + fmt.mean;
    } else {
      const sd = sampleSd(p.scale, level) / Math.sqrt(p.batch);
      reward = level + sd * W * noiseR[i]!;
      if (p.scale === '01') reward = clamp(reward, 0, 1);
      if (p.scale === 'neg') reward = clamp(reward, -1, 0);
      if (p.fns && p.fns.length === 1) put(`rewards/${p.fns[0]}`, reward);
    }
    put('reward', reward);
    const within = sampleSd(p.scale, level) * 0.85 * (1 + 0.04 * noiseF[i]!);
    put('reward_std', within);
    if (p.fns && p.fns.length === 1) put(`rewards/${p.fns[0]}/std`, within);
    // groups whose G rewards all came out equal: few, more as the easy prompts get solved
    // (of two reward functions, their mean: the share of completions that score)
    const share = p.fns && p.fns.length === 2 ? reward / 2 : reward;
    const solved = p.scale === '01' ? Math.max(0, share - 0.55) * 0.3 : 0;
    put('frac_zero_std', binomialShare(r, groups, clamp(0.03 + solved + 0.03 * (drift - 1), 0, 1)));
    put(
      'entropy',
      p.entropy0 *
        (0.55 + 0.45 * Math.exp(-i / (0.8 * n))) *
        (1 + 0.25 * (drift - 1)) *
        Math.exp(0.04 * W * noiseE[i]!),
    );
    // log-scale heavy tails (Student-t, df 3), larger in the warm-up, held within 3× the median either way; now and
    // then a spike to 2-3× the median
    const tail = clamp(0.2 * (1 + 0.25 * (W - 1)) * studentT(r, 3), -Math.log(3), Math.log(3));
    put('grad_norm', p.gradMedian * drift * (r() < 0.004 ? 2 + r() : Math.exp(tail)));
    const kl =
      i === 0 ? 0 : p.kl0 * Math.min(1, i / warm) * (1 + (p.klGrowth - 1) * (i / n)) * Math.exp(0.3 * noiseK[i]!);
    put('kl', kl);
    put('loss', 0.04 * kl + 0.02 * W * studentT(r, p.df));
    const lr =
      i < warm
        ? (p.peakLr * (i + 1)) / warm
        : p.peakLr * (0.1 + 0.45 * (1 + Math.cos((Math.PI * (i - warm)) / (n - warm))));
    put('lr', lr);
    // a mean of lengths whose spread is about half their mean, multiplicative so that it stays positive
    const len =
      p.length0 *
      (1 + p.lengthDrift * (i / n)) *
      (1 + 0.15 * (drift - 1)) *
      Math.exp((0.5 / Math.sqrt(p.batch)) * W * noiseL[i]!);
    put('completion_length', len);
    // share of completions cut at the max length: a tail of the length distribution, rare at healthy lengths
    put('clipped_ratio', binomialShare(r, p.batch, clamp(5 * Math.exp((-3.5 * p.maxLength) / Math.max(1, len)), 0, 1)));
    put('step_time', p.stepTime * (len / p.length0) * (1 + 0.04 * noiseS[i]!) * (r() < 0.01 ? 1.4 : 1));
    if (p.critic) {
      // a critic's loss swings over a decade from step to step, mostly below its usual level: verl's GSM8K PPO
      // logs 0.002 to 0.105 around a median of 0.034 (down to 1/17 of it, up to 3×)
      put('value_loss', (0.03 + 0.8 * Math.exp(-i / (0.15 * n))) * drift * 4 * Math.exp(-1.1 * Math.abs(noiseV[i]!)));
    }
    // PPO-clip statistics: a few tokens clipped, the policy a hair from the one that sampled
    // a mean over ~10^5 tokens: smooth, drifting up slowly (verl PPO on Qwen3: 0.0021 to 0.0037 over 47 steps)
    put('pg_clipfrac', 0.0025 * (1 + 0.5 * (i / n)) * drift * Math.exp(0.08 * W * noiseS[i]!));
    put('ppo_kl', 2e-4 * drift * studentT(r, p.df));
    put('epoch', (i + 1) / stepsPerEpoch);
  }
  return { steps, metrics: new Map(Object.entries(cols)) };
}
