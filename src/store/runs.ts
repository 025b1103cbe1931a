/** The runs table on SQLite: one row per run with its summary, held in memory for the store that writes its batches. */
import type { Database } from 'better-sqlite3';
import { HeldRows } from './heldRows.ts';
import { prepared } from './sqlite/prepared.ts';

export interface RunRow {
  id: number;
  name: string;
  path: string;
  created_at: number;
  updated_at: number | null;
  first_step: number | null;
  last_step: number | null;
  records: number;
  /** when rlwatch last read new lines of any of its files (its own clock) */
  active_at: number | null;
  /** when rlwatch first read lines of it */
  started_at: number | null;
  /** the last time it was seen growing while watched live (not while catching up on what was there) */
  live_at: number | null;
  /** PostgreSQL only: the scope (host prefix) of the watcher that reads it */
  scope?: string;
  /** committed batches with metrics, and how many of them the engine has evaluated */
  batches: number;
  evaluated: number;
}

export class Runs {
  /** The rows of the runs whose batches this store writes (`noteBatch`, `active`): the engine and the ingestor read
   * the run's row several times per live line. The store that writes a run's batches is the one that writes its row
   * (the engine evaluates on it); one that only evaluates (`markLive`, `markEvaluated`) holds nothing. */
  private readonly held = new HeldRows<RunRow>(
    (id) => prepared(this.db, 'SELECT * FROM runs WHERE id = ?').get(id) as RunRow | undefined,
  );

  constructor(
    private readonly db: Database,
    private readonly now: () => number = Date.now,
    /** told of each run removed (what is held in memory of it goes; its id may be given again) */
    private readonly removed: (runId: number) => void = () => {},
  ) {}

  /** The run at `path`, created on first sight. A name taken by another path gets a numeric suffix. */
  ensure(name: string, path: string): RunRow {
    const existing = prepared(this.db, 'SELECT * FROM runs WHERE path = ?').get(path) as RunRow | undefined;
    if (existing) return existing;
    let candidate = name;
    for (let i = 2; this.byName(candidate); i++) candidate = `${name}~${i}`;
    prepared(this.db, 'INSERT INTO runs (name, path, created_at) VALUES (?, ?, ?)').run(candidate, path, this.now());
    return prepared(this.db, 'SELECT * FROM runs WHERE path = ?').get(path) as RunRow;
  }

  byId(id: number): RunRow | undefined {
    return this.held.row(id);
  }

  byName(name: string): RunRow | undefined {
    return prepared(this.db, 'SELECT * FROM runs WHERE name = ?').get(name) as RunRow | undefined;
  }

  list(): RunRow[] {
    return prepared(this.db, 'SELECT * FROM runs ORDER BY name').all() as RunRow[];
  }

  /** Folds one committed batch into the run's summary; `newSteps` counts steps not seen before. With `read`,
   * rlwatch read new lines of it at `at` too (what `active` notes), in the same statement. */
  noteBatch(runId: number, minStep: number, maxStep: number, newSteps: number, at: number, read = false): void {
    prepared(
      this.db,
      `UPDATE runs SET
           first_step = min(coalesce(first_step, :minStep), :minStep),
           last_step  = max(coalesce(last_step, :maxStep), :maxStep),
           records    = records + :newSteps,
           batches    = batches + 1,
           updated_at = :at,
           active_at  = CASE WHEN :read THEN :at ELSE active_at END,
           started_at = CASE WHEN :read THEN coalesce(started_at, :at) ELSE started_at END
         WHERE id = :runId`,
    ).run({ runId, minStep, maxStep, newSteps, at, read: read ? 1 : 0 });
    const row = this.held.written(runId);
    if (!row) return;
    row.first_step = row.first_step === null ? minStep : Math.min(row.first_step, minStep);
    row.last_step = row.last_step === null ? maxStep : Math.max(row.last_step, maxStep);
    row.records += newSteps;
    row.batches += 1;
    row.updated_at = at;
    if (read) noteRead(row, at);
  }

  /** rlwatch read new lines of the run at `at`. */
  active(runId: number, at: number): void {
    prepared(this.db, 'UPDATE runs SET active_at = :at, started_at = coalesce(started_at, :at) WHERE id = :runId').run({
      at,
      runId,
    });
    const row = this.held.written(runId);
    if (row) noteRead(row, at);
  }

  /** Its last read was of lines written while it was watched (not of what was there at start-up). */
  markLive(runId: number): void {
    prepared(this.db, 'UPDATE runs SET live_at = active_at WHERE id = ? AND live_at IS NOT active_at').run(runId);
    const row = this.held.ifHeld(runId);
    if (row) row.live_at = row.active_at;
  }

  /** The engine has evaluated every batch of the run committed so far (call in its transaction). */
  markEvaluated(runId: number): void {
    prepared(this.db, 'UPDATE runs SET evaluated = batches WHERE id = ?').run(runId);
    const row = this.held.ifHeld(runId);
    if (row) row.evaluated = row.batches;
  }

  /** Runs with committed batches the engine has not evaluated (a crash between a commit and its evaluation). */
  unevaluated(): number[] {
    return prepared(this.db, 'SELECT id FROM runs WHERE evaluated < batches ORDER BY id').pluck().all() as number[];
  }

  /** Removes a run and everything stored for it (used by `demo` to replay from scratch). */
  remove(runId: number): void {
    this.db.transaction(() => {
      for (const table of ['points', 'steps', 'run_metrics', 'examples', 'events', 'files', 'attempts', 'arrivals']) {
        prepared(this.db, `DELETE FROM ${table} WHERE run_id = ?`).run(runId);
      }
      prepared(this.db, 'DELETE FROM runs WHERE id = ?').run(runId);
    })();
    this.removed(runId);
  }

  /** A transaction that may have written run rows rolled back, or a run was removed: read them again. */
  forget(): void {
    this.held.forget();
  }
}

/** What `active` writes, on a held row. */
function noteRead(row: RunRow, at: number): void {
  row.active_at = at;
  row.started_at ??= at;
}
