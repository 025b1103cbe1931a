-- Restarted jobs, the pace of a run's steps, and how far the engine has evaluated each run.

-- Each attempt of a run: attempt 1 from its first step; a later one from the step at which a file of the run
-- logged an earlier step again (a job resumed from a checkpoint, or a new attempt in the same folder).
CREATE TABLE attempts (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  attempt       INTEGER NOT NULL,
  resumed_step  INTEGER NOT NULL,
  at            INTEGER NOT NULL,          -- when rlwatch read its first step (its own clock)
  last_step     INTEGER NOT NULL,          -- the highest step it has logged
  rewound       INTEGER NOT NULL DEFAULT 0, -- the engine has rewound the run's rule cursors for it
  PRIMARY KEY (run_id, attempt)
) WITHOUT ROWID;

-- When batches that took a run to new steps were read, and how many: the run's pace (stall rule). Pruned
-- to the newest few hundred per run.
CREATE TABLE arrivals (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL,
  at      INTEGER NOT NULL,
  steps   INTEGER NOT NULL
);
CREATE INDEX arrivals_by_run ON arrivals (run_id, id);

ALTER TABLE files ADD COLUMN last_step INTEGER;  -- the step of its last metric line, in file order
ALTER TABLE files ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;  -- the attempt its lines now belong to
ALTER TABLE runs ADD COLUMN started_at INTEGER;  -- when rlwatch first read lines of it
ALTER TABLE runs ADD COLUMN live_at INTEGER;     -- the last read of it seen growing while watched (not catch-up)
ALTER TABLE runs ADD COLUMN batches INTEGER NOT NULL DEFAULT 0;    -- committed batches with metrics
ALTER TABLE runs ADD COLUMN evaluated INTEGER NOT NULL DEFAULT 0;  -- of those, evaluated by the engine
