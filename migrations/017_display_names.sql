-- Who acked an alert and who muted, as readers know them. The platform id (`<@U0001>`, `@ana`, `$USER`) is
-- kept for audit; the display name beside it is what cards, `/alerts` and `/mutes` show: a Slack user id
-- means nothing on Discord. Names are untrusted text, escaped wherever they are shown.
ALTER TABLE alerts ADD COLUMN acked_by_name TEXT;
ALTER TABLE silences ADD COLUMN author_name TEXT;
-- rows from before: their id is the only name there is
UPDATE alerts SET acked_by_name = acked_by WHERE acked_by IS NOT NULL;
UPDATE silences SET author_name = author;
