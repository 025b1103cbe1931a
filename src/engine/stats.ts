/** Small statistics over number arrays, shared by the rules, the report and the commands. */

export function mean(values: readonly number[], from = 0, to = values.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += values[i] as number;
  return sum / (to - from);
}

/**
 * The noise of a series from its successive differences (von Neumann): sqrt(Σ(x[j] - x[j-1])² / 2(n-1))
 * over values[from, to). For independent noise it estimates the standard deviation; a step change or a
 * slow trend adds one difference or a small bias only, so a real move does not inflate its own yardstick.
 */
export function successiveSd(values: readonly number[], from: number, to: number): number {
  let ss = 0;
  for (let i = from + 1; i < to; i++) ss += ((values[i] as number) - (values[i - 1] as number)) ** 2;
  return to - from > 1 ? Math.sqrt(ss / (2 * (to - from - 1))) : 0;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 === 1 ? (s[n >> 1] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
}

/**
 * The median of a window that slides along a series, kept sorted from one position to the next: when the window
 * moved by one value, one value leaves and one enters (a binary search and a short move each), instead of a window
 * sorted afresh at every record. `at` gives the median of values[from, to) of the series, whose positions are
 * counted from its start (`offset`: how many values of it `values` no longer holds; `gone`: the last of them).
 */
export class SlidingMedian {
  private readonly sorted: number[] = [];
  private from = NaN;
  private to = NaN;

  at(values: readonly number[], offset: number, from: number, to: number, gone: number | undefined): number {
    const s = this.sorted;
    if (this.from === from - 1 && this.to === to - 1 && to > from) {
      const leaving = from - 1 >= offset ? (values[from - 1 - offset] as number) : (gone as number);
      s.splice(lowerBound(s, leaving), 1);
      const entering = values[to - 1 - offset] as number;
      s.splice(lowerBound(s, entering), 0, entering);
    } else if (this.from !== from || this.to !== to) {
      s.length = 0;
      for (let i = from; i < to; i++) s.push(values[i - offset] as number);
      s.sort((a, b) => a - b);
    }
    this.from = from;
    this.to = to;
    const n = s.length;
    if (n === 0) return NaN;
    return n % 2 === 1 ? (s[n >> 1] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
  }
}

/** The index of the first of the ascending `sorted` not below `v`. */
function lowerBound(sorted: readonly number[], v: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] as number) < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The median of values[from, to), as `median` of that slice gives it, sorted in `scratch` rather than in two new
 * arrays: a rule takes the median of a short window at every record of a backfill. */
export function medianOf(values: readonly number[], from: number, to: number, scratch: number[]): number {
  const n = to - from;
  if (n <= 0) return NaN;
  scratch.length = n;
  // insertion sort: stable, as Array.prototype.sort is, so equal values keep their order and the median is the same
  for (let i = 0; i < n; i++) {
    const v = values[from + i] as number;
    let j = i - 1;
    for (; j >= 0 && (scratch[j] as number) > v; j--) scratch[j + 1] = scratch[j] as number;
    scratch[j + 1] = v;
  }
  return n % 2 === 1 ? (scratch[n >> 1] as number) : ((scratch[n / 2 - 1] as number) + (scratch[n / 2] as number)) / 2;
}

/** Min and max of the finite values (Infinity and -Infinity when there is none), in one pass: `Math.min(...xs)`
 * overflows the stack past ~120,000 values, which a report over a long run reaches. */
export function range(values: ArrayLike<number>): { min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { min, max };
}

/** The largest lag-1 autocorrelation credited: beyond it the window means carry too little to say. */
export const MAX_PHI = 0.95;

/**
 * The standard error of the difference of two adjacent means of w records of an AR(1) series with lag-1
 * correlation φ, in units of σ_d, the noise from successive differences (σ_d² = σ²(1 − φ), σ² the series'
 * variance). With S the sum of w records:
 *   Var(S) = σ² [w(1 + φ)/(1 − φ) − 2φ(1 − φʷ)/(1 − φ)²]      (the long-run variance of the window mean, × w²)
 *   Cov(S_A, S_B) = σ² φ(1 − φʷ)²/(1 − φ)²                     (adjacent windows)
 *   se = √(2 Var(S) − 2 Cov) / w.  For φ = 0 it is σ_d · √(2/w): independent records.
 */
export function windowDiffSe(phi: number, w: number): number {
  if (phi <= 0) return Math.sqrt(2 / w);
  const q = 1 - phi;
  const tail = 1 - phi ** w;
  const varSum = (w * (1 + phi)) / q - (2 * phi * tail) / (q * q);
  const cov = (phi * tail * tail) / (q * q);
  // σ² = σ_d² / (1 − φ)
  return Math.sqrt(Math.max(0, (2 * varSum - 2 * cov) / q)) / w;
}

/** How much wider the noise of a mean of records is under AR(1) than σ_d says for independent ones: the
 * long-run σ, σ·√((1 + φ)/(1 − φ)), over σ_d = σ·√(1 − φ). */
export const longRunFactor = (phi: number): number => Math.sqrt(1 + phi) / (1 - phi);
