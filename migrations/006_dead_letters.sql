-- Dead letters: an outbox row whose target refused it for good (a missing channel, a missing permission, a
-- refused token) is set aside, with the reason, so that the rows after it still go out. `rlwatch outbox`
-- lists such rows; `rlwatch outbox retry ID` puts one back in line.
ALTER TABLE outbox ADD COLUMN dead_at INTEGER;
ALTER TABLE outbox ADD COLUMN dead_reason TEXT;

DROP INDEX outbox_pending;
CREATE INDEX outbox_pending ON outbox (target, id) WHERE done_at IS NULL AND dead_at IS NULL;
