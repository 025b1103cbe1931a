-- A run's rule cursors in one row: the engine changes about 13 of a run's ~18 cursors on every evaluation (streaks
-- and last values move with each record), and one upsert per evaluation costs less than one per cursor. Written
-- in the evaluation's transaction, with the points and alerts it read and changed.
-- cursors: JSON {"<rule>": {"<metric>": {"step": <step>, "state": {...}}}}
CREATE TABLE run_cursors (
  run_id  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  cursors TEXT NOT NULL
);
INSERT INTO run_cursors (run_id, cursors)
SELECT run_id, json_group_object(rule, json(metrics)) FROM (
  SELECT run_id, rule, json_group_object(metric, json_object('step', step, 'state', json(state))) AS metrics
  FROM rule_cursors GROUP BY run_id, rule
) GROUP BY run_id;
DROP TABLE rule_cursors;
