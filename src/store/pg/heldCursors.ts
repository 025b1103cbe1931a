import { cursorsJson, isFlat, type CursorRow, type RunCursors, type StoredCursors } from '../alerts.ts';

/**
 * A watcher's rule cursors on PostgreSQL, held on its thread as the SQLite store's `Alerts` holds them: each run's
 * `run_cursors` row read once, saves kept until `flush` (one upsert per changed run, in the evaluation's
 * transaction), and all of it dropped when a transaction that may have written them rolls back. Honest because the
 * watcher of a run's scope is the only process that writes its cursors. The row is encoded as SQLite's
 * (`cursorsJson`, `isFlat` in alerts.ts), so both stores keep the same states.
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
    const was = byMetric?.get(metric);
    if (was && was.step === step && was.state === json) return;
    if (!byMetric) run.set(rule, (byMetric = new Map()));
    byMetric.set(metric, { step, state: json, flat: isFlat(state) ? { ...state } : null });
    this.unflushed.add(runId);
  }

  /** Writes the runs whose cursors changed since the last flush. */
  flush(): void {
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
      for (const [metric, c] of byMetric) {
        if (c.step < step) continue;
        byMetric.set(metric, { step: step - 1, state: '{}', flat: {} });
        this.unflushed.add(runId);
      }
    }
  }

  /** Drops everything held (a transaction that may have written cursors rolled back). */
  forget(): void {
    this.runs.clear();
    this.unflushed.clear();
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
          held.set(metric, { step: c.step, state: JSON.stringify(c.state), flat: isFlat(c.state) ? c.state : null });
        }
        run.set(rule, held);
      }
      this.runs.set(runId, run);
    }
    return run;
  }
}
