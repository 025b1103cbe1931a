-- Alerts (one row per incident of a (run, rule, metric) key), their transitions, silences and the outbox.

CREATE TABLE alerts (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rule            TEXT NOT NULL,
  metric          TEXT NOT NULL,
  severity        TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  state           TEXT NOT NULL CHECK (state IN ('pending', 'firing', 'resolved')),
  summary         TEXT NOT NULL,          -- `frac_zero_std 1.00 > 0.80 for 5 steps`
  details         TEXT NOT NULL,          -- JSON: values at the last transition (trend from/to, ...)
  started_step    INTEGER NOT NULL,       -- first step the condition held (pending)
  started_at      INTEGER NOT NULL,
  fired_step      INTEGER,
  fired_at        INTEGER,
  resolved_step   INTEGER,
  resolved_at     INTEGER,
  acked_by        TEXT,
  acked_at        INTEGER,
  ack_comment     TEXT,
  notified_state  TEXT,                   -- the state last announced: 'firing' or 'resolved'
  notified_at     INTEGER
);
-- at most one open incident per key
CREATE UNIQUE INDEX alerts_open_key ON alerts (run_id, rule, metric) WHERE state != 'resolved';
CREATE INDEX alerts_by_run ON alerts (run_id, state);

CREATE TABLE alert_events (
  id        INTEGER PRIMARY KEY,
  alert_id  INTEGER NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
  at        INTEGER NOT NULL,
  step      INTEGER,
  state     TEXT NOT NULL,
  details   TEXT NOT NULL
);

-- Where each rule's evaluation of each run has got to, and the little state it carries between batches.
CREATE TABLE rule_cursors (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rule    TEXT NOT NULL,
  metric  TEXT NOT NULL,
  step    INTEGER NOT NULL,
  state   TEXT NOT NULL,                  -- JSON
  PRIMARY KEY (run_id, rule, metric)
) WITHOUT ROWID;

CREATE TABLE silences (
  id          INTEGER PRIMARY KEY,
  run         TEXT,                       -- matchers: NULL matches anything
  rule        TEXT,
  severity    TEXT,
  starts_at   INTEGER NOT NULL,
  ends_at     INTEGER NOT NULL,
  author      TEXT NOT NULL,
  reason      TEXT NOT NULL DEFAULT '',
  ended_at    INTEGER                     -- set by unmute
);

-- Notifications to deliver, written in the transaction of the state change that caused them.
CREATE TABLE outbox (
  id          INTEGER PRIMARY KEY,
  created_at  INTEGER NOT NULL,
  run_id      INTEGER NOT NULL,
  target      TEXT NOT NULL,              -- 'console', later a chat channel
  payload     TEXT NOT NULL,              -- JSON Notification
  done_at     INTEGER,
  attempts    INTEGER NOT NULL DEFAULT 0,
  last_error  TEXT
);
CREATE INDEX outbox_pending ON outbox (target, id) WHERE done_at IS NULL;
