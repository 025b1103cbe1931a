/** Generations kept per step on SQLite: only the best and worst few by reward. */
import type { Database, Statement } from 'better-sqlite3';
import type { ExampleRecord } from './records.ts';
import { prepared } from './sqlite/prepared.ts';

export interface StoredExample {
  step: number;
  key: string;
  reward: number;
  prompt: string | null;
  completion: string;
  breakdown: Record<string, number>;
}

/** Keeps, per (run, step), only the `keep` best and `keep` worst generations by reward. */
export class Examples {
  private readonly upsert: Statement;
  private readonly prune: Statement;

  constructor(private readonly db: Database) {
    // The same generation may come from completions.jsonl (full text) and a breakdown file (preview and
    // components): keep the longer text and the union of the components.
    this.upsert = db.prepare(
      `INSERT INTO examples (run_id, step, key, reward, prompt, completion, breakdown)
       VALUES (:runId, :step, :key, :reward, :prompt, :completion, :breakdown)
       ON CONFLICT (run_id, step, key) DO UPDATE SET
         completion = CASE WHEN length(excluded.completion) > length(completion)
                           THEN excluded.completion ELSE completion END,
         prompt = coalesce(prompt, excluded.prompt),
         breakdown = json_patch(breakdown, excluded.breakdown)`,
    );
    this.prune = db.prepare(
      `DELETE FROM examples WHERE run_id = :runId AND step = :step
         AND key NOT IN (SELECT key FROM examples WHERE run_id = :runId AND step = :step
                         ORDER BY reward DESC, key LIMIT :keep)
         AND key NOT IN (SELECT key FROM examples WHERE run_id = :runId AND step = :step
                         ORDER BY reward ASC, key LIMIT :keep)`,
    );
  }

  /** Call inside the batch transaction with records that all carry a step. */
  write(runId: number, records: Array<ExampleRecord & { step: number }>, keep: number): void {
    const steps = new Set<number>();
    for (const r of records) {
      this.upsert.run({
        runId,
        step: r.step,
        key: r.key,
        reward: r.reward,
        prompt: r.prompt ?? null,
        completion: r.completion,
        breakdown: JSON.stringify(r.breakdown),
      });
      steps.add(r.step);
    }
    for (const step of steps) this.prune.run({ runId, step, keep });
  }

  /** The `n` best (or worst) kept generations over steps `from`..`to` (for reports). */
  extremes(runId: number, from: number, to: number, which: 'best' | 'worst', n: number): StoredExample[] {
    const rows = this.db
      .prepare(
        `SELECT step, key, reward, prompt, completion, breakdown FROM examples
         WHERE run_id = ? AND step BETWEEN ? AND ? AND reward IS NOT NULL
         ORDER BY reward ${which === 'best' ? 'DESC' : 'ASC'}, step DESC, key LIMIT ?`,
      )
      .all(runId, from, to, n) as Array<Omit<StoredExample, 'breakdown'> & { breakdown: string }>;
    return rows.map((r) => ({ ...r, breakdown: JSON.parse(r.breakdown) as Record<string, number> }));
  }

  /** Every kept generation over steps `from`..`to`, oldest first (reward components, for reports). */
  between(runId: number, from: number, to: number): StoredExample[] {
    const rows = this.db
      .prepare(
        `SELECT step, key, reward, prompt, completion, breakdown FROM examples
         WHERE run_id = ? AND step BETWEEN ? AND ? ORDER BY step, key`,
      )
      .all(runId, from, to) as Array<Omit<StoredExample, 'breakdown'> & { breakdown: string }>;
    return rows.map((r) => ({ ...r, breakdown: JSON.parse(r.breakdown) as Record<string, number> }));
  }

  /** The kept generations of `step`, or of the nearest earlier step that has any; best first. */
  atOrBefore(runId: number, step: number): StoredExample[] {
    const at = prepared(this.db, 'SELECT max(step) FROM examples WHERE run_id = ? AND step <= ?')
      .pluck()
      .get(runId, step) as number | null;
    if (at === null) return [];
    const rows = prepared(
      this.db,
      `SELECT step, key, reward, prompt, completion, breakdown FROM examples
         WHERE run_id = ? AND step = ? ORDER BY reward DESC, key`,
    ).all(runId, at) as Array<Omit<StoredExample, 'breakdown'> & { breakdown: string }>;
    return rows.map((r) => ({ ...r, breakdown: JSON.parse(r.breakdown) as Record<string, number> }));
  }
}
