import { describe, expect, it } from 'vitest';
import { lineBreak, Sums } from '../../src/engine/breaks.ts';
import { successiveSd } from '../../src/engine/stats.ts';

/** A fixed pseudo-random noise in [-1, 1] (an LCG): the same numbers on every run. */
function noise(n: number, seed = 7): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return (2 * x) / 2 ** 31 - 1;
  });
}

describe('Sums', () => {
  const v = noise(60).map((e, j) => 0.3 + 0.01 * j + 0.1 * e);
  const s = new Sums(v);

  it('gives the mean and the successive-difference noise of any span, as the plain loops do', () => {
    const slice = v.slice(12, 40);
    expect(s.mean(12, 40)).toBeCloseTo(slice.reduce((a, b) => a + b, 0) / slice.length, 12);
    expect(s.sd(12, 40)).toBeCloseTo(successiveSd(v, 12, 40), 12);
  });

  it('fits the least-squares line of a span: level at its centre and slope per record', () => {
    // an exact line comes back exactly
    const line = new Sums(Array.from({ length: 30 }, (_, j) => 2 - 0.5 * j)).line(10, 20);
    expect(line.slope).toBeCloseTo(-0.5, 12);
    expect(line.level).toBeCloseTo(2 - 0.5 * 14.5, 12);
    expect(line.centre).toBe(14.5);
  });
});

describe('lineBreak', () => {
  const climb = (j: number): number => 0.1 + 0.002 * j;

  it('finds a 20% fall from a climb that the climb hides from two window means', () => {
    // 100 records climbing with noise ±0.02, then 20 records at 80% of where the climb had got to
    const e = noise(120);
    const v = e.map((x, j) => (j < 100 ? climb(j) : 0.8 * climb(99)) + 0.02 * x);
    const b = lineBreak(new Sums(v), 119, 100, 0, () => true);
    expect(b).not.toBeNull();
    expect(b!.z).toBeLessThan(-6);
    // the line at the centre of the last m records (index 119 - (m - 1)/2): where the climb would be
    expect(b!.expected).toBeCloseTo(climb(119 - (b!.m - 1) / 2), 1);
    expect(b!.observed).toBeCloseTo(0.8 * climb(99), 1);
  });

  it('a climb that goes on is no break', () => {
    const v = noise(120).map((x, j) => climb(j) + 0.02 * x);
    expect(Math.abs(lineBreak(new Sums(v), 119, 100, 0, () => true)!.z)).toBeLessThan(3);
  });

  it('needs fit + 5 records since `from`: no line is fitted across a break it found before', () => {
    const v = noise(120).map((x, j) => climb(j) + 0.02 * x);
    expect(lineBreak(new Sums(v), 119, 100, 16, () => true)).toBeNull();
    expect(lineBreak(new Sums(v), 119, 100, 15, () => true)!.m).toBe(5);
  });
});

describe('Sums.phi over a sliding window', () => {
  it('reads the same φ as a fresh reading of each window, jumps, ties and steps included', () => {
    // AR(1)-ish noise rounded to 2 decimals (equal differences: ties among the largest jumps), with a few jumps
    // that enter the 400-record window and fall out of it again
    const e = noise(3000, 11);
    let x = 0;
    const values = e.map((v, i) => {
      x = 0.8 * x + 0.1 * v;
      const jump = i % 700 === 350 ? 3 : i % 500 === 100 ? -2 : 0;
      return Math.round((0.5 + x + jump) * 100) / 100;
    });
    const sliding = new Sums(values);
    for (let i = 0; i < values.length; i++) {
      const from = Math.max(0, i - 399);
      expect(sliding.phi(values, from, i + 1)).toBe(new Sums(values).phi(values, from, i + 1));
    }
  });
});
