import type { Database } from 'better-sqlite3';

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
}

export class Runs {
  constructor(private readonly db: Database) {}

  /** The run at `path`, created on first sight. A name taken by another path gets a numeric suffix. */
  ensure(name: string, path: string): RunRow {
    const existing = this.db.prepare('SELECT * FROM runs WHERE path = ?').get(path) as RunRow | undefined;
    if (existing) return existing;
    let candidate = name;
    for (let i = 2; this.byName(candidate); i++) candidate = `${name}~${i}`;
    this.db
      .prepare('INSERT INTO runs (name, path, created_at) VALUES (?, ?, ?)')
      .run(candidate, path, Date.now());
    return this.db.prepare('SELECT * FROM runs WHERE path = ?').get(path) as RunRow;
  }

  byId(id: number): RunRow | undefined {
    return this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as RunRow | undefined;
  }

  byName(name: string): RunRow | undefined {
    return this.db.prepare('SELECT * FROM runs WHERE name = ?').get(name) as RunRow | undefined;
  }

  list(): RunRow[] {
    return this.db.prepare('SELECT * FROM runs ORDER BY name').all() as RunRow[];
  }

  /** Folds one committed batch into the run's summary; `newSteps` counts steps not seen before. */
  noteBatch(runId: number, minStep: number, maxStep: number, newSteps: number, at: number): void {
    this.db
      .prepare(
        `UPDATE runs SET
           first_step = min(coalesce(first_step, :minStep), :minStep),
           last_step  = max(coalesce(last_step, :maxStep), :maxStep),
           records    = records + :newSteps,
           updated_at = :at
         WHERE id = :runId`,
      )
      .run({ runId, minStep, maxStep, newSteps, at });
  }

  /** rlwatch read new lines of the run at `at`. */
  active(runId: number, at: number): void {
    this.db.prepare('UPDATE runs SET active_at = ? WHERE id = ?').run(at, runId);
  }

  /** Removes a run and everything stored for it (used by `demo` to replay from scratch). */
  remove(runId: number): void {
    this.db.transaction(() => {
      for (const table of ['points', 'steps', 'run_metrics', 'examples', 'events', 'files']) {
        this.db.prepare(`DELETE FROM ${table} WHERE run_id = ?`).run(runId);
      }
      this.db.prepare('DELETE FROM runs WHERE id = ?').run(runId);
    })();
  }
}
