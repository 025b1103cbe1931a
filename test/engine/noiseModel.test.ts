/**
 * The trend's noise model under autocorrelation: a batch-mean reward meanders (AR(1)), and windows of neighbours
 * that move together swing more than independent records would. The standard error of the difference of two
 * window means is checked against a simulation; the preset's reward_trend against AR(1) rewards from a seeded PRNG.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { windowDiffSe } from '../../src/engine/stats.ts';
import { Trace, presetOnly, series } from './trace.ts';

function normal(seed: number): () => number {
  const rand = mulberry32(seed);
  return () => Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
}

/** n records of level + AR(1) noise with lag-1 correlation phi and marginal sd `sd` */
function ar1(seed: number, n: number, phi: number, sd: number, level: (i: number) => number = () => 0.5): number[] {
  const g = normal(seed);
  let x = sd * g();
  return Array.from({ length: n }, (_, i) => {
    x = phi * x + Math.sqrt(1 - phi * phi) * sd * g();
    return level(i) + x;
  });
}

describe('windowDiffSe: the se of the difference of two adjacent window means of AR(1) records', () => {
  it('matches a simulation, in units of the noise from successive differences', () => {
    const w = 15;
    for (const phi of [0, 0.6, 0.9]) {
      const xs = ar1(11, 400_000, phi, 1);
      const diffs: number[] = [];
      for (let i = 0; i + 2 * w <= xs.length; i += 2 * w) {
        let a = 0;
        let b = 0;
        for (let k = 0; k < w; k++) (a += xs[i + k]!), (b += xs[i + w + k]!);
        diffs.push((b - a) / w);
      }
      const sdOf = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0) / v.length);
      let ss = 0;
      for (let i = 1; i < xs.length; i++) ss += (xs[i]! - xs[i - 1]!) ** 2;
      const sigmaD = Math.sqrt(ss / (2 * (xs.length - 1)));
      // the simulated spread of the statistic, against what the formula says from the same series' σ_d
      expect(windowDiffSe(phi, w) * sigmaD).toBeCloseTo(sdOf(diffs), 2);
    }
  });
});

describe('reward_trend on autocorrelated rewards', () => {
  const warnings = (values: number[]) =>
    new Trace({ book: presetOnly('reward_trend') })
      .batch(series('reward', values))
      .alerts()
      .filter((a) => a.fired_step !== null && a.severity !== 'info')
      .map((a) => a.fired_step!);

  it('no warning on 3 × 3,000 healthy steps of AR(1) noise, φ 0.6 (they raised 7 when read as independent)', () => {
    for (const seed of [1, 2, 3]) expect(warnings(ar1(seed, 3000, 0.6, 0.05))).toEqual([]);
  });

  it('none past the first 100 records at φ 0.9 (19 before), where 100 records tell φ', () => {
    for (const seed of [1, 2, 3]) expect(warnings(ar1(seed, 3000, 0.9, 0.05)).filter((s) => s > 100)).toEqual([]);
  });

  it('still catches a 25% fall in that noise within 20 records', () => {
    const values = ar1(4, 2500, 0.6, 0.03, (i) => (i + 1 >= 2000 ? 0.375 : 0.5));
    const fired = warnings(values);
    expect(fired.length).toBeGreaterThan(0);
    expect(fired[0]).toBeGreaterThanOrEqual(2000);
    expect(fired[0]).toBeLessThanOrEqual(2020);
  });
});
