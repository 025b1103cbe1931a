import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqlDigest, type SeriesDigest } from '../../src/store/seriesDigest.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { series, write, type Series } from './digestSeries.ts';

/** What the digest of the newest `last` points must be, straight from the points written (plain loops). */
function expected(s: Series, last?: number) {
  const from = last === undefined ? 0 : Math.max(0, s.steps.length - last);
  const steps = s.steps.slice(from);
  const values = s.values.slice(from);
  const n = steps.length;
  const finite = values.filter(Number.isFinite);
  const share = (j: number, k: number): [number, number] => [Math.floor((j * n) / k), Math.floor(((j + 1) * n) / k)];
  const overview: number[] = [];
  if (n <= 60) overview.push(...values);
  else {
    for (let c = 0; c < 60; c++) {
      const [a, b] = share(c, 60);
      const xs = values.slice(a, b).filter(Number.isFinite);
      overview.push(xs.length > 0 ? xs.reduce((x, y) => x + y, 0) / xs.length : NaN);
    }
  }
  // the chart: every finite point when few; else the first lowest and first highest finite point of each of 600 shares
  const chart: Array<{ step: number; value: number }> = [];
  if (n <= 1200) {
    steps.forEach((step, i) => {
      if (Number.isFinite(values[i])) chart.push({ step, value: values[i]! });
    });
  } else {
    for (let j = 0; j < 600; j++) {
      const [a, b] = share(j, 600);
      let lo = -1;
      let hi = -1;
      for (let i = a; i < b; i++) {
        if (!Number.isFinite(values[i])) continue;
        if (lo < 0 || values[i]! < values[lo]!) lo = i;
        if (hi < 0 || values[i]! > values[hi]!) hi = i;
      }
      for (const i of [...new Set([lo, hi])].filter((i) => i >= 0).sort((x, y) => x - y)) {
        chart.push({ step: steps[i]!, value: values[i]! });
      }
    }
  }
  return {
    length: n,
    firstStep: steps[0],
    lastStep: steps[n - 1],
    min: Math.min(...finite),
    max: Math.max(...finite),
    tail: { steps: steps.slice(-10), values: values.slice(-10) },
    overview,
    chart,
  };
}

function expectDigest(got: SeriesDigest, want: ReturnType<typeof expected>): void {
  const { overview, ...rest } = got;
  const { overview: wantOverview, ...wantRest } = want;
  expect(rest).toEqual(wantRest);
  expect(overview).toHaveLength(wantOverview.length);
  overview.forEach((v, i) => {
    if (Number.isNaN(wantOverview[i])) expect(v).toBeNaN();
    else expect(v).toBeCloseTo(wantOverview[i]!, 12);
  });
}

/** The digest as a one-shot command reads it (SQLite sums the series up) and as a long-lived process does. */
function digests(path: string, last?: number): { cold: SeriesDigest; kept: SeriesDigest } {
  const reader = Store.openForReading(path);
  const cold = reader.points.digest(reader.runs.list()[0]!.id, 'reward', last);
  reader.close();
  const kept = Store.open(path);
  const warm = kept.points.digest(kept.runs.list()[0]!.id, 'reward', last);
  kept.close();
  return { cold, kept: warm };
}

type Routes = { shares: () => unknown; withGaps: () => unknown; fromRows: () => unknown };
const routes = SqlDigest.prototype as unknown as Routes;

afterEach(() => vi.restoreAllMocks());

describe('series digest (what reward history shows), from every point without reading them all', () => {
  it('sums a series of whole steps up in SQLite, equal to the points themselves, whole and its newest points', () => {
    const path = join(tempDir(), 'd.db');
    const s = series(
      Array.from({ length: 5000 }, (_, i) => i + 1),
      3001,
    );
    write(path, s);
    const shares = vi.spyOn(routes, 'shares');
    const gaps = vi.spyOn(routes, 'withGaps');
    for (const last of [undefined, 3000, 1201]) {
      const { cold, kept } = digests(path, last);
      expectDigest(cold, expected(s, last));
      expectDigest(kept, expected(s, last));
    }
    expect(shares).toHaveBeenCalledTimes(3); // the shortcut was taken, and no gap was suspected
    expect(gaps).not.toHaveBeenCalled();
    const whole = digests(path).cold;
    expect(whole.chart).toContainEqual({ step: 3001, value: 9.5 }); // a one-step spike survives
    expect(whole.chart).toContainEqual({ step: 3002, value: -4.25 });
    expect(whole.chart.length).toBeLessThanOrEqual(1200);
  });

  it('finds the shares of a series with gaps in the index', () => {
    const path = join(tempDir(), 'd.db');
    const steps = Array.from({ length: 12000 }, (_, i) => i + 1).filter((x) => x % 3 !== 0 && (x < 4000 || x > 4500));
    const s = series(steps, 7001);
    write(path, s);
    const gaps = vi.spyOn(routes, 'withGaps');
    for (const last of [undefined, 2500]) expectDigest(digests(path, last).cold, expected(s, last));
    expect(gaps).toHaveBeenCalledTimes(2);
  });

  it('reads a small window (or a short series) whole', () => {
    const path = join(tempDir(), 'd.db');
    const s = series(
      Array.from({ length: 3000 }, (_, i) => 10 * i),
      500,
    );
    write(path, s);
    const rows = vi.spyOn(routes, 'fromRows');
    for (const last of [50, 1000]) {
      const { cold, kept } = digests(path, last);
      expectDigest(cold, expected(s, last));
      expectDigest(kept, expected(s, last));
    }
    expect(rows).toHaveBeenCalledTimes(2);
    const short = join(tempDir(), 's.db');
    const few = series([1, 2, 3, 5, 8], 2);
    write(short, few);
    expectDigest(digests(short).cold, expected(few));
  });
});
