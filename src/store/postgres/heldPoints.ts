/** The points a PostgreSQL watcher wrote, held as far as the engine reads them back, to spare round trips. */
import type { MetricRecords } from '../metricRows.ts';
import { ShapedRows } from '../metricRows.ts';

/** One metric's points in a batch, in the order written. */
interface Series {
  steps: number[];
  values: number[];
  /** no step written twice or out of order: only then can `after` answer from here */
  ascending: boolean;
}

/** What a run's last committed batch wrote: every point of the run past `before` (its highest step before it). */
interface Fresh {
  before: number | null;
  series: Map<string, Series>;
}

/** The newest points of one series, ascending: every point of the series from `steps[0]` on is here. */
interface Tail {
  steps: number[];
  values: number[];
  /** started at the series' first point (and never cut back): fewer than asked for is then all there is */
  whole: boolean;
}

/** A tail is cut back once it holds TAIL_MAX, to the last batch's points and the TAIL_KEEP before them: the rules
 * look back at most 200 points from any step of the batch they evaluate (a backfill's batch holds thousands). */
const TAIL_MAX = 1024;
const TAIL_KEEP = 512;

/**
 * The points a watcher wrote, as far as the engine reads them back: each run's last batch (`after`: what the rules
 * have not looked at yet, after a live line exactly that line) and each series' newest points (`upTo`: the rules'
 * look-back windows), as the SQLite store's `Points` keeps them (points.ts: `fresh` and `tails`, there per point,
 * here per batch). Honest because the watcher of a run's scope is the only writer of its points; all of it is
 * dropped when a transaction rolls back.
 */
export class HeldPoints {
  private readonly fresh = new Map<number, Fresh>();
  private readonly tails = new Map<number, Map<string, Tail>>();

  /** The run's batch was written; `before` is the run's highest step before it. */
  note(runId: number, before: number | null, metrics: MetricRecords): void {
    const series = seriesOf(metrics);
    this.fresh.set(runId, { before, series });
    let tails = this.tails.get(runId);
    if (!tails) this.tails.set(runId, (tails = new Map()));
    for (const [metric, s] of series) {
      const tail = tails.get(metric);
      if (tail) {
        // a step written again or out of order: what the tail holds may no longer be the series
        if (!s.ascending || s.steps[0]! <= tail.steps[tail.steps.length - 1]!) tails.delete(metric);
        else append(tail, s);
      } else if (s.ascending && (before === null || s.steps[0]! > before)) {
        // past every stored point: the tail holds the series from its first step on
        tails.set(metric, { steps: [...s.steps], values: [...s.values], whole: before === null });
      }
    }
  }

  /** The metric's points after `step`, ascending, when the run's last batch holds every one of them; else
   * undefined (the database has to say). */
  after(runId: number, metric: string, step: number): Array<{ step: number; value: number }> | undefined {
    const fresh = this.fresh.get(runId);
    if (!fresh || (fresh.before !== null && step < fresh.before)) return undefined;
    const s = fresh.series.get(metric);
    if (!s) return []; // past `before`, the database holds only what the batch wrote
    if (!s.ascending) return undefined;
    const out: Array<{ step: number; value: number }> = [];
    for (let i = 0; i < s.steps.length; i++) {
      if (s.steps[i]! > step) out.push({ step: s.steps[i]!, value: s.values[i]! });
    }
    return out;
  }

  /** The last `n` points up to `step` (finite ones only, with `finite`), ascending, when the series' tail reaches
   * back far enough to know; else undefined. */
  upTo(
    runId: number,
    metric: string,
    step: number,
    n: number,
    finite: boolean,
  ): Array<{ step: number; value: number }> | undefined {
    const tail = this.tails.get(runId)?.get(metric);
    if (!tail || n <= 0) return undefined;
    const out: Array<{ step: number; value: number }> = [];
    for (let i = tail.steps.length - 1; i >= 0 && out.length < n; i--) {
      if (tail.steps[i]! > step) continue;
      if (!finite || Number.isFinite(tail.values[i])) out.push({ step: tail.steps[i]!, value: tail.values[i]! });
    }
    return out.length === n || tail.whole ? out.reverse() : undefined;
  }

  forget(): void {
    this.fresh.clear();
    this.tails.clear();
  }
}

/** A batch's points by metric, in the order written. */
function seriesOf(metrics: MetricRecords): Map<string, Series> {
  const series = new Map<string, Series>();
  const add = (name: string, step: number, value: number): void => {
    const s = series.get(name);
    if (!s) series.set(name, { steps: [step], values: [value], ascending: true });
    else {
      if (step <= s.steps[s.steps.length - 1]!) s.ascending = false;
      s.steps.push(step);
      s.values.push(value);
    }
  };
  if (metrics instanceof ShapedRows) {
    let at = 0;
    for (let r = 0; r < metrics.steps.length; r++) {
      for (const name of metrics.shapes[metrics.shapeOf[r]!]!) add(name, metrics.steps[r]!, metrics.values[at++]!);
    }
  } else {
    for (const m of metrics) for (const [name, value] of m.values) add(name, m.step, value);
  }
  return series;
}

/** The batch's ascending points past the tail's last, added to it; cut back once it holds TAIL_MAX and more than
 * the batch and TAIL_KEEP. */
function append(tail: Tail, s: Series): void {
  for (let i = 0; i < s.steps.length; i++) {
    tail.steps.push(s.steps[i]!);
    tail.values.push(s.values[i]!);
  }
  const keep = s.steps.length + TAIL_KEEP;
  if (tail.steps.length >= TAIL_MAX && tail.steps.length > keep) {
    tail.steps.splice(0, tail.steps.length - keep);
    tail.values.splice(0, tail.values.length - keep);
    tail.whole = false;
  }
}
