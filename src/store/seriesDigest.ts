/**
 * What `reward history` shows of a series (overview, extremes, newest rows), summed up in the database, not read
 * point by point.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Columns } from './seriesCache.ts';

/**
 * What `reward history` shows of one series (or of its newest `last` points), computed from every point of it
 * without handing every point to JavaScript: a cold million-point series is summed up by SQLite in equal shares
 * of its points (a few hundred statements over the primary key), not read row by row.
 */
export interface SeriesDigest {
  /** points in the window */
  length: number;
  /** the window's first and last step (NaN when it is empty) */
  firstStep: number;
  lastStep: number;
  /** the smallest and largest finite value (Infinity and -Infinity when there is none) */
  min: number;
  max: number;
  /** the newest points, ascending (up to DIGEST_TAIL): the table's rows and the last value */
  tail: { steps: number[]; values: number[] };
  /** the window's values when it has at most OVERVIEW_WIDTH points, else the mean of the finite values of each of
   * OVERVIEW_WIDTH equal shares of its points (NaN for a share without one): what the one-line overview draws */
  overview: number[];
  /** finite points for the chart, ascending: all of them when there are at most 2 × DIGEST_BUCKETS, else the
   * lowest and the highest of each of DIGEST_BUCKETS equal shares (the first such point where values tie), so that
   * a spike of one step still shows */
  chart: Array<{ step: number; value: number }>;
}

export const OVERVIEW_WIDTH = 60;
/** shares of the points summed up; a multiple of OVERVIEW_WIDTH, so that each overview share is whole buckets */
export const DIGEST_BUCKETS = 600;
export const DIGEST_TAIL = 10;
/** windows of up to this many steps are read whole (as cheap as summing them up) */
const READ_WHOLE = 2 * DIGEST_BUCKETS;

/** One share of the window: its points' indices [from, to) and its finite values' count, sum and extremes. */
interface Bucket {
  count: number;
  finite: number;
  sum: number;
  min: number;
  minStep: number;
  max: number;
  maxStep: number;
}

/** The first index of share `j` of `n` points cut into `k` shares. */
const cut = (j: number, n: number, k: number): number => Math.floor((j * n) / k);

/** Where the newest `last` points of `length` begin (all of them without `last`). */
export const newestFrom = (length: number, last?: number): number =>
  last === undefined ? 0 : Math.max(0, length - last);

/** The digest of the newest `last` points of ascending columns (all of them without `last`). */
export const digestOfNewest = (cols: Columns, last?: number): SeriesDigest =>
  digestOfColumns(cols, newestFrom(cols.length, last), cols.length);

/** The digest of points `from`..`to` (exclusive) of ascending columns: the reference the SQL route must match. */
function digestOfColumns(cols: Columns, from: number, to: number): SeriesDigest {
  const { steps, values } = cols;
  const n = to - from;
  const buckets: Bucket[] = [];
  for (let j = 0; j < DIGEST_BUCKETS; j++) {
    const b = emptyBucket();
    for (let i = from + cut(j, n, DIGEST_BUCKETS); i < from + cut(j + 1, n, DIGEST_BUCKETS); i++) {
      const v = values[i] as number;
      b.count++;
      if (!Number.isFinite(v)) continue;
      b.finite++;
      b.sum += v;
      if (v < b.min) [b.min, b.minStep] = [v, steps[i] as number];
      if (v > b.max) [b.max, b.maxStep] = [v, steps[i] as number];
    }
    buckets.push(b);
  }
  const tailFrom = Math.max(from, to - DIGEST_TAIL);
  const points = (a: number) => ({
    steps: Array.from(steps.subarray(a, to)),
    values: Array.from(values.subarray(a, to)),
  });
  return assemble(n, buckets, {
    firstStep: n > 0 ? (steps[from] as number) : NaN,
    tail: points(tailFrom),
    few: n <= READ_WHOLE ? points(from) : null,
  });
}

function emptyBucket(): Bucket {
  return { count: 0, finite: 0, sum: 0, min: Infinity, minStep: NaN, max: -Infinity, maxStep: NaN };
}

/** The digest from the window's shares; `few` is the whole window when it is small (the chart then takes every
 * finite point, the overview every value). */
function assemble(
  n: number,
  buckets: readonly Bucket[],
  parts: { firstStep: number; tail: SeriesDigest['tail']; few: { steps: number[]; values: number[] } | null },
): SeriesDigest {
  let min = Infinity;
  let max = -Infinity;
  for (const b of buckets) {
    if (b.min < min) min = b.min;
    if (b.max > max) max = b.max;
  }
  const per = DIGEST_BUCKETS / OVERVIEW_WIDTH;
  const overview: number[] = [];
  if (n <= OVERVIEW_WIDTH) overview.push(...(parts.few?.values ?? []));
  else {
    for (let c = 0; c < OVERVIEW_WIDTH; c++) {
      let sum = 0;
      let finite = 0;
      for (const b of buckets.slice(c * per, (c + 1) * per)) {
        sum += b.sum;
        finite += b.finite;
      }
      overview.push(finite > 0 ? sum / finite : NaN);
    }
  }
  const chart: SeriesDigest['chart'] = [];
  if (parts.few) {
    parts.few.steps.forEach((step, i) => {
      const value = parts.few!.values[i] as number;
      if (Number.isFinite(value)) chart.push({ step, value });
    });
  } else {
    for (const b of buckets) {
      if (b.finite === 0) continue;
      const low = { step: b.minStep, value: b.min };
      const high = { step: b.maxStep, value: b.max };
      if (low.step === high.step) chart.push(low);
      else chart.push(...(low.step < high.step ? [low, high] : [high, low]));
    }
  }
  const { tail } = parts;
  return {
    length: n,
    firstStep: parts.firstStep,
    lastStep: tail.steps.length > 0 ? (tail.steps[tail.steps.length - 1] as number) : NaN,
    min,
    max,
    tail,
    overview,
    chart,
  };
}

/** SQLite has no NaN: it is stored as NULL and read back as NaN. */
const fromDb = (v: number | null): number => (v === null ? NaN : v);

/** The digest of a series summed up by SQLite (see SeriesDigest): the route for a series not held in memory. */
export class SqlDigest {
  private readonly edge: { first: Statement; last: Statement };
  private readonly rows: Statement;
  private readonly newest: Statement;
  private readonly count: Statement;
  private readonly nth: Statement;
  private readonly share: Statement;
  private readonly finiteShare: Statement;
  private readonly locate: Statement;

  constructor(db: Database) {
    const series = 'FROM points WHERE run_id = ? AND metric_id = ?';
    this.edge = {
      first: db.prepare(`SELECT step ${series} ORDER BY step LIMIT 1`).pluck(),
      last: db.prepare(`SELECT step ${series} ORDER BY step DESC LIMIT 1`).pluck(),
    };
    this.rows = db.prepare(`SELECT step, value ${series} ORDER BY step`).raw();
    this.newest = db.prepare(`SELECT step, value ${series} ORDER BY step DESC LIMIT ?`).raw();
    this.count = db.prepare(`SELECT count(*) ${series} AND step >= ?`).pluck();
    // the step `OFFSET` points past a step: the index is walked in C, no row reaches JavaScript
    this.nth = db.prepare(`SELECT step ${series} AND step >= ? ORDER BY step LIMIT 1 OFFSET ?`).pluck();
    // NULL (nan) is left out by sum, min, max and count(value); ±Infinity is not: such a share is summed again
    this.share = db
      .prepare(`SELECT count(*), count(value), sum(value), min(value), max(value) ${series} AND step >= ? AND step < ?`)
      .raw();
    // ±Infinity is a REAL infinity, which 9e999 spells in SQL
    this.finiteShare = db
      .prepare(
        `SELECT count(*), sum(value), min(value), max(value) ${series} AND step >= ? AND step < ? AND abs(value) < 9e999`,
      )
      .raw();
    this.locate = db
      .prepare(`SELECT step ${series} AND step >= ? AND step < ? AND value = ? ORDER BY step LIMIT 1`)
      .pluck();
  }

  /** The digest of the series' newest `last` points (all of them without `last`). */
  digest(runId: number, metricId: number, last?: number): SeriesDigest {
    const first = this.edge.first.get(runId, metricId) as number | undefined;
    const lastStep = this.edge.last.get(runId, metricId) as number | undefined;
    if (first === undefined || lastStep === undefined) return this.fromRows(runId, metricId, last);
    // steps are usually every whole number from the first on: then the window and its shares follow from the steps
    // alone, which the shares' counts confirm; a series with gaps is cut by walking the index
    const start = last === undefined ? first : Math.max(first, lastStep - last + 1);
    const span = lastStep - start + 1;
    if (span <= READ_WHOLE) return this.fromRows(runId, metricId, last);
    const guess = Array.from({ length: DIGEST_BUCKETS + 1 }, (_, j) => start + cut(j, span, DIGEST_BUCKETS));
    const buckets = this.shares(runId, metricId, guess, true);
    if (buckets) return this.finish(runId, metricId, span, start, buckets);
    return this.withGaps(runId, metricId, first, lastStep, last);
  }

  /** A series whose steps have gaps (or are not whole numbers): its window and shares are found in the index. */
  private withGaps(runId: number, metricId: number, first: number, lastStep: number, last?: number): SeriesDigest {
    const total = this.count.get(runId, metricId, first) as number;
    const n = last === undefined ? total : Math.min(total, last);
    const start = n === total ? first : (this.nth.get(runId, metricId, first, total - n) as number);
    if (n <= READ_WHOLE) return this.fromRows(runId, metricId, last);
    const bounds = [start];
    for (let j = 1; j < DIGEST_BUCKETS; j++) {
      const skip = cut(j, n, DIGEST_BUCKETS) - cut(j - 1, n, DIGEST_BUCKETS);
      bounds.push(this.nth.get(runId, metricId, bounds[j - 1], skip) as number);
    }
    bounds.push(lastStep + 1);
    return this.finish(runId, metricId, n, start, this.shares(runId, metricId, bounds, false)!);
  }

  /** Each share [bounds[j], bounds[j + 1]) summed up. `guessed` bounds assume a point at every whole step: undefined
   * as soon as a share holds another number of points than it spans steps (a gap; the cut is then wrong). */
  private shares(runId: number, metricId: number, bounds: readonly number[], guessed: boolean): Bucket[] | undefined {
    const out: Bucket[] = [];
    for (let j = 0; j < DIGEST_BUCKETS; j++) {
      const [from, to] = [bounds[j]!, bounds[j + 1]!];
      let [count, finite, sum, min, max] = this.share.get(runId, metricId, from, to) as number[];
      if (guessed && count !== to - from) return undefined;
      if (min === -Infinity || max === Infinity) {
        [finite, sum, min, max] = this.finiteShare.get(runId, metricId, from, to) as number[];
      }
      const b = emptyBucket();
      b.count = count!;
      b.finite = finite!;
      if (b.finite > 0) {
        b.sum = sum!;
        b.min = min!;
        b.max = max!;
        b.minStep = this.locate.get(runId, metricId, from, to, min) as number;
        b.maxStep = this.locate.get(runId, metricId, from, to, max) as number;
      }
      out.push(b);
    }
    return out;
  }

  private finish(runId: number, metricId: number, n: number, firstStep: number, buckets: Bucket[]): SeriesDigest {
    const newest = this.newest.all(runId, metricId, DIGEST_TAIL) as Array<[number, number | null]>;
    newest.reverse();
    const tail = { steps: newest.map((r) => r[0]), values: newest.map((r) => fromDb(r[1])) };
    return assemble(n, buckets, { firstStep, tail, few: null });
  }

  /** A small window (or an empty series) read whole: every point, or the newest `last`. */
  private fromRows(runId: number, metricId: number, last?: number): SeriesDigest {
    const rows = (
      last === undefined ? this.rows.all(runId, metricId) : this.newest.all(runId, metricId, last).reverse()
    ) as Array<[number, number | null]>;
    const steps = Float64Array.from(rows, (r) => r[0]);
    const values = Float64Array.from(rows, (r) => fromDb(r[1]));
    return digestOfNewest({ steps, values, length: rows.length });
  }
}
