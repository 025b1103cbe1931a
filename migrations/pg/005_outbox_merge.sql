-- As SQLite's 020_outbox_merge.sql: the alert ids, as a JSON array's text, of a waiting row that may take its run's
-- new items (src/store/outbox.ts); NULL once a deliverer claimed it, and for rows that take nothing. Text, as in
-- SQLite, so that `rlwatch migrate` copies it as it is.
ALTER TABLE outbox ADD COLUMN merge_alerts text;
