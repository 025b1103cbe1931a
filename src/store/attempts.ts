import type { Database } from 'better-sqlite3';
import { prepared } from './prepared.ts';

export interface AttemptRow {
  run_id: number;
  attempt: number;
  resumed_step: number;
  at: number;
  last_step: number;
  rewound: number;
}

/** A new file repeats a sibling's steps as a new attempt only once the sibling has been quiet this long. */
const QUIET_MS = 60_000;

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

/**
 * The attempts of each run. A file that logs a step below the one it logged before, or a new file that
 * repeats steps a file of its format already logged, starts a new attempt (a job resumed from a checkpoint,
 * or a new attempt in the same folder); another file of the run that goes back too joins that attempt.
 */
export class Attempts {
  constructor(private readonly db: Database) {}

  list(runId: number): AttemptRow[] {
    return prepared(this.db, 'SELECT * FROM attempts WHERE run_id = ? ORDER BY attempt').all(runId) as AttemptRow[];
  }

  latest(runId: number): AttemptRow | undefined {
    return prepared(this.db, 'SELECT * FROM attempts WHERE run_id = ? ORDER BY attempt DESC LIMIT 1')
      .get(runId) as AttemptRow | undefined;
  }

  /** The highest step of the newest attempt while it logs again steps an earlier attempt logged (below the
   * run's highest step `runLast`); null when no attempt is doing so. */
  replaying(runId: number, runLast: number | null): number | null {
    return replayingStep(this.latest(runId), runLast);
  }

  markRewound(runId: number, attempt: number): void {
    prepared(this.db, 'UPDATE attempts SET rewound = 1 WHERE run_id = ? AND attempt = ?').run(runId, attempt);
  }

  /**
   * Folds the steps of one batch of `file`, in file order, into the run's attempts (call inside the batch
   * transaction, before the run's summary is updated). `runLast` is the run's highest step before the batch.
   * Returns how many of the steps took the newest attempt past its highest step (the run's pace).
   */
  track(runId: number, file: TrackedFile, steps: readonly number[], at: number, runLast: number | null): number {
    if (steps.length === 0) return 0;
    let latest = this.latest(runId) ?? this.start(runId, 1, steps[0] as number, at, runLast);
    let prev = file.last_step;
    let attempt = file.attempt;
    const restart = (step: number): void => {
      // another file of the run went back first: this one is catching up with the same attempt
      if (latest.attempt > attempt) attempt = latest.attempt;
      else attempt = (latest = this.start(runId, latest.attempt + 1, step, at)).attempt;
    };
    if (prev === null && runLast !== null && (steps[0] as number) <= runLast && this.hasQuietSibling(runId, file, at)) {
      restart(steps[0] as number);
    }
    let advanced = 0;
    for (const step of steps) {
      // the same step again is more of that step (seed 002's blocks, DeepSpeed's reward line), not a restart
      if (prev !== null && step < prev) restart(step);
      if (attempt === latest.attempt && step > latest.last_step) {
        latest.last_step = step;
        advanced++;
      }
      prev = step;
    }
    prepared(this.db, 'UPDATE files SET last_step = ?, attempt = ? WHERE id = ?').run(prev, attempt, file.id);
    prepared(this.db, 'UPDATE attempts SET last_step = ? WHERE run_id = ? AND attempt = ?')
      .run(latest.last_step, runId, latest.attempt);
    return advanced;
  }

  /** A new attempt from `step`, nothing logged yet; attempt 1 of a run stored before attempts were tracked
   * starts at the run's highest step. Attempt 1 needs no rewind. */
  private start(runId: number, attempt: number, step: number, at: number, runLast: number | null = null): AttemptRow {
    const last = Math.max(step - 1, runLast ?? -Infinity);
    const rewound = attempt === 1 ? 1 : 0;
    const row: AttemptRow = { run_id: runId, attempt, resumed_step: step, at, last_step: last, rewound };
    prepared(this.db,
        `INSERT INTO attempts (run_id, attempt, resumed_step, at, last_step, rewound)
         VALUES (:run_id, :attempt, :resumed_step, :at, :last_step, :rewound)`,
      )
      .run(row);
    return row;
  }

  /**
   * Another file of the run in the same format logged steps and has since gone quiet: slurm-2.out after
   * slurm-1.out stopped is a new attempt; learning.log beside batch_metrics.jsonl, a `tee`'d copy or the log of
   * another rank growing beside it are not (nor files first read together, at start-up).
   */
  private hasQuietSibling(runId: number, file: TrackedFile, at: number): boolean {
    return (
      prepared(this.db,
          `SELECT 1 FROM files WHERE run_id = ? AND format = ? AND id != ? AND last_step IS NOT NULL
             AND grew_at <= ? LIMIT 1`,
        )
        .get(runId, file.format, file.id, at - QUIET_MS) !== undefined
    );
  }
}
