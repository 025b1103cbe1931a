/**
 * A break in a series' own course: the mean of the last m records against the straight line fitted to the
 * records before them, extrapolated. A reward that was climbing and fell by 20% sits far below the line it
 * was on, while the difference of two window means hardly moves (the climb before the fall cancels it).
 */

import { MAX_PHI } from './stats.ts';

/** One successive difference carrying more than this share of their sum is a jump, not autocorrelated noise
 * (of 400 gaussian differences the largest carries ~3%). */
const JUMP_SHARE = 0.2;

/** A φ estimate credited only beyond `floor` (what independent records give), at most MAX_PHI. */
const credited = (raw: number, floor: number): number => (raw > floor ? Math.min(MAX_PHI, raw) : 0);

/** The squared lag-2 difference at j, within values[from + 2, to); 0 outside. */
const lag2 = (values: readonly number[], j: number, from: number, to: number): number =>
  j >= from + 2 && j < to ? ((values[j] as number) - (values[j - 2] as number)) ** 2 : 0;

/** How many of the largest jumps a φ estimate takes out before it calls the series a step level. */
const TRIMMED = 3;

interface Jump {
  d: number;
  at: number;
}

/** Takes record j's squared lag-1 difference into `tops` (the TRIMMED largest, largest first) if it is larger than
 * the smallest there: of equal ones the earlier stays. */
function addJump(tops: Jump[], values: readonly number[], j: number): void {
  const d = ((values[j] as number) - (values[j - 1] as number)) ** 2;
  if (tops.length === TRIMMED && d <= tops[TRIMMED - 1]!.d) return;
  if (tops.length === TRIMMED) tops.pop();
  tops.push({ d, at: j });
  tops.sort((a, b) => b.d - a.d);
}

/** The lengths m of the records after the line that are tried: a large break shows in 5, a small one in 20. */
export const BREAK_WINDOWS = [5, 10, 15, 20] as const;
const LONGEST = BREAK_WINDOWS[BREAK_WINDOWS.length - 1] as number;

/** Prefix sums over one array of values: a mean, a line fit or a noise estimate over any span in O(1). */
export class Sums {
  /** Σ v[j], Σ j·v[j], Σ (v[j] − v[j−1])² and Σ (v[j] − v[j−2])² over j < k, at index k */
  private readonly s0: Float64Array;
  private readonly s1: Float64Array;
  private readonly d2: Float64Array;
  private readonly e2: Float64Array;
  /** batchSe's second differences, one array reused */
  private readonly scratch: number[] = [];
  /** the last window's largest jumps (`topJumps`), kept as the window slides */
  private jumps: { values: readonly number[]; from: number; to: number; tops: Jump[] } | null = null;

  constructor(values: readonly number[]) {
    const n = values.length;
    this.s0 = new Float64Array(n + 1);
    this.s1 = new Float64Array(n + 1);
    this.d2 = new Float64Array(n + 1);
    this.e2 = new Float64Array(n + 1);
    for (let j = 0; j < n; j++) {
      const v = values[j] as number;
      this.s0[j + 1] = (this.s0[j] as number) + v;
      this.s1[j + 1] = (this.s1[j] as number) + j * v;
      this.d2[j + 1] = (this.d2[j] as number) + (j > 0 ? (v - (values[j - 1] as number)) ** 2 : 0);
      this.e2[j + 1] = (this.e2[j] as number) + (j > 1 ? (v - (values[j - 2] as number)) ** 2 : 0);
    }
  }

  /**
   * The lag-1 autocorrelation φ of values[from, to) read as AR(1), from the mean squared lag-1 and lag-2
   * differences: E(x_t − x_{t−1})² = 2σ²(1 − φ) and E(x_t − x_{t−2})² = 2σ²(1 − φ²), so φ = v₂ / v₁ − 1 (a level
   * or a step barely moves either); 0 unless it is beyond what independent records show. At most MAX_PHI.
   */
  phi(values: readonly number[], from: number, to: number): number {
    if (to - from < 8) return 0;
    const ss1 = (this.d2[to] as number) - (this.d2[from + 2] as number);
    const ss2 = (this.e2[to] as number) - (this.e2[from + 2] as number);
    if (!(ss1 > 0)) return 0;
    // credited only beyond two of the estimate's standard errors on independent records, 1.4/√n (simulated: 0.19
    // at n = 60, 0.06 at 400), so that independent noise keeps the gate it was tuned with
    const floor = 2.8 / Math.sqrt(to - from);
    const phi = credited(ss2 / ss1 - 1, floor);
    if (phi === 0) return 0;
    // a jump is not noise: a level that steps (a quiet series, a rounded one) reads as φ = 1 from it. The largest
    // (up to TRIMMED of them) are taken out, each with its lag-1 difference and the two lag-2 ones across it, while
    // one carries a fifth of what is left of v₁; φ is read from the rest (a heavy-tailed record of meandering noise
    // is such a jump: read as 0, its φ of 0.85 let a healthy 50,000-step run raise five warnings). A series that is
    // still all jumps after that is a step level: 0
    const tops = this.topJumps(values, from, to);
    let rest1 = ss1;
    let rest2 = ss2;
    for (const { d, at } of tops) {
      // (what is left after the jumps may be rounding error: no noise, a step level)
      if (d <= JUMP_SHARE * rest1)
        return rest1 === ss1 ? phi : rest1 > 1e-9 * ss1 ? credited(rest2 / rest1 - 1, floor) : 0;
      rest1 -= d;
      rest2 -= lag2(values, at, from, to) + lag2(values, at + 1, from, to);
    }
    return 0;
  }

  /** The TRIMMED largest squared lag-1 differences of values[from + 2, to), largest first (of equal ones, the
   * earlier), with their indices. A window that slid forward from the last one asked keeps its jumps and takes the
   * new records' (a trend asks at every record, over the last 400): scanned anew only when one of them fell out. */
  private topJumps(values: readonly number[], from: number, to: number): Jump[] {
    const last = this.jumps;
    if (
      last !== null &&
      last.values === values &&
      from >= last.from &&
      to >= last.to &&
      last.tops.every((t) => t.at >= from + 2)
    ) {
      for (let j = Math.max(last.to, from + 2); j < to; j++) addJump(last.tops, values, j);
      last.from = from;
      last.to = to;
      return last.tops;
    }
    const tops: Jump[] = [];
    for (let j = from + 2; j < to; j++) addJump(tops, values, j);
    this.jumps = { values, from, to, tops };
    return tops;
  }

  /** mean of values[from, to) */
  mean(from: number, to: number): number {
    return ((this.s0[to] as number) - (this.s0[from] as number)) / (to - from);
  }

  /** The standard error of a mean of w records, from the means B of the consecutive w-record blocks ending at
   * index i within `reach` records, by their second differences (a steady trend cancels out), robustly: the median
   * of |B_k − 2B_k+1 + B_k+2| over 0.6745 · √6 (a step of the level touches two of them, not the median); 0 with
   * fewer than 5 blocks. Batch means see a meander as it is where an AR(1) φ read from 400 records falls short
   * (0.9 read as 0.7 halves its long-run factor). */
  batchSe(i: number, w: number, reach: number): number {
    const blocks = Math.min(Math.floor(reach / w), Math.floor((i + 1) / w));
    if (blocks < 5) return 0;
    // plain loops, no closure: this runs at every record of a trend's decline and plateau tests
    const s0 = this.s0;
    const end = i + 1;
    const seconds = this.scratch;
    seconds.length = 0;
    let a = ((s0[end] as number) - (s0[end - w] as number)) / w;
    let b = ((s0[end - w] as number) - (s0[end - 2 * w] as number)) / w;
    for (let k = 2; k < blocks; k++) {
      const c = ((s0[end - k * w] as number) - (s0[end - (k + 1) * w] as number)) / w;
      const d = Math.abs(a - 2 * b + c);
      // insertion into the sorted list (at most a dozen)
      let j = seconds.length;
      seconds.push(d);
      while (j > 0 && (seconds[j - 1] as number) > d) {
        seconds[j] = seconds[j - 1] as number;
        j--;
      }
      seconds[j] = d;
      a = b;
      b = c;
    }
    const n = seconds.length;
    const median =
      n % 2 === 1 ? (seconds[n >> 1] as number) : ((seconds[n / 2 - 1] as number) + (seconds[n / 2] as number)) / 2;
    return median / (0.6745 * Math.sqrt(6));
  }

  /** σ from successive differences over values[from, to), as `successiveSd` (stats.ts) */
  sd(from: number, to: number): number {
    const n = to - from;
    return n > 1 ? Math.sqrt(((this.d2[to] as number) - (this.d2[from + 1] as number)) / (2 * (n - 1))) : 0;
  }

  /** least-squares line over values[from, to): its level at the centre index and its slope per record */
  line(from: number, to: number): { level: number; slope: number; centre: number; sxx: number } {
    const n = to - from;
    const sum = (this.s0[to] as number) - (this.s0[from] as number);
    const centre = (from + to - 1) / 2;
    const sxy = (this.s1[to] as number) - (this.s1[from] as number) - centre * sum;
    const sxx = (n * (n * n - 1)) / 12;
    return { level: sum / n, slope: sxx > 0 ? sxy / sxx : 0, centre, sxx };
  }
}

export interface Break {
  /** (observed − expected) / its standard error */
  z: number;
  /** records after the line */
  m: number;
  /** the line's value at the centre of those records, and their mean */
  expected: number;
  observed: number;
  /** the mean of the m records before them: where the metric was */
  before: number;
}

/**
 * At index i: for each m, the line fitted to the `fit` records before the last m (none before `from`), and
 * z = (mean of the last m − the line at their centre) / σ·√(1/fit + d²/Sxx + 1/m), where d is the distance
 * from the fit's centre and σ the noise from successive differences over the fit and the m records, times
 * `inflate` (stats.ts longRunFactor: the long-run σ of autocorrelated records over σ_d). Returns
 * the break with the largest |z| among those `accept` takes; null if none (or fewer than fit + 5 records
 * since `from`).
 */
export function lineBreak(
  sums: Sums,
  i: number,
  fit: number,
  from: number,
  accept: (b: Break) => boolean,
  inflate = 1,
): Break | null {
  let best: Break | null = null;
  for (const m of BREAK_WINDOWS) {
    const start = i - m - fit + 1;
    if (start < from) break;
    const line = sums.line(start, start + fit);
    const centre = i - (m - 1) / 2;
    const d = centre - line.centre;
    const expected = line.level + line.slope * d;
    const observed = sums.mean(i - m + 1, i + 1);
    const se = inflate * sums.sd(start, i + 1) * Math.sqrt(1 / fit + (d * d) / line.sxx + 1 / m);
    if (!(se > 0)) continue;
    const z = (observed - expected) / se;
    if (best !== null && Math.abs(z) <= Math.abs(best.z)) continue;
    const b = { z, m, expected, observed, before: sums.mean(i - 2 * m + 1, i - m + 1) };
    if (accept(b)) best = b;
  }
  return best;
}

/** How many records before the newest one a break test reads. */
export const breakSpan = (fit: number): number => fit + LONGEST;
