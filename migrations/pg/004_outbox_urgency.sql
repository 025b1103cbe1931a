-- An outbox row's urgency, so that the deliverer hands out the most urgent runs' rows first (critical 2, warning 1,
-- anything else 0): the most severe of its items, read from the payload's JSON text without parsing it (a payload
-- that is not JSON still inserts, and is set aside when delivered). An item is written
-- `..."severity":"critical","rule":"...` (src/engine/engine.ts, and the zod shape of src/notify/payload.ts for card
-- updates); a finished run's summary lists its rules as `"rule":..,"severity":..,"incidents"`, which this does not
-- count. Untrusted text (a log line, a run name, a generation) cannot forge the match: inside a JSON string every
-- quote is escaped (`\"`), so `"severity":"` only ever appears as a key and its value. Same as SQLite's 019, but
-- without its index: the claim reads a target's open rows through outbox_pending (a bitmap scan; ~2 ms for 250 open
-- rows of 100 runs), and an index with the urgency would only add a write to every row's delivery.
ALTER TABLE outbox ADD COLUMN urgency smallint GENERATED ALWAYS AS (
  CASE
    WHEN position('"severity":"critical","rule":' IN payload) > 0 THEN 2
    WHEN position('"severity":"warning","rule":' IN payload) > 0 THEN 1
    ELSE 0
  END
) STORED;
