-- Runs, the files read for them (with read offsets), metric points and kept example generations.

CREATE TABLE runs (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  path        TEXT NOT NULL UNIQUE,
  created_at  INTEGER NOT NULL,          -- ms since epoch
  updated_at  INTEGER,                   -- when a record of this run was last committed
  first_step  INTEGER,
  last_step   INTEGER,
  records     INTEGER NOT NULL DEFAULT 0 -- metric records (lines) stored
);

CREATE TABLE files (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  path        TEXT NOT NULL UNIQUE,      -- absolute
  format      TEXT NOT NULL,
  dev         INTEGER,                   -- identity of the file read up to `offset`: a new inode is a rotation
  ino         INTEGER,
  offset      INTEGER NOT NULL DEFAULT 0, -- bytes consumed: every complete line before it is stored
  size        INTEGER NOT NULL DEFAULT 0,
  mtime_ms    REAL,
  seq         INTEGER NOT NULL DEFAULT 0, -- records numbered so far, for formats without step numbers
  lines       INTEGER NOT NULL DEFAULT 0,
  records     INTEGER NOT NULL DEFAULT 0,
  skipped     INTEGER NOT NULL DEFAULT 0,
  updated_at  INTEGER
);

-- Lines that parsed as nothing, per file and reason, with the last such line as a sample.
CREATE TABLE file_skips (
  file_id  INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  reason   TEXT NOT NULL,
  count    INTEGER NOT NULL,
  sample   TEXT,
  PRIMARY KEY (file_id, reason)
) WITHOUT ROWID;

CREATE TABLE metrics (
  id    INTEGER PRIMARY KEY,
  name  TEXT NOT NULL UNIQUE
);

-- One value per (run, metric, step). NULL stands for NaN (SQLite has no NaN); ±Infinity is stored as is.
CREATE TABLE points (
  run_id     INTEGER NOT NULL,
  metric_id  INTEGER NOT NULL,
  step       INTEGER NOT NULL,
  value      REAL,
  PRIMARY KEY (run_id, metric_id, step)
) WITHOUT ROWID;

-- The best and worst few generations per step; `key` merges a generation seen in two files.
CREATE TABLE examples (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step        INTEGER NOT NULL,
  key         TEXT NOT NULL,
  reward      REAL NOT NULL,
  prompt      TEXT,
  completion  TEXT NOT NULL,
  breakdown   TEXT NOT NULL,             -- JSON object of reward components
  PRIMARY KEY (run_id, step, key)
) WITHOUT ROWID;

-- The steps a run has logged, with when each was first committed (stall detection, `runs` counts).
CREATE TABLE steps (
  run_id  INTEGER NOT NULL,
  step    INTEGER NOT NULL,
  at      INTEGER NOT NULL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

-- Which metrics a run has logged: lets `run status` find each latest value with one index seek apiece.
CREATE TABLE run_metrics (
  run_id     INTEGER NOT NULL,
  metric_id  INTEGER NOT NULL,
  PRIMARY KEY (run_id, metric_id)
) WITHOUT ROWID;
