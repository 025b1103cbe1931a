/** Metric points on SQLite: written per batch, read back as series, with the newest points held for the rules. */
import type { Database, Statement } from 'better-sqlite3';
import { SeriesCache, type Columns } from './seriesCache.ts';
import { digestOfNewest, SqlDigest, type SeriesDigest } from './seriesDigest.ts';
import { prepared } from './sqlite/prepared.ts';
import type { MetricRow, ShapedRows } from './metricRows.ts';

export interface SeriesPoint {
  step: number;
  epoch: number | null;
  /** NaN where the run logged nan */
  value: number;
}

export interface LatestValue {
  metric: string;
  step: number;
  value: number;
}

/** SQLite has no NaN: it is stored as NULL and read back as NaN. */
const toDb = (v: number): number | null => (Number.isNaN(v) ? null : v);
const fromDb = (v: number | null): number => (v === null ? NaN : v);
/** A value as the database gives it back: a REAL column gives -0 back as 0. */
const asRead = (v: number): number => (v === 0 ? 0 : v);

/** The points one batch wrote for one metric, in the order written. */
interface FreshSeries {
  steps: number[];
  values: number[];
  /** steps strictly ascending (no step written twice): only then can `after` answer from here */
  ascending: boolean;
}

/** What the last committed batch of a run wrote: every point of the run past `before` is in `series`. */
interface Fresh {
  before: number | null;
  series: Map<number, FreshSeries>;
}

/** The newest points of one series, ascending: every point of the series from `steps[0]` on is here. */
interface Tail {
  steps: number[];
  values: number[];
  /** started at the series' first point (and never cut back): fewer than asked for is then all there is */
  whole: boolean;
}
interface Memory {
  fresh: Fresh;
  tails: Map<number, Tail>;
}

/** A tail is cut back to its newest TAIL_KEEP points once it holds TAIL_MAX (rules look back 200 at most). */
const TAIL_MAX = 1024;
const TAIL_KEEP = 512;
const STEP_ROWS = 64;

export class Points {
  private readonly ids = new Map<string, number>();
  /** the metric names of the last step written and their ids: a log writes the same names in the same order
   * line after line, so the ids are found by comparing names, not by looking each one up */
  private shapeNames: string[] = [];
  private shapeIds: number[] = [];
  /** per run and metric id, the newest points written by this process: `upTo` answers from here (live, the
   * rules' look-back windows were a query per rule per line) */
  private readonly tails = new Map<number, Map<number, Tail>>();
  /** per run, the points of its last committed batch: the engine evaluates them from memory, not re-reading them */
  private readonly fresh = new Map<number, Fresh>();
  /** per run, the metric ids its run_metrics rows list, held once this process has written points of the run (their
   * one writer, by the writer lock): a live line no longer asks SQLite about each of its ~10 metrics */
  private readonly logged = new Map<number, Set<number>>();
  /** per run whose `logged` is held, `metricsOf` as read since its last new metric (the engine asks on every batch) */
  private readonly names = new Map<number, readonly string[]>();
  /** the run whose batch is being written (between beginBatch and written) */
  private batchRun: number | null = null;
  private readonly insertPoint: Statement;
  /** STEP_ROWS steps per statement: one call into SQLite per 64 steps instead of one per step */
  private readonly insertSteps: Statement;
  private readonly insertStep: Statement;
  private readonly insertRunMetric: Statement;
  private readonly cache: SeriesCache;
  private sqlDigest: SqlDigest | null = null;

  constructor(
    private readonly db: Database,
    private readonly keepSeries = true,
  ) {
    this.insertPoint = db.prepare(
      `INSERT INTO points (run_id, metric_id, step, value) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id, metric_id, step) DO UPDATE SET value = excluded.value`,
    );
    // the run and the time named once per statement, not bound again for each of its rows (a third of its cost)
    const rows = Array.from({ length: STEP_ROWS }, () => '(:run, ?, :at)').join(', ');
    this.insertSteps = db.prepare(`INSERT OR IGNORE INTO steps (run_id, step, at) VALUES ${rows}`);
    this.insertStep = db.prepare('INSERT OR IGNORE INTO steps (run_id, step, at) VALUES (?, ?, ?)');
    this.insertRunMetric = db.prepare('INSERT OR IGNORE INTO run_metrics (run_id, metric_id) VALUES (?, ?)');
    this.cache = new SeriesCache(db);
  }

  /** The whole series of one metric as columns, from memory when it was read before. */
  columns(runId: number, metric: string): Columns {
    return this.cache.columns(runId, this.metricId(metric));
  }

  /** What `reward history` shows of the series (or of its newest `last` points): from memory when the series is held
   * there, or when this store keeps series (read whole once, then topped up); else summed up by SQLite. */
  digest(runId: number, metric: string, last?: number): SeriesDigest {
    const id = this.metricId(metric);
    if (!this.keepSeries && !this.cache.has(runId, id))
      return (this.sqlDigest ??= new SqlDigest(this.db)).digest(runId, id, last);
    return digestOfNewest(this.cache.columns(runId, id), last);
  }

  /** Called inside the batch transaction before its points are written: `lastStep` is the run's highest step
   * before the batch, so that afterwards every point past it is one this batch wrote. */
  beginBatch(runId: number, lastStep: number | null): void {
    this.batchRun = runId;
    this.fresh.set(runId, { before: lastStep, series: new Map() });
  }

  /** Called after a batch of the run that wrote steps from `minStep` on. */
  written(runId: number, minStep: number): void {
    this.batchRun = null;
    this.cache.invalidate(runId, minStep);
  }

  /** Drops what is held in memory of the run (or of every run) after a transaction that wrote it rolled back, or once
   * it is removed: its last batch, tails and listed metrics (`after`, `upTo` and `metricsOf` read the database), and
   * the metric ids and cached series, which may hold rows the rollback took back (a metric name first seen in it, a
   * series topped up inside it). */
  forget(runId?: number): void {
    this.batchRun = null;
    if (runId === undefined) {
      this.fresh.clear();
      this.tails.clear();
      this.logged.clear();
      this.names.clear();
    } else {
      this.fresh.delete(runId);
      this.tails.delete(runId);
      this.logged.delete(runId);
      this.names.delete(runId);
    }
    this.ids.clear();
    this.shapeNames = [];
    this.shapeIds = [];
    this.cache.clear();
  }

  /** The epoch logged at each of `steps` (null where none was). */
  epochsAt(runId: number, steps: readonly number[]): Array<number | null> {
    const get = prepared(this.db, 'SELECT value FROM points WHERE run_id = ? AND metric_id = ? AND step = ?').pluck();
    const id = this.metricId('epoch');
    return steps.map((s) => (get.get(runId, id, s) as number | null | undefined) ?? null);
  }

  metricId(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      // a read-only database (queried where it cannot be written): an unknown name has no points, id -1
      if (!this.db.readonly) prepared(this.db, 'INSERT OR IGNORE INTO metrics (name) VALUES (?)').run(name);
      id = (prepared(this.db, 'SELECT id FROM metrics WHERE name = ?').pluck().get(name) as number | undefined) ?? -1;
      if (id >= 0) this.ids.set(name, id);
    }
    return id;
  }

  /** Notes that the run logged `steps` (call inside the batch transaction). Returns how many are new. */
  writeSteps(runId: number, steps: ArrayLike<number>, at: number): number {
    let added = 0;
    let i = 0;
    if (steps.length >= STEP_ROWS) {
      const args = new Array<number>(STEP_ROWS);
      const named = { run: runId, at };
      for (; i + STEP_ROWS <= steps.length; i += STEP_ROWS) {
        for (let k = 0; k < STEP_ROWS; k++) args[k] = steps[i + k]!;
        added += this.insertSteps.run(args, named).changes;
      }
    }
    for (; i < steps.length; i++) added += this.insertStep.run(runId, steps[i], at).changes;
    return added;
  }

  /** Writes a batch's records given as rows (call inside the batch transaction); `writeSteps` notes their steps. */
  writeRows(runId: number, rows: readonly MetricRow[], seen: Set<number>): void {
    const memory = this.memoryOf(runId);
    const columns = new Map<number, Column>();
    const firsts = new Set<number>();
    const names = this.shapeNames;
    for (const { step, values } of rows) {
      let i = 0;
      for (const [name, value] of values) {
        let id: number;
        if (names[i] === name) id = this.shapeIds[i]!;
        else {
          id = this.metricId(name);
          names[i] = name;
          this.shapeIds[i] = id;
        }
        i++;
        this.insertPoint.run(runId, id, step, toDb(value));
        if (!seen.has(id)) this.noteMetric(runId, id, seen, firsts);
        if (!memory) continue;
        let column = columns.get(id);
        if (!column) columns.set(id, (column = { steps: [], values: [] }));
        column.steps.push(step);
        column.values.push(asRead(value));
      }
      names.length = i;
      this.shapeIds.length = i;
    }
    if (memory) for (const [id, column] of columns) rememberColumn(memory, id, column, firsts.has(id));
  }

  /** Writes a batch's records given as columns by line shape: the ids of a shape's names are found once, the loop
   * over the points only upserts them, and what is held in memory is noted per metric after it. */
  writeShaped(runId: number, rows: ShapedRows, seen: Set<number>): void {
    const memory = this.memoryOf(runId);
    const ids = rows.shapes.map((names) => names.map((name) => this.metricId(name)));
    const firsts = new Set<number>();
    for (const shape of ids) for (const id of shape) if (!seen.has(id)) this.noteMetric(runId, id, seen, firsts);
    const { steps, shapeOf, values } = rows;
    const insert = this.insertPoint;
    let at = 0;
    for (let r = 0; r < steps.length; r++) {
      const shape = ids[shapeOf[r]!]!;
      const step = steps[r]!;
      for (let k = 0; k < shape.length; k++) insert.run(runId, shape[k]!, step, toDb(values[at++]!));
    }
    if (memory) {
      for (const [id, column] of columnsOf(rows, ids)) rememberColumn(memory, id, column, firsts.has(id));
    }
  }

  /** The run's metric `id` is in this batch: run_metrics lists it; `firsts` gets it when no point of it was there. */
  private noteMetric(runId: number, id: number, seen: Set<number>, firsts: Set<number>): void {
    seen.add(id);
    let logged = this.logged.get(runId);
    if (!logged) {
      const ids = prepared(this.db, 'SELECT metric_id FROM run_metrics WHERE run_id = ?')
        .pluck()
        .all(runId) as number[];
      this.logged.set(runId, (logged = new Set(ids)));
    }
    if (logged.has(id)) return;
    logged.add(id);
    this.names.delete(runId);
    if (this.insertRunMetric.run(runId, id).changes > 0) firsts.add(id);
  }

  /** The memory of the run's batch being written (beginBatch); undefined when points are written outside a batch:
   * then the run's memory is no longer whole and is dropped. */
  private memoryOf(runId: number): Memory | undefined {
    const fresh = this.batchRun === runId ? this.fresh.get(runId) : undefined;
    if (!fresh) {
      this.fresh.delete(runId);
      this.tails.delete(runId);
      return undefined;
    }
    let tails = this.tails.get(runId);
    if (!tails) this.tails.set(runId, (tails = new Map()));
    return { fresh, tails };
  }

  /** The steps the run has logged, ascending. */
  steps(runId: number): number[] {
    return this.db.prepare('SELECT step FROM steps WHERE run_id = ? ORDER BY step').pluck().all(runId) as number[];
  }

  /** How long the run took from its first logged step to its last, by when rlwatch read them (null before two). */
  stepSpan(runId: number): number | null {
    return prepared(this.db, 'SELECT max(at) - min(at) FROM steps WHERE run_id = ?').pluck().get(runId) as
      | number
      | null;
  }

  /** Every metric name any run has logged. */
  allNames(): string[] {
    return prepared(this.db, 'SELECT name FROM metrics ORDER BY name').pluck().all() as string[];
  }

  metricsOf(runId: number): string[] {
    const held = this.names.get(runId);
    if (held) return [...held];
    const names = prepared(
      this.db,
      `SELECT m.name FROM run_metrics r JOIN metrics m ON m.id = r.metric_id WHERE r.run_id = ? ORDER BY m.name`,
    )
      .pluck()
      .all(runId) as string[];
    if (this.logged.has(runId)) this.names.set(runId, [...names]);
    return names;
  }

  /** The last value of every metric the run has logged. */
  latest(runId: number): LatestValue[] {
    const rows = prepared(
      this.db,
      `SELECT m.name AS metric, p.step AS step, p.value AS value
         FROM run_metrics r
         JOIN metrics m ON m.id = r.metric_id
         JOIN points p ON p.run_id = r.run_id AND p.metric_id = r.metric_id
           AND p.step = (SELECT max(step) FROM points q WHERE q.run_id = r.run_id AND q.metric_id = r.metric_id)
         WHERE r.run_id = ?
         ORDER BY m.name`,
    ).all(runId) as Array<{ metric: string; step: number; value: number | null }>;
    return rows.map((r) => ({ ...r, value: fromDb(r.value) }));
  }

  /** One metric of one run, steps ascending, with the epoch logged at each step; `last` keeps the newest N. */
  series(runId: number, metric: string, last?: number): SeriesPoint[] {
    const metricId = this.metricId(metric);
    const epochId = this.metricId('epoch');
    const rows = prepared(
      this.db,
      `SELECT p.step AS step, e.value AS epoch, p.value AS value
         FROM points p
         LEFT JOIN points e ON e.run_id = p.run_id AND e.metric_id = :epochId AND e.step = p.step
         WHERE p.run_id = :runId AND p.metric_id = :metricId
         ORDER BY p.step DESC
         LIMIT :limit`,
    ).all({ runId, metricId, epochId, limit: last ?? -1 }) as Array<{
      step: number;
      epoch: number | null;
      value: number | null;
    }>;
    return rows.reverse().map((r) => ({ step: r.step, epoch: r.epoch, value: fromDb(r.value) }));
  }

  /** Values of one metric after `step`, ascending (what the engine has not looked at yet): from the memory of
   * the run's last batch when every such point is there, else from the database. */
  after(runId: number, metric: string, step: number): Array<{ step: number; value: number }> {
    const fresh = this.fresh.get(runId);
    if (fresh && (fresh.before === null || step >= fresh.before)) {
      const id = this.ids.get(metric);
      const series = id === undefined ? undefined : fresh.series.get(id);
      if (!series) return []; // nothing past `step` in the database either
      if (series.ascending) return pointsAfter(series, step);
    }
    const rows = prepared(
      this.db,
      'SELECT step, value FROM points WHERE run_id = ? AND metric_id = ? AND step > ? ORDER BY step',
    ).all(runId, this.metricId(metric), step) as Array<{ step: number; value: number | null }>;
    return rows.map((r) => ({ step: r.step, value: fromDb(r.value) }));
  }

  /** The last `n` values of one metric up to and including `step`, ascending; with `finite`, the last `n`
   * finite ones (windows of means must not come up short because of a nan). */
  upTo(runId: number, metric: string, step: number, n: number, finite = false): Array<{ step: number; value: number }> {
    const id = this.ids.get(metric);
    const tail = id === undefined ? undefined : this.tails.get(runId)?.get(id);
    const kept = tail && n > 0 ? lastOf(tail, step, n, finite) : undefined;
    if (kept) return kept;
    // NaN is stored as NULL; ±Infinity as REAL infinities, which 9e999 spells in SQL
    const where = finite ? 'AND value IS NOT NULL AND abs(value) < 9e999' : '';
    const rows = prepared(
      this.db,
      `SELECT step, value FROM points WHERE run_id = ? AND metric_id = ? AND step <= ? ${where} ORDER BY step DESC LIMIT ?`,
    ).all(runId, this.metricId(metric), step, n) as Array<{ step: number; value: number | null }>;
    return rows.reverse().map((r) => ({ step: r.step, value: fromDb(r.value) }));
  }
}

/** The index of the first of the ascending `steps` past `step` (steps.length when none is). */
function firstPast(steps: readonly number[], step: number): number {
  let lo = 0;
  let hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid]! <= step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The last `n` points (finite ones only, with `finite`) at or before `step`, ascending; undefined when the tail
 * does not reach back far enough to know. */
function lastOf(
  tail: Tail,
  step: number,
  n: number,
  finite: boolean,
): Array<{ step: number; value: number }> | undefined {
  const { steps, values } = tail;
  const lo = firstPast(steps, step);
  const out: Array<{ step: number; value: number }> = [];
  for (let i = lo - 1; i >= 0 && out.length < n; i--) {
    if (!finite || Number.isFinite(values[i])) out.push({ step: steps[i]!, value: values[i]! });
  }
  return out.length === n || tail.whole ? out.reverse() : undefined;
}

/** The points one write of a batch gave one metric, in the order written, valued as read back (`asRead`). */
interface Column {
  steps: number[];
  values: number[];
}

/** The points of shaped rows as one column per metric id. */
function columnsOf(rows: ShapedRows, ids: readonly (readonly number[])[]): Map<number, Column> {
  const columns = new Map<number, Column>();
  // per shape, per name: its metric's column
  const byShape = ids.map((shape) =>
    shape.map((id) => {
      let column = columns.get(id);
      if (!column) columns.set(id, (column = { steps: [], values: [] }));
      return column;
    }),
  );
  const { steps, shapeOf, values } = rows;
  let at = 0;
  for (let r = 0; r < steps.length; r++) {
    const shape = byShape[shapeOf[r]!]!;
    const step = steps[r]!;
    for (let k = 0; k < shape.length; k++) {
      shape[k]!.steps.push(step);
      shape[k]!.values.push(asRead(values[at++]!));
    }
  }
  return columns;
}

/**
 * Notes one metric's points of the batch, in the order written, in the run's memory: appended to the batch's
 * `fresh` series, and to the series' tail. A tail is started only by a point past every stored point of the series
 * (the run's last step before the batch, and this batch's points of it), and dropped when a step is written again
 * or out of order: so it always holds every point from its first on. `first`: the run had no point of the metric
 * before this batch (a tail started at its first point holds the whole series).
 */
function rememberColumn(memory: Memory, id: number, column: Column, first: boolean): void {
  const { fresh, tails } = memory;
  const { steps, values } = column;
  let series = fresh.series.get(id);
  const start = series ? series.steps.length : 0;
  let ascending = series ? series.ascending : true;
  if (series) {
    for (let i = 0; i < steps.length; i++) {
      series.steps.push(steps[i]!);
      series.values.push(values[i]!);
    }
  } else fresh.series.set(id, (series = { steps, values, ascending }));
  // the tail, point by point; `ascending` is that of the batch's points of the metric before point i
  const all = series.steps;
  const before = fresh.before;
  let tail = tails.get(id);
  for (let i = start; i < all.length; i++) {
    const step = all[i]!;
    if (tail) {
      if (step > tail.steps[tail.steps.length - 1]!) {
        tail.steps.push(step);
        tail.values.push(series.values[i]!);
        if (tail.steps.length >= TAIL_MAX) {
          tail.steps.splice(0, tail.steps.length - TAIL_KEEP);
          tail.values.splice(0, tail.values.length - TAIL_KEEP);
          tail.whole = false;
        }
      } else {
        tails.delete(id);
        tail = undefined;
      }
    } else {
      const pastStored = before === null || step > before;
      const pastBatch = i === 0 || (ascending && step > all[i - 1]!);
      if (pastStored && pastBatch) {
        tail = { steps: [step], values: [series.values[i]!], whole: first && i === start };
        tails.set(id, tail);
      }
    }
    if (i > 0 && step <= all[i - 1]!) ascending = false;
  }
  series.ascending = ascending;
}

/** The points of an ascending series past `step`. */
function pointsAfter(series: FreshSeries, step: number): Array<{ step: number; value: number }> {
  const { steps, values } = series;
  const lo = firstPast(steps, step);
  const out = new Array<{ step: number; value: number }>(steps.length - lo);
  for (let i = lo; i < steps.length; i++) out[i - lo] = { step: steps[i]!, value: values[i]! };
  return out;
}
