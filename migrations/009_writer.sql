-- The process holding the database's writer lock (an OS lock on `<db>.lock`, see src/store/sqlite/writerLock.ts):
-- named in the refusal a second `start` or `backfill` on the same file gets.
CREATE TABLE writer (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  pid        INTEGER NOT NULL,
  host       TEXT NOT NULL,
  command    TEXT NOT NULL,
  started_at INTEGER NOT NULL
);
