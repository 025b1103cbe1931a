/**
 * reward_plateau on seeded batch-mean rewards: AR(1) noise (neighbouring batches move together, as real batch-mean
 * rewards meander), a slow healthy climb that must stay quiet, and a plateau far below 0.3 that must be caught.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { Trace, presetOnly } from './trace.ts';

/** AR(1) noise: e[t] = phi e[t-1] + sd * N(0, 1), N from Box-Muller over the seeded uniform. */
function ar1(seed: number, n: number, phi: number, sd: number): number[] {
  const rand = mulberry32(seed);
  const out: number[] = [];
  let e = 0;
  for (let t = 0; t < n; t++) {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    e = phi * e + sd * z;
    out.push(e);
  }
  return out;
}

const plateauAlerts = (rewards: readonly number[]) =>
  new Trace({ book: presetOnly('reward_plateau') }).feed(rewards.map((reward) => ({ reward }))).alerts();

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];

describe('reward_plateau under autocorrelated noise', () => {
  it.each(SEEDS)(
    'a slow healthy climb (0.05 -> 0.3 over 300 steps, saturating, AR(1) phi 0.6) raises nothing, seed %i',
    (seed) => {
      // 0.05 + 0.4 (1 - e^(-t/300)): +0.033 over the first 25 steps (+60% of its level), +0.016 (+6%) near 0.3
      const noise = ar1(seed, 400, 0.6, 0.004);
      const rewards = noise.map((e, t) => 0.05 + 0.4 * (1 - Math.exp(-t / 300)) + e);
      expect(plateauAlerts(rewards).map((a) => `${a.fired_step} ${a.summary}`)).toEqual([]);
    },
  );

  it.each(SEEDS)('a plateau at 0.15 after a climb is caught within 65 steps of its onset, seed %i', (seed) => {
    // 150 steps climbing 0.05 -> 0.15, then 150 at 0.15: the same noise throughout
    const onset = 151;
    const noise = ar1(seed + 100, 300, 0.6, 0.004);
    const rewards = noise.map((e, t) => (t < onset - 1 ? 0.05 + (0.1 * t) / (onset - 1) : 0.15) + e);
    const alerts = plateauAlerts(rewards);
    expect(alerts.map((a) => a.rule)).toEqual(['reward_plateau']);
    expect(alerts[0]!.fired_step).toBeGreaterThanOrEqual(onset);
    // once its two 30-record windows lie mostly on it: over 30 seeds it was caught 28 to 64 steps in (median 38)
    expect(alerts[0]!.fired_step! - onset).toBeLessThanOrEqual(65);
  });
});
