/**
 * The files read per run on SQLite: format, offset, identity and skipped lines, the offset written with the records.
 */
import type { Database } from 'better-sqlite3';
import { HeldRows } from './heldRows.ts';
import { prepared } from './sqlite/prepared.ts';

export interface FileRow {
  id: number;
  run_id: number;
  path: string;
  format: string;
  dev: number | null;
  ino: number | null;
  offset: number;
  size: number;
  mtime_ms: number | null;
  seq: number;
  lines: number;
  records: number;
  skipped: number;
  /** when rlwatch last read new lines of it (its own clock, not the file's mtime) */
  grew_at: number | null;
  /** the step of its last metric line, in file order (restarts are told by it) */
  last_step: number | null;
  /** the attempt of the run its lines now belong to */
  attempt: number;
}

/** Where a file was read up to; written in the same transaction as the records read. */
export interface FileProgress {
  dev: number;
  ino: number;
  offset: number;
  size: number;
  mtimeMs: number;
  seq: number;
  lines: number;
  records: number;
}

export interface SkipCount {
  count: number;
  sample: string;
}

/** Where a file's steps stand among the run's attempts (`Attempts.track`). */
export interface FileAttempt {
  lastStep: number;
  attempt: number;
}

export class Files {
  /** the rows of the files this store reads (`advance`: their one writer), by id: each live line asked for its
   * file's row twice */
  private readonly held: HeldRows<FileRow>;
  private readonly heldIds = new Map<string, number>();

  constructor(private readonly db: Database) {
    this.held = new HeldRows(
      (id) => prepared(this.db, 'SELECT * FROM files WHERE id = ?').get(id) as FileRow | undefined,
      (id, row) => this.heldIds.set(row.path, id),
    );
  }

  byPath(path: string): FileRow | undefined {
    const id = this.heldIds.get(path);
    if (id !== undefined) return this.byId(id);
    return prepared(this.db, 'SELECT * FROM files WHERE path = ?').get(path) as FileRow | undefined;
  }

  byId(id: number): FileRow | undefined {
    return this.held.row(id);
  }

  /** A transaction that may have written file rows rolled back, or a run was removed: read them again. */
  forget(): void {
    this.held.forget();
    this.heldIds.clear();
  }

  add(runId: number, path: string, format: string): FileRow {
    prepared(this.db, 'INSERT INTO files (run_id, path, format) VALUES (?, ?, ?)').run(runId, path, format);
    return this.byPath(path) as FileRow;
  }

  ofRun(runId: number): FileRow[] {
    return prepared(this.db, 'SELECT * FROM files WHERE run_id = ? ORDER BY path').all(runId) as FileRow[];
  }

  /** Sets the absolute progress and adds the batch's line/record/skip counts; `now` is when it was read; `attempt`:
   * the step of the file's last metric line and the attempt its lines now belong to (`Attempts.track`), when the
   * batch had steps. The held row is changed as the statement changes it (RETURNING cost more than the reads it
   * saved). */
  advance(fileId: number, p: FileProgress, skipped: number, now: number, attempt: FileAttempt | null = null): void {
    prepared(
      this.db,
      `UPDATE files SET dev = :dev, ino = :ino, offset = :offset, size = :size, mtime_ms = :mtimeMs,
           seq = :seq, lines = lines + :lines, records = records + :records, skipped = skipped + :skipped,
           updated_at = :now, grew_at = CASE WHEN :lines > 0 THEN :now ELSE grew_at END,
           last_step = coalesce(:lastStep, last_step), attempt = coalesce(:attempt, attempt)
         WHERE id = :fileId`,
    ).run({ ...p, fileId, skipped, now, lastStep: attempt?.lastStep ?? null, attempt: attempt?.attempt ?? null });
    const row = this.held.written(fileId) as (FileRow & { updated_at: number }) | undefined;
    if (!row) return;
    row.dev = p.dev;
    row.ino = p.ino;
    row.offset = p.offset;
    row.size = p.size;
    row.mtime_ms = p.mtimeMs;
    row.seq = p.seq;
    row.lines += p.lines;
    row.records += p.records;
    row.skipped += skipped;
    row.updated_at = now;
    if (p.lines > 0) row.grew_at = now;
    if (attempt) {
      row.last_step = attempt.lastStep;
      row.attempt = attempt.attempt;
    }
  }

  addSkips(fileId: number, skips: Map<string, SkipCount>): void {
    const stmt = prepared(
      this.db,
      `INSERT INTO file_skips (file_id, reason, count, sample) VALUES (?, ?, ?, ?)
       ON CONFLICT (file_id, reason) DO UPDATE SET count = count + excluded.count, sample = excluded.sample`,
    );
    for (const [reason, { count, sample }] of skips) stmt.run(fileId, reason, count, sample);
  }

  /** For a file read whole again: the skips of an earlier read no longer stand. */
  clearSkips(fileId: number): void {
    prepared(this.db, 'DELETE FROM file_skips WHERE file_id = ?').run(fileId);
    prepared(this.db, 'UPDATE files SET skipped = 0 WHERE id = ?').run(fileId);
    const row = this.held.ifHeld(fileId);
    if (row) row.skipped = 0;
  }

  skipsOf(fileId: number): Array<{ reason: string; count: number; sample: string }> {
    return prepared(this.db, 'SELECT reason, count, sample FROM file_skips WHERE file_id = ? ORDER BY count DESC').all(
      fileId,
    ) as Array<{ reason: string; count: number; sample: string }>;
  }
}
