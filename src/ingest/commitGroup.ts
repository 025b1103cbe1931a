import { prepared } from '../store/prepared.ts';
import type { Store } from '../store/store.ts';

/**
 * Starts several files' reads inside one SQLite transaction and commits it before anything else can run: what each
 * read commits before it first yields (live, an append's one batch and its rules) lands in the group, each batch in
 * its own savepoint (`Store.commit` nests), so a batch that fails rolls back alone. The group never awaits, so no
 * other writer on the connection (a chat ack, the tick, a mute) can land inside it; what a read commits after it
 * yields is its own transaction, as without a group. 100 files appended to at once: 1 commit instead of 100.
 *
 * Returns the reads (they settle later) and, when the group itself did not commit (SQLite rolled it back on a full
 * disk or an I/O error, or COMMIT failed), why: then what the store held in memory of the runs it could have written
 * is dropped, and the caller reads those files again. Throws only what BEGIN IMMEDIATE throws (the database busy),
 * before any read started.
 */
export function readInOneTransaction<T>(store: Store, files: number, reads: () => T[]): { reads: T[]; failed: Error | null } {
  const { db } = store;
  const lastRunId = (prepared(db, 'SELECT max(id) FROM runs').pluck().get() as number | null) ?? 0;
  db.exec('BEGIN IMMEDIATE');
  let started: T[] = [];
  try {
    started = reads();
    if (!db.inTransaction) throw new Error('the database rolled it back');
    db.exec('COMMIT');
    return { reads: started, failed: null };
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    forgetRuns(store, lastRunId, files);
    return { reads: started, failed: new Error(`the group of ${files} files did not commit: ${(err as Error).message}`) };
  }
}

/** After a rollback: what the store remembers of the batches it wrote (look-back windows, rule cursors), for every
 * run and every id a run created in the group (at most one per file) had. */
function forgetRuns(store: Store, lastRunId: number, files: number): void {
  const ids = new Set(store.runs.list().map((r) => r.id));
  for (let id = lastRunId + 1; id <= lastRunId + files; id++) ids.add(id);
  for (const id of ids) store.points.forget(id);
  store.alerts.forgetCursors();
}
