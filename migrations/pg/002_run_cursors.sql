-- A run's rule cursors in one row, as in SQLite (018_run_cursors.sql): the engine changes most of a run's cursors
-- on every evaluation, and one row per run is one write.
-- cursors: {"<rule>": {"<metric>": {"step": <step>, "state": {...}}}}
CREATE TABLE run_cursors (
  run_id  bigint PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  cursors jsonb NOT NULL
);
INSERT INTO run_cursors (run_id, cursors)
SELECT run_id, jsonb_object_agg(rule, metrics) FROM (
  SELECT run_id, rule, jsonb_object_agg(metric, jsonb_build_object('step', step, 'state', state::jsonb)) AS metrics
  FROM rule_cursors GROUP BY run_id, rule
) AS by_rule GROUP BY run_id;
DROP TABLE rule_cursors;
