import Database from 'better-sqlite3';

/**
 * Rows of a database file for comparing two routes to the same result: each query's rows, keyed by the query's
 * name. Queries name runs, metrics and alerts by name (not id): ids differ when rows were made in another order.
 */
export function rowsOf(path: string, queries: Record<string, string>): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(Object.entries(queries).map(([name, sql]) => [name, db.prepare(sql).all()]));
  } finally {
    db.close();
  }
}

/** The rule cursors as rows (run_id, rule, metric, step, state as JSON), from each run's `run_cursors` row: use as
 * a table, `FROM ${CURSOR_ROWS} c`. */
export const CURSOR_ROWS = `(SELECT c.run_id, r.key AS rule, m.key AS metric, json_extract(m.value, '$.step') AS step,
  json_extract(m.value, '$.state') AS state FROM run_cursors c, json_each(c.cursors) r, json_each(r.value) m)`;

/** What the rules write: alerts (with `alertColumns` besides their rule, metric, state, summary and steps), their
 * events and the rule cursors. */
export function ruleQueries(alertColumns: readonly string[] = []): Record<string, string> {
  const extra = alertColumns.map((c) => `, a.${c}`).join('');
  return {
    alerts: `SELECT r.name, a.rule, a.metric, a.severity, a.state, a.summary, a.details, a.started_step,
             a.fired_step, a.resolved_step${extra} FROM alerts a JOIN runs r ON r.id = a.run_id ORDER BY 1, 2, 3, 8`,
    alertEvents: `SELECT a.rule, a.metric, a.started_step, e.step, e.state, e.details FROM alert_events e
                  JOIN alerts a ON a.id = e.alert_id ORDER BY 1, 2, 3, e.id`,
    cursors: `SELECT r.name, c.rule, c.metric, c.step, c.state FROM ${CURSOR_ROWS} c JOIN runs r ON r.id = c.run_id
              ORDER BY 1, 2, 3`,
  };
}
