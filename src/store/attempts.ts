/**
 * A run's attempts (a restarted job logging its steps again): how a batch folds into them, and their table on SQLite.
 */
import type { Database } from 'better-sqlite3';
import { prepared } from './sqlite/prepared.ts';

export interface AttemptRow {
  run_id: number;
  attempt: number;
  resumed_step: number;
  at: number;
  last_step: number;
  rewound: number;
}

/** A new file repeats a sibling's steps as a new attempt only once the sibling has been quiet this long. */
export const QUIET_MS = 60_000;

/** `Attempts.replaying` of the run's newest attempt `latest`, for a caller that has read it. */
export function replayingStep(latest: AttemptRow | undefined, runLast: number | null): number | null {
  if (!latest || latest.attempt === 1 || runLast === null || latest.last_step >= runLast) return null;
  return latest.last_step;
}

/** A file as attempt tracking sees it: its format, the step of its last metric line, its attempt. */
export interface TrackedFile {
  id: number;
  format: string;
  last_step: number | null;
  attempt: number;
}

/** What one batch of a file does to its run's attempts (`foldAttempts`), for a store to write. */
export interface AttemptsFold {
  /** the attempts the batch started or took past their highest step, as they now are: upserted by (run, attempt) */
  rows: AttemptRow[];
  /** the file's step of its last metric line and its attempt now */
  fileLastStep: number;
  fileAttempt: number;
  /** how many of the steps took the newest attempt past its highest step (the run's pace: an arrival) */
  advanced: number;
}

/**
 * A new file (none of its steps read yet) whose first step the run already logged: a new attempt if a sibling of
 * its format has gone quiet, which the store answers (`QUIET_MS`). Asked only when this holds.
 */
export function mayRepeatSibling(file: TrackedFile, firstStep: number, runLast: number | null): boolean {
  return file.last_step === null && runLast !== null && firstStep <= runLast;
}

/**
 * Folds the steps of one batch of `file`, in file order, into the run's attempts, the same on every store. `latest`
 * is the run's newest attempt before the batch, `runLast` its highest step before the batch, `quietSibling` the
 * store's answer when `mayRepeatSibling`. A file that logs a step below the one it logged before, or a new file that
 * repeats steps a quiet file of its format already logged, starts a new attempt (a job resumed from a checkpoint, or
 * a new attempt in the same folder); another file of the run that goes back too joins that attempt.
 */
export function foldAttempts(
  runId: number,
  latest: AttemptRow | undefined,
  file: TrackedFile,
  steps: readonly number[],
  at: number,
  runLast: number | null,
  quietSibling: boolean,
): AttemptsFold {
  const changed = new Map<number, AttemptRow>();
  // attempt 1 of a run stored before attempts were tracked starts at the run's highest step; it needs no rewind
  const start = (attempt: number, step: number, last: number): AttemptRow => {
    const row = { run_id: runId, attempt, resumed_step: step, at, last_step: last, rewound: attempt === 1 ? 1 : 0 };
    changed.set(attempt, row);
    return row;
  };
  let newest = latest
    ? { ...latest }
    : start(1, steps[0] as number, Math.max((steps[0] as number) - 1, runLast ?? -Infinity));
  let prev = file.last_step;
  let attempt = file.attempt;
  const restart = (step: number): void => {
    // another file of the run went back first: this one is catching up with the same attempt
    if (newest.attempt > attempt) attempt = newest.attempt;
    else attempt = (newest = start(newest.attempt + 1, step, step - 1)).attempt;
  };
  if (quietSibling && mayRepeatSibling(file, steps[0] as number, runLast)) {
    // a new file of a job started again: a new attempt, unless the newest one began within the quiet time (this
    // file is another log of the job that began it); not joined by its file's attempt, which a new file lacks
    const first = steps[0] as number;
    if (newest.at > at - QUIET_MS) attempt = newest.attempt;
    else attempt = (newest = start(newest.attempt + 1, first, first - 1)).attempt;
  }
  let advanced = 0;
  for (const step of steps) {
    // the same step again is more of that step (the R1-Zero GRPO logging guide's callback blocks, DeepSpeed's
    // reward line), not a restart
    if (prev !== null && step < prev) restart(step);
    if (attempt === newest.attempt && step > newest.last_step) {
      newest.last_step = step;
      changed.set(newest.attempt, newest);
      advanced++;
    }
    prev = step;
  }
  return { rows: [...changed.values()], fileLastStep: prev as number, fileAttempt: attempt, advanced };
}

/** The attempts of each run (`foldAttempts` says when a batch starts one). */
export class Attempts {
  /** per run whose batches this process writes (`track`: their one writer, by the writer lock), its attempts as
   * written, oldest first: the engine reads them after every batch, and `track` on every batch */
  private readonly held = new Map<number, AttemptRow[]>();

  constructor(private readonly db: Database) {}

  list(runId: number): AttemptRow[] {
    const held = this.held.get(runId);
    if (held) return held.map((a) => ({ ...a }));
    return prepared(this.db, 'SELECT * FROM attempts WHERE run_id = ? ORDER BY attempt').all(runId) as AttemptRow[];
  }

  latest(runId: number): AttemptRow | undefined {
    const held = this.held.get(runId);
    if (held) {
      const last = held[held.length - 1];
      return last && { ...last };
    }
    return prepared(this.db, 'SELECT * FROM attempts WHERE run_id = ? ORDER BY attempt DESC LIMIT 1').get(runId) as
      | AttemptRow
      | undefined;
  }

  /** A transaction that may have written the run's attempts rolled back (or the run was removed): read them again. */
  forget(runId?: number): void {
    if (runId === undefined) this.held.clear();
    else this.held.delete(runId);
  }

  /** The highest step of the newest attempt while it logs again steps an earlier attempt logged (below the
   * run's highest step `runLast`); null when no attempt is doing so. */
  replaying(runId: number, runLast: number | null): number | null {
    return replayingStep(this.latest(runId), runLast);
  }

  markRewound(runId: number, attempt: number): void {
    prepared(this.db, 'UPDATE attempts SET rewound = 1 WHERE run_id = ? AND attempt = ?').run(runId, attempt);
    const row = this.held.get(runId)?.find((a) => a.attempt === attempt);
    if (row) row.rewound = 1;
  }

  /**
   * Folds the steps of one batch of `file` into the run's attempts (call inside the batch transaction, before the
   * run's summary is updated). `runLast` is the run's highest step before the batch. Returns how many of the steps
   * took the newest attempt past its highest step (the run's pace), and what the file's row is to say now
   * (`Files.advance`); null when there were no steps.
   */
  track(
    runId: number,
    file: TrackedFile,
    steps: readonly number[],
    at: number,
    runLast: number | null,
  ): Pick<AttemptsFold, 'advanced' | 'fileLastStep' | 'fileAttempt'> | null {
    if (steps.length === 0) return null;
    const quiet = mayRepeatSibling(file, steps[0] as number, runLast) && this.hasQuietSibling(runId, file, at);
    let held = this.held.get(runId);
    if (!held) this.held.set(runId, (held = this.list(runId)));
    const fold = foldAttempts(runId, held[held.length - 1], file, steps, at, runLast, quiet);
    const upsert = prepared(
      this.db,
      `INSERT INTO attempts (run_id, attempt, resumed_step, at, last_step, rewound)
       VALUES (:run_id, :attempt, :resumed_step, :at, :last_step, :rewound)
       ON CONFLICT (run_id, attempt) DO UPDATE SET last_step = excluded.last_step`,
    );
    for (const row of fold.rows) {
      upsert.run(row);
      const known = held.find((a) => a.attempt === row.attempt);
      if (known)
        known.last_step = row.last_step; // what the upsert changes of a row it finds
      else held.push({ ...row }); // a new attempt is the newest
    }
    return fold;
  }

  /**
   * Another file of the run in the same format logged steps and has since gone quiet: slurm-2.out after
   * slurm-1.out stopped is a new attempt; learning.log beside batch_metrics.jsonl, a `tee`'d copy or the log of
   * another rank growing beside it are not (nor files first read together, at start-up).
   */
  private hasQuietSibling(runId: number, file: TrackedFile, at: number): boolean {
    return (
      prepared(
        this.db,
        `SELECT 1 FROM files WHERE run_id = ? AND format = ? AND id != ? AND last_step IS NOT NULL
             AND grew_at <= ? LIMIT 1`,
      ).get(runId, file.format, file.id, at - QUIET_MS) !== undefined
    );
  }
}
