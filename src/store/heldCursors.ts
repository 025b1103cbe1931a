/** A rule cursor as held: its state as JSON. One object per cursor, changed in place by each save (the engine saves
 * most of a run's cursors after every batch: new objects each time lived just long enough to be copied by the GC). */
interface CursorRow {
  step: number;
  state: string;
  /** the state itself when its values are all plain (`isFlat`): a copy of it is what parsing `state` gives, and
   * copying is ~6x cheaper (the engine reads ~37 cursors per evaluation) */
  flat: Record<string, unknown> | null;
  /** `"metric":{"step":` of its entry in the run's row (`"metric":{"step":..,"state":..}`), made once */
  readonly head: string;
}

/** A run's cursors by rule, then metric: its `run_cursors` row, and what `save` changed since. */
type RunCursors = Map<string, Map<string, CursorRow>>;

function cursorRow(metric: string, step: number, state: string, flat: Record<string, unknown> | null): CursorRow {
  return { step, state, flat, head: `${JSON.stringify(metric)}:{"step":` };
}

/**
 * The rule cursors of the runs a process evaluates, held in memory: each run's `run_cursors` row read once, saves
 * kept until `flush` (one upsert per changed run, in the evaluation's transaction: the engine reads and saves most
 * of a run's cursors after every batch), and dropped when a transaction that may have written them rolls back
 * (`forget`), unwritten saves too. Honest because one process writes a run's cursors: on SQLite the writer (its
 * lock), on PostgreSQL the watcher of the run's scope. Both stores hold them here, so they keep the same states.
 */
export class HeldCursors {
  private readonly runs = new Map<number, RunCursors>();
  private readonly unflushed = new Set<number>();

  constructor(
    /** the run's row as JSON text, null when it has none */
    private readonly read: (runId: number) => string | null,
    private readonly write: (runId: number, json: string) => void,
  ) {}

  cursor(runId: number, rule: string, metric: string): { step: number; state: Record<string, unknown> } | undefined {
    const row = this.of(runId).get(rule)?.get(metric);
    // a new object on each read: a caller may change the state it is given
    if (!row) return undefined;
    return { step: row.step, state: row.flat ? { ...row.flat } : (JSON.parse(row.state) as Record<string, unknown>) };
  }

  save(runId: number, rule: string, metric: string, step: number, state: Record<string, unknown>): void {
    const json = JSON.stringify(state);
    const run = this.of(runId);
    let byMetric = run.get(rule);
    if (!byMetric) run.set(rule, (byMetric = new Map()));
    const row = byMetric.get(metric);
    if (row && row.step === step && row.state === json) return; // most batches leave some cursors as they were
    const flat = isFlat(state) ? { ...state } : null;
    if (!row) byMetric.set(metric, cursorRow(metric, step, json, flat));
    else {
      row.step = step;
      row.state = json;
      row.flat = flat;
    }
    this.unflushed.add(runId);
  }

  /** Writes the runs whose cursors changed since the last flush. */
  flush(): void {
    if (this.unflushed.size === 0) return;
    for (const runId of this.unflushed) {
      const run = this.runs.get(runId);
      if (run) this.write(runId, cursorsJson(run));
    }
    this.unflushed.clear();
  }

  /** The run's cursors at or past `step` back to just before it, their carried state cleared
   * (`Alerts.rewindCursors`). */
  rewind(runId: number, step: number): void {
    for (const byMetric of this.of(runId).values()) {
      for (const c of byMetric.values()) {
        if (c.step < step) continue;
        c.step = step - 1;
        c.state = '{}';
        c.flat = {};
        this.unflushed.add(runId);
      }
    }
  }

  /** Drops what is held of the run (or of every run): a transaction that may have written its cursors rolled back,
   * or the run was removed. The next read goes to the database. */
  forget(runId?: number): void {
    if (runId === undefined) {
      this.runs.clear();
      this.unflushed.clear();
    } else {
      this.runs.delete(runId);
      this.unflushed.delete(runId);
    }
  }

  private of(runId: number): RunCursors {
    let run = this.runs.get(runId);
    if (!run) {
      const json = this.read(runId);
      run = new Map();
      const stored = json === null ? {} : (JSON.parse(json) as StoredCursors);
      for (const [rule, byMetric] of Object.entries(stored)) {
        const held = new Map<string, CursorRow>();
        for (const [metric, c] of Object.entries(byMetric)) {
          held.set(metric, cursorRow(metric, c.step, JSON.stringify(c.state), isFlat(c.state) ? c.state : null));
        }
        run.set(rule, held);
      }
      this.runs.set(runId, run);
    }
    return run;
  }
}

/** A `run_cursors` row as JSON. */
type StoredCursors = Record<string, Record<string, { step: number; state: Record<string, unknown> }>>;

/** The run's cursors as its `run_cursors` row (`StoredCursors`), from the states held as JSON already: its parts
 * joined once (concatenating them made a new string per part). */
function cursorsJson(run: RunCursors): string {
  const parts = ['{'];
  for (const [rule, byMetric] of run) {
    parts.push(parts.length > 1 ? ',' : '', JSON.stringify(rule), ':{');
    let sep = '';
    for (const c of byMetric.values()) {
      parts.push(sep, c.head, JSON.stringify(c.step), ',"state":', c.state, '}');
      sep = ',';
    }
    parts.push('}');
  }
  parts.push('}');
  return parts.join('');
}

/** Every value a string, boolean, null or finite number (not -0): then a copy of the object is exactly what a
 * round trip through JSON gives. */
function isFlat(state: Record<string, unknown>): boolean {
  for (const v of Object.values(state)) {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || Object.is(v, -0)) return false;
  }
  return true;
}
