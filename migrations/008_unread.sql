-- Files that look like logs (by name) but that no format has claimed, with why: `backfill`, `start` and
-- `rlwatch files` name them, so that a run is never believed watched while nothing of it is read. Keyed by
-- path, not by run: a directory whose only log is unrecognised has no run row yet.
CREATE TABLE unread_files (
  path      TEXT PRIMARY KEY,            -- absolute
  run       TEXT NOT NULL,               -- the run the file would belong to (runLocator)
  run_dir   TEXT NOT NULL,
  rel_path  TEXT NOT NULL,               -- inside the run directory, `/`-separated
  reason    TEXT NOT NULL,
  size      INTEGER NOT NULL,
  seen_at   INTEGER NOT NULL             -- ms since epoch
);
CREATE INDEX unread_files_run ON unread_files (run);
