/** The metric records of a batch as the store takes them: one row per step, or the same as columns by line shape. */

/** One logging step's values, by canonical metric name. */
export interface MetricRow {
  step: number;
  values: Map<string, number>;
}

/**
 * The metric records of a batch as columns, by line shape (the metric names of a line, in order): what a parsed
 * chunk of a log carries across threads, written by the store without a Map per line. Iterating it gives the
 * records as MetricRows, for a store that takes them one by one.
 */
export class ShapedRows implements Iterable<MetricRow> {
  constructor(
    /** the metric names of each shape */
    readonly shapes: readonly (readonly string[])[],
    /** per record: its step, and its shape (an index into `shapes`) */
    readonly steps: Float64Array,
    readonly shapeOf: Uint32Array,
    /** the values of every record, record after record, in its shape's order */
    readonly values: Float64Array,
  ) {}

  get length(): number {
    return this.steps.length;
  }

  *[Symbol.iterator](): Iterator<MetricRow> {
    let at = 0;
    for (let r = 0; r < this.steps.length; r++) {
      const values = new Map<string, number>();
      for (const name of this.shapes[this.shapeOf[r]!]!) values.set(name, this.values[at++]!);
      yield { step: this.steps[r]!, values };
    }
  }
}

/** A batch's metric records: rows, or columns by shape. */
export type MetricRecords = MetricRow[] | ShapedRows;
