-- An outbox row's urgency, so that the deliverer hands out the most urgent runs' rows first (critical 2, warning 1,
-- anything else 0): the most severe of its items, read from the payload's JSON text without parsing it. An item is
-- written `..."severity":"critical","rule":"...` (src/engine/engine.ts, and the zod shape of src/notify/payload.ts
-- for card updates); a finished run's summary lists its rules as `"rule":..,"severity":..,"incidents"`, which this
-- does not count. Untrusted text (a log line, a run name, a generation) cannot forge the match: inside a JSON string
-- every quote is escaped (`\"`), so `"severity":"` only ever appears as a key and its value.
-- Computed on read (VIRTUAL); the index below keeps it, for the claim's look at each run's open rows.
ALTER TABLE outbox ADD COLUMN urgency INTEGER GENERATED ALWAYS AS (
  CASE
    WHEN instr(payload, '"severity":"critical","rule":') > 0 THEN 2
    WHEN instr(payload, '"severity":"warning","rule":') > 0 THEN 1
    ELSE 0
  END
) VIRTUAL;
CREATE INDEX outbox_runs ON outbox (target, run_id, urgency) WHERE done_at IS NULL AND dead_at IS NULL;
