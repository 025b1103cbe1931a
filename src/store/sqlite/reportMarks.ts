/** The scheduled reports already sent, on SQLite, so that each is sent once. */
import type { Database } from 'better-sqlite3';

/** The scheduled reports already sent (or passed over): each milestone report and each day's digest once. */
export class ReportMarks {
  constructor(private readonly db: Database) {}

  /** Records the mark; false when it was there already. */
  mark(runId: number, mark: string, at: number): boolean {
    const insert = this.db.prepare('INSERT OR IGNORE INTO report_marks (run_id, mark, at) VALUES (?, ?, ?)');
    return insert.run(runId, mark, at).changes > 0;
  }

  /** The last step the run had logged by `at` (rlwatch's clock when the step arrived), for "since yesterday". */
  stepAt(runId: number, at: number): number | null {
    const step = this.db.prepare('SELECT max(step) FROM steps WHERE run_id = ? AND at <= ?').pluck().get(runId, at);
    return (step as number | null) ?? null;
  }
}
