-- Rows that may still take a run's new items (src/store/outbox.ts, `Outbox.add`): under a backlog, a run's new
-- notification joins its newest waiting row instead of queueing behind it. `merge_alerts` is the JSON array of the
-- row's alert ids, set when a plain `{ run, items }` notification is queued, cleared when a deliverer claims the row
-- (once handed out, it may be partly posted under its delivery key). NULL: the row takes nothing (a report, a card
-- update, a row written before this migration).
ALTER TABLE outbox ADD COLUMN merge_alerts TEXT;
