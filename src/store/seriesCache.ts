/** Whole series kept in memory between requests for charts and history, topped up with the steps written since. */
import type { Database, Statement } from 'better-sqlite3';

/** One metric of one run as two columns, steps ascending; NaN where the run logged nan. */
export interface Columns {
  steps: Float64Array;
  values: Float64Array;
  length: number;
}

interface Entry extends Columns {
  lastStep: number;
}

/** Series kept in memory: the most recently used few. */
const ENTRIES = 8;

/**
 * Whole series for charts and history, kept in memory between requests and topped up with the steps
 * written since: reading a million rows from SQLite takes most of a second, topping up takes nothing.
 * A batch that rewrites steps already cached (a re-read trainer_state.json) drops the entry.
 */
export class SeriesCache {
  private readonly entries = new Map<string, Entry>();
  private readonly read: Statement;

  constructor(db: Database) {
    this.read = db
      .prepare('SELECT step, value FROM points WHERE run_id = ? AND metric_id = ? AND step > ? ORDER BY step')
      .raw(true);
  }

  columns(runId: number, metricId: number): Columns {
    const key = `${runId}:${metricId}`;
    let e = this.entries.get(key);
    this.entries.delete(key); // re-inserted below: the map's order is the recency order
    e = this.topUp(
      runId,
      metricId,
      e ?? { steps: new Float64Array(1024), values: new Float64Array(1024), length: 0, lastStep: -Infinity },
    );
    this.entries.set(key, e);
    if (this.entries.size > ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    return e;
  }

  has(runId: number, metricId: number): boolean {
    return this.entries.has(`${runId}:${metricId}`);
  }

  /** A batch wrote steps from `minStep` on: cached series of the run that already hold such steps are stale. */
  invalidate(runId: number, minStep: number): void {
    for (const [key, e] of this.entries) {
      if (key.startsWith(`${runId}:`) && minStep <= e.lastStep) this.entries.delete(key);
    }
  }

  /** A transaction rolled back: what was read inside it may be gone. */
  clear(): void {
    this.entries.clear();
  }

  private topUp(runId: number, metricId: number, e: Entry): Entry {
    let { steps, values, length } = e;
    for (const [step, value] of this.read.iterate(
      runId,
      metricId,
      e.lastStep === -Infinity ? -1 : e.lastStep,
    ) as Iterable<[number, number | null]>) {
      if (length === steps.length) {
        const grown = { steps: new Float64Array(steps.length * 2), values: new Float64Array(steps.length * 2) };
        grown.steps.set(steps);
        grown.values.set(values);
        ({ steps, values } = grown);
      }
      steps[length] = step;
      values[length++] = value === null ? NaN : value;
    }
    return { steps, values, length, lastStep: length > 0 ? (steps[length - 1] as number) : -Infinity };
  }
}
