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

/**
 * The points of each run's last batch, so that the engine's `after` (what it has not looked at yet: after a live
 * line, exactly that line) is answered on the watcher's thread, as the SQLite store's `Points` does from its memory.
 * Honest because the watcher of a run's scope is the only writer of its points; dropped when a transaction rolls back.
 */
export class FreshPoints {
  private readonly runs = new Map<number, Fresh>();

  /** The run's batch was written; `before` is the run's highest step before it. */
  note(runId: number, before: number | null, metrics: MetricRecords): void {
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
    this.runs.set(runId, { before, series });
  }

  /** The metric's points after `step`, ascending, when the run's last batch holds every one of them; else
   * undefined (the database has to say). */
  after(runId: number, metric: string, step: number): Array<{ step: number; value: number }> | undefined {
    const fresh = this.runs.get(runId);
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

  forget(): void {
    this.runs.clear();
  }
}
