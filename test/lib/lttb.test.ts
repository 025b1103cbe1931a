import { describe, expect, it } from 'vitest';
import { lttb, lttbIndices } from '../../src/lib/lttb.ts';

interface P {
  x: number;
  y: number;
}

/** Steinarsson's reference implementation, written plainly, to compare against. */
function reference(data: P[], threshold: number): P[] {
  if (threshold >= data.length || threshold === 0) return data;
  const sampled: P[] = [];
  const every = (data.length - 2) / (threshold - 2);
  let a = 0;
  sampled.push(data[a]!);
  for (let i = 0; i < threshold - 2; i++) {
    let avgX = 0;
    let avgY = 0;
    let avgStart = Math.floor((i + 1) * every) + 1;
    let avgEnd = Math.floor((i + 2) * every) + 1;
    avgEnd = Math.min(avgEnd, data.length);
    const avgLen = avgEnd - avgStart;
    for (; avgStart < avgEnd; avgStart++) {
      avgX += data[avgStart]!.x;
      avgY += data[avgStart]!.y;
    }
    avgX /= avgLen;
    avgY /= avgLen;
    let from = Math.floor(i * every) + 1;
    const to = Math.floor((i + 1) * every) + 1;
    const ax = data[a]!.x;
    const ay = data[a]!.y;
    let maxArea = -1;
    let next = a;
    for (; from < to; from++) {
      const area = Math.abs((ax - avgX) * (data[from]!.y - ay) - (ax - data[from]!.x) * (avgY - ay)) * 0.5;
      if (area > maxArea) {
        maxArea = area;
        next = from;
      }
    }
    sampled.push(data[next]!);
    a = next;
  }
  sampled.push(data[data.length - 1]!);
  return sampled;
}

/** A deterministic pseudo-random series (mulberry32). */
function series(n: number, seed = 1): P[] {
  let s = seed >>> 0;
  const rand = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: n }, (_, i) => ({ x: i, y: Math.sin(i / 17) + rand() }));
}

describe('lttb', () => {
  it('keeps the first and last points and returns exactly `threshold` points', () => {
    const data = series(10_000);
    const inputs = new Set(data);
    for (const threshold of [3, 10, 100, 999, 1000, 9_999]) {
      const out = lttb(data, threshold);
      expect(out).toHaveLength(threshold);
      expect(out[0]).toBe(data[0]);
      expect(out[out.length - 1]).toBe(data[data.length - 1]);
      // In order, no duplicates, and the very objects of the input.
      expect(out.every((p, i) => i === 0 || p.x > out[i - 1]!.x)).toBe(true);
      expect(out.every((p) => inputs.has(p))).toBe(true);
    }
  });

  it('chooses the same points as the reference implementation', () => {
    for (const [n, threshold] of [
      [1000, 100],
      [1234, 57],
      [5000, 1000],
      [101, 3],
    ] as const) {
      const data = series(n, n);
      expect(lttb(data, threshold)).toEqual(reference(data, threshold));
    }
  });

  it('returns the input unchanged (as a copy) when it is not longer than the threshold', () => {
    const data = series(50);
    const out = lttb(data, 50);
    expect(out).toEqual(data);
    expect(out).not.toBe(data);
    expect(lttb(data, 1000)).toEqual(data);
    expect(lttb([], 10)).toEqual([]);
  });

  it('keeps a single spike in a 1,000,000-point flat series', () => {
    const data = Array.from({ length: 1_000_000 }, (_, i) => ({ x: i, y: i === 500_000 ? 100 : 0 }));
    const started = performance.now();
    const out = lttb(data, 1000);
    const ms = performance.now() - started;
    expect(out).toHaveLength(1000);
    expect(out).toContain(data[500_000]);
    expect(out.filter((p) => p.y === 100)).toHaveLength(1);
    if (ms > 100) console.log(`lttb of 1,000,000 points took ${ms.toFixed(0)} ms`);
  });

  it('drops points whose y is not finite before sampling', () => {
    const data: P[] = [
      { x: 0, y: 1 },
      { x: 1, y: NaN },
      { x: 2, y: 2 },
      { x: 3, y: Infinity },
      { x: 4, y: -Infinity },
      { x: 5, y: 3 },
    ];
    expect(lttb(data, 10)).toEqual([data[0], data[2], data[5]]);

    const long = series(2001).map((p, i) => (i % 3 === 1 ? { ...p, y: NaN } : p));
    const out = lttb(long, 100);
    expect(out).toHaveLength(100);
    expect(out.every((p) => Number.isFinite(p.y))).toBe(true);
    expect(out[0]).toBe(long[0]);
    expect(out[out.length - 1]).toBe(long[long.length - 1]);
    // Same result as sampling the finite points alone.
    expect(out).toEqual(
      lttb(
        long.filter((p) => Number.isFinite(p.y)),
        100,
      ),
    );

    const trailingNaN = [...series(500), { x: 500, y: NaN }];
    expect(lttb(trailingNaN, 50).at(-1)).toBe(trailingNaN[499]);
  });

  it('handles tiny thresholds and keeps extra fields', () => {
    const data = series(10).map((p) => ({ ...p, label: `p${p.x}` }));
    expect(lttb(data, 2)).toEqual([data[0], data[9]]);
    expect(lttb(data, 1)).toEqual([data[0]]);
    expect(lttb(data, 0)).toEqual([]);
    expect(lttb(data, 3.9)).toHaveLength(3);
    expect(lttb(data, 3)[1]!.label).toMatch(/^p\d$/);
    expect(() => lttb(data, NaN)).toThrow(RangeError);
  });

  it('exposes the core over flat arrays', () => {
    const xs = Float64Array.from({ length: 100 }, (_, i) => i);
    const ys = Float64Array.from({ length: 100 }, (_, i) => (i === 42 ? 9 : 0));
    const kept = lttbIndices(xs, ys, 100, 5);
    expect(Array.from(kept)).toContain(42);
    expect(kept).toHaveLength(5);
    expect(Array.from(lttbIndices(xs, ys, 4, 10))).toEqual([0, 1, 2, 3]);
  });
});
