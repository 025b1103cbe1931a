-- What a run's logs say about the run rather than a metric: errors (tracebacks, OOM, NCCL timeouts),
-- trainer warnings, the end-of-training summary and facts such as the total number of steps.
CREATE TABLE events (
  id       INTEGER PRIMARY KEY,
  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  file_id  INTEGER REFERENCES files(id) ON DELETE SET NULL,
  step     INTEGER NOT NULL,            -- as logged, else the run's latest step when it was read
  kind     TEXT NOT NULL CHECK (kind IN ('error', 'warning', 'finished', 'meta')),
  title    TEXT NOT NULL,
  text     TEXT NOT NULL,               -- the line that said it (untrusted)
  fatal    INTEGER NOT NULL DEFAULT 0,
  context  TEXT,                        -- JSON array: the log lines before it (errors)
  vals     TEXT,                        -- JSON object of numbers (finished, meta)
  config   TEXT,                        -- JSON object of strings (meta)
  at       INTEGER NOT NULL             -- when rlwatch read it (its own clock, as runs.active_at)
);
CREATE INDEX events_by_run ON events (run_id, kind, id);
