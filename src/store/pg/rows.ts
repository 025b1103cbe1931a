import type { StoredExample } from '../examples.ts';
import type { FileRow } from '../files.ts';
import type { RunRow } from '../runs.ts';

/** Rows as stored (JSON as text), turned into the shapes the SQLite store's modules return. */
export interface ExampleDbRow extends Omit<StoredExample, 'breakdown'> {
  breakdown: string;
}

export const exampleFromRow = (r: ExampleDbRow): StoredExample => ({
  ...r,
  breakdown: JSON.parse(r.breakdown) as Record<string, number>,
});

/**
 * A table's columns, named in the statements that read its rows whole instead of `*`: a watcher's statements are
 * prepared once per connection, and one whose result gains a column (a newer rlwatch's migration adding it while
 * this one runs) fails with 0A000, "cached plan must not change result type". The record lists every key of the
 * row's type, so a column added to the type and not here fails to compile.
 */
function columns<T>(keys: Record<keyof T, true>): (alias?: string) => string {
  const names = Object.keys(keys).map((k) => (k === 'offset' ? '"offset"' : k));
  const plain = names.join(', ');
  return (alias) => (alias === undefined ? plain : names.map((n) => `${alias}.${n}`).join(', '));
}

/** `runs`' columns (a RunRow and the watcher's scope). */
export const runColumns = columns<RunRow & { scope: string }>({
  id: true, name: true, path: true, created_at: true, updated_at: true, first_step: true, last_step: true,
  records: true, active_at: true, started_at: true, live_at: true, batches: true, evaluated: true, scope: true,
});

/** `files`' columns (a FileRow, its run's scope and when the row last changed). */
export const fileColumns = columns<FileRow & { scope: string; updated_at: number | null }>({
  id: true, run_id: true, path: true, format: true, dev: true, ino: true, offset: true, size: true, mtime_ms: true,
  seq: true, lines: true, records: true, skipped: true, grew_at: true, last_step: true, attempt: true, scope: true,
  updated_at: true,
});
