/**
 * A slow decline: the mean of the last w records against the best w-record mean the metric held within the
 * `horizon` records before them. A reward that loses 25% over 300 steps moves two adjacent 15-record windows by
 * about 1% and stays on the course of its last 100 records, so neither the window test nor the break test sees
 * it; its fall from the best level it held grows with every record.
 *
 * The best of many window means is itself high by chance (of ten independent ones, by 1.5 standard errors on
 * average), so the gate counts in that bias: the fall must exceed `sigmas` standard errors of one window mean,
 * read as AR(1) like the trend's (stats.ts longRunFactor).
 */

import type { Sums } from './breaks.ts';

export interface Drawdown {
  /** the best window mean within the horizon, the index of its last record, and the current window's mean */
  peak: number;
  peakEnd: number;
  now: number;
  /** standard errors of one window mean the fall spans */
  z: number;
}

/**
 * The best `width`-record mean ending at j ∈ [i − horizon, i − current] (before record i's window of `current`
 * records), kept as the record index i moves forward one at a time: a monotonic deque of candidates, O(1) a record.
 */
export class PeakWindow {
  /** indices of window ends, their means decreasing */
  private readonly ends: number[] = [];
  private head = 0;
  private next: number;

  constructor(
    private readonly sums: Sums,
    private readonly w: number,
    private readonly current: number,
    private readonly horizon: number,
    /** the first record a window may start at (the records before are not the run's: another line, a warm-up) */
    from: number,
    start: number,
  ) {
    this.next = Math.max(from + w - 1, start - horizon);
  }

  /** The best window before record i's window; call with i ascending. null while there is none. */
  at(i: number): { end: number; mean: number } | null {
    const { sums, w, ends } = this;
    for (; this.next <= i - this.current; this.next++) {
      const m = sums.mean(this.next - w + 1, this.next + 1);
      while (ends.length > this.head && sums.mean(ends[ends.length - 1]! - w + 1, ends[ends.length - 1]! + 1) <= m)
        ends.pop();
      ends.push(this.next);
    }
    while (this.head < ends.length && ends[this.head]! < i - this.horizon) this.head++;
    if (this.head > 64 && this.head * 2 > ends.length) {
      ends.splice(0, this.head);
      this.head = 0;
    }
    const end = ends[this.head];
    return end === undefined ? null : { end, mean: sums.mean(end - w + 1, end + 1) };
  }
}

/** The fall of record i's window from the best before it, in standard errors of their difference: the larger of
 * the AR(1) reading (`sd` the records' noise from successive differences, `inflate` its long-run factor) and the
 * batch means' (the spread of the window means of the last `reach` records themselves: Sums.batchSe). A fall
 * within `matters` standard errors by the first reading is within them by both (the second only widens the se): its
 * z is the first's, and the batch means are not worked out (most records of a backfill). */
export function drawdown(
  sums: Sums,
  peaks: PeakWindow,
  i: number,
  w: number,
  pw: number,
  sd: number,
  inflate: number,
  reach: number,
  matters = 0,
): Drawdown | null {
  const best = peaks.at(i);
  if (best === null) return null;
  const now = sums.mean(i - w + 1, i + 1);
  const fall = best.mean - now;
  const byRecords = inflate * sd * Math.sqrt(1 / w + 1 / pw);
  const zRecords = byRecords > 0 ? fall / byRecords : 0;
  if (zRecords <= matters) return { peak: best.mean, peakEnd: best.end, now, z: zRecords };
  const se = Math.max(byRecords, sums.batchSe(i, w, reach) * Math.sqrt(1 + w / pw));
  return { peak: best.mean, peakEnd: best.end, now, z: se > 0 ? fall / se : 0 };
}
