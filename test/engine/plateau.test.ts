/**
 * reward_plateau on seeded batch-mean rewards: AR(1) noise (neighbouring batches move together, as real batch-mean
 * rewards meander), slow healthy climbs that must stay quiet, and plateaus far below 0.3 that must be caught.
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

  it.each(SEEDS)(
    'a steady slow climb at a low level under a batch of 256 (0.08 -> 0.33 over 600 steps, AR(1) phi 0.5) raises nothing, seed %i',
    (seed) => {
      // +0.025 over 60 steps at 0.1 (+25% of its level), while a 60-record slope there is read to about ±15%
      const noise = ar1(seed + 200, 700, 0.5, 1);
      const rewards = noise.map((e, t) => {
        const level = 0.08 + (0.25 * t) / 600;
        return level + e * batchSd(level);
      });
      expect(plateauAlerts(rewards).map((a) => `${a.fired_step} ${a.summary}`)).toEqual([]);
    },
  );

  it.each(SEEDS)('a plateau at 0.15 after a climb is caught after its onset, seed %i', (seed) => {
    // 150 steps climbing 0.05 -> 0.15, then 150 at 0.15: the same noise throughout
    const onset = 151;
    const noise = ar1(seed + 100, 300, 0.6, 0.004);
    const rewards = noise.map((e, t) => (t < onset - 1 ? 0.05 + (0.1 * t) / (onset - 1) : 0.15) + e);
    const alerts = plateauAlerts(rewards);
    expect(alerts.map((a) => a.rule)).toEqual(['reward_plateau']);
    expect(alerts[0]!.fired_step).toBeGreaterThanOrEqual(onset);
    // over one and a half or two windows where they read its change to within 10% of the level, else over four:
    // 38-102 steps in over these seeds (those whose φ reads 0.8 rather than 0.6 wait for the four)
    expect(alerts[0]!.fired_step! - onset).toBeLessThanOrEqual(105);
  });

  it('a steady slow climb of a quiet reward (0.1 -> 0.3 over 500 steps, AR(1) phi 0.6) is rarely called flat', () => {
    // +0.024 over 60 steps (+13% of its level at 0.18): over 30 seeds 3 were called flat, 93-257 records in, by a
    // slope read 3 standard errors low; the earlier rule (window means within 5% of the level) called 29 flat
    const flagged = Array.from({ length: 30 }, (_, k) => k + 901).filter((seed) => {
      const noise = ar1(seed, 600, 0.6, 0.004);
      return plateauAlerts(noise.map((e, t) => 0.1 + (0.2 * t) / 500 + e)).length > 0;
    });
    expect(flagged.length).toBeLessThanOrEqual(3);
  });

  it('a plateau at 0.12 after a fast rise under a batch of 256 is caught on every seed', () => {
    // 0.03 -> 0.12 with a time constant of 18 steps (95% of it by step 55), then flat: a batch of 256's noise
    const onset = 55;
    const delays = SEEDS.map((seed) => {
      const noise = ar1(seed + 300, 400, 0.5, 1);
      const rewards = noise.map((e, t) => 0.12 - 0.09 * Math.exp(-t / 18) + e * batchSd(0.12));
      const alerts = plateauAlerts(rewards);
      expect(alerts.map((a) => a.rule)).toEqual(['reward_plateau']);
      return alerts[0]!.fired_step! - onset;
    });
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    // once four windows lie on it (two read its change to ±26% of the level only): 91-132 steps in over these seeds
    expect(Math.max(...delays)).toBeLessThanOrEqual(140);
  });
});

/** The standard deviation of a pass rate's mean over a batch of 256 at `p`, scaled to stationary AR(1) φ 0.5
 * noise of unit variance: √(p(1 − p)/256) · √(1 − 0.5²). */
function batchSd(p: number): number {
  return Math.sqrt((p * (1 - p)) / 256) * Math.sqrt(1 - 0.25);
}
