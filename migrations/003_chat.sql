-- Chat messages posted for alerts, so that an ack, a mute or a resolution edits them in place.

CREATE TABLE chat_messages (
  id          INTEGER PRIMARY KEY,
  target      TEXT NOT NULL,              -- 'discord:<channel>' or 'slack:<channel>'
  ref         TEXT NOT NULL,              -- the platform's message id (Discord) or ts (Slack)
  run_id      INTEGER NOT NULL,
  alert_ids   TEXT NOT NULL,              -- JSON array: the alerts this message shows
  payload     TEXT NOT NULL,              -- JSON Notification it was posted for: edits re-render from it
  delivery    TEXT NOT NULL,              -- outbox row and part it was posted for: a retry never posts it twice
  posted_at   INTEGER NOT NULL,
  UNIQUE (target, ref),
  UNIQUE (target, delivery)
);

CREATE TABLE alert_messages (
  alert_id    INTEGER NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
  message_id  INTEGER NOT NULL REFERENCES chat_messages(id) ON DELETE CASCADE,
  PRIMARY KEY (alert_id, message_id)
) WITHOUT ROWID;

-- Delivery: when a target may next be tried after a failure (backoff, or the platform's Retry-After).
ALTER TABLE outbox ADD COLUMN next_attempt_at INTEGER;
