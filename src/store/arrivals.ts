/** When batches took each run to new steps, on rlwatch's own clock: the pace the stall rule reads. */
import type { Database, Statement } from 'better-sqlite3';
import { prepared } from './sqlite/prepared.ts';

/** Rows kept per run: enough for a stall rule's window of 200 steps with reads that came close together. */
export const ARRIVALS_KEPT = 400;
/** A run's older rows are pruned once every this many notes: the prune walks ARRIVALS_KEPT rows of the index, which
 * after every batch of a long run was more work than the insert; `recent` reads the newest ARRIVALS_KEPT alike. */
export const PRUNE_EVERY = 50;

/** When batches took a run to new steps, and how many: the run's pace, on rlwatch's own clock. */
export class Arrivals {
  private readonly insert: Statement;
  private readonly prune: Statement;
  /** notes per run since its last prune in this process (a new process prunes at its first note of each run) */
  private readonly unpruned = new Map<number, number>();

  constructor(private readonly db: Database) {
    this.insert = db.prepare('INSERT INTO arrivals (run_id, at, steps) VALUES (?, ?, ?)');
    this.prune = db.prepare(
      `DELETE FROM arrivals WHERE run_id = :runId
         AND id <= (SELECT id FROM arrivals WHERE run_id = :runId ORDER BY id DESC LIMIT 1 OFFSET ${ARRIVALS_KEPT})`,
    );
  }

  note(runId: number, at: number, steps: number): void {
    this.insert.run(runId, at, steps);
    const n = this.unpruned.get(runId);
    if (n !== undefined && n + 1 < PRUNE_EVERY) {
      this.unpruned.set(runId, n + 1);
      return;
    }
    this.prune.run({ runId });
    this.unpruned.set(runId, 0);
  }

  /** The newest arrivals, oldest first. */
  recent(runId: number): Array<{ at: number; steps: number }> {
    const rows = prepared(
      this.db,
      `SELECT at, steps FROM arrivals WHERE run_id = ? ORDER BY id DESC LIMIT ${ARRIVALS_KEPT}`,
    ).all(runId) as Array<{ at: number; steps: number }>;
    return rows.reverse();
  }
}
