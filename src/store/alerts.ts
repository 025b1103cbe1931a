/**
 * The alerts table family on SQLite: incidents, their transitions and acks, and the rule cursors the engine keeps
 * per run; also the alert row shapes both stores share.
 */
import type { Database, Statement } from 'better-sqlite3';
import { HeldCursors } from './heldCursors.ts';
import { HeldOpenAlerts } from './heldOpenAlerts.ts';
import { prepared } from './sqlite/prepared.ts';

export type AlertState = 'pending' | 'firing' | 'resolved';

export interface AlertRow {
  id: number;
  run_id: number;
  rule: string;
  metric: string;
  severity: string;
  state: AlertState;
  summary: string;
  details: string;
  started_step: number;
  started_at: number;
  fired_step: number | null;
  fired_at: number | null;
  resolved_step: number | null;
  resolved_at: number | null;
  /** who acked, as their platform knows them (`<@U0001>`, `@ana`, `$USER`): kept for audit */
  acked_by: string | null;
  /** who acked, as readers know them (untrusted text): what cards and `/alerts` show */
  acked_by_name: string | null;
  acked_at: number | null;
  ack_comment: string | null;
  notified_state: string | null;
  notified_at: number | null;
}

/** The row `INSERT INTO alerts` makes of a new alert `id` (both stores' create, and a PostgreSQL watcher that sends
 * the insert without waiting for the row: postgres/pgLiveStore.ts). */
export function newAlertRow(
  id: number,
  runId: number,
  rule: string,
  metric: string,
  state: 'pending' | 'firing',
  c: AlertChange,
): AlertRow {
  const firing = state === 'firing';
  return {
    id,
    run_id: runId,
    rule,
    metric,
    severity: c.severity,
    state,
    summary: c.summary,
    details: JSON.stringify(c.details),
    started_step: c.step,
    started_at: c.at,
    fired_step: firing ? c.step : null,
    fired_at: firing ? c.at : null,
    resolved_step: null,
    resolved_at: null,
    acked_by: null,
    acked_by_name: null,
    acked_at: null,
    ack_comment: null,
    notified_state: null,
    notified_at: null,
  };
}

/** A person who acts on alerts: `id` as their platform knows them (kept for audit), `name` as readers know
 * them (shown; untrusted text). */
export interface Who {
  id: string;
  name: string;
}

export interface AlertChange {
  step: number;
  at: number;
  severity: string;
  summary: string;
  details: Record<string, unknown>;
}

/** What a change records of itself: its event's details, and a resolution's `resolved` in the alert's details. Both
 * stores write it, and PostgreSQL's watcher holds it as written (postgres/heldAnnounceable.ts). */
export const changeDetails = (c: AlertChange): Record<string, unknown> => ({ summary: c.summary, ...c.details });

/** A rule's incidents that fired in a run: the worst severity, how many, and how many still fire. */
export interface RuleIncidents {
  rule: string;
  severity: string;
  incidents: number;
  firing: number;
}

/** Alert incidents, their transitions, and the rule cursors the engine keeps per run. */
export class Alerts {
  /** The rule cursors, held (heldCursors.ts): this process is their one writer (the writer lock). */
  private readonly cursors: HeldCursors;
  /** The open alerts, held (heldOpenAlerts.ts): dropped too when another connection has committed (`PRAGMA
   * data_version`, read on each `openOf`: an ack or mute run beside `start`). */
  private readonly opened = new HeldOpenAlerts();
  /** Runs with no resolved alert to announce (`announceable`) as last read, until one of theirs is resolved or
   * marked notified, or as `opened` is dropped: the engine asks after every batch, and the answer is nearly always
   * none. */
  private readonly nothingResolved = new Set<number>();
  private readonly dataVersion: Statement;
  private version: unknown;

  constructor(private readonly db: Database) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.cursors = new HeldCursors(
      (runId) =>
        (prepared(db, 'SELECT cursors FROM run_cursors WHERE run_id = ?').pluck().get(runId) as string | undefined) ??
        null,
      (runId, json) =>
        prepared(
          db,
          `INSERT INTO run_cursors (run_id, cursors) VALUES (?, ?)
          ON CONFLICT (run_id) DO UPDATE SET cursors = excluded.cursors`,
        ).run(runId, json),
    );
  }

  open(runId: number, rule: string, metric: string): AlertRow | undefined {
    return prepared(
      this.db,
      `SELECT * FROM alerts WHERE run_id = ? AND rule = ? AND metric = ? AND state != 'resolved'`,
    ).get(runId, rule, metric) as AlertRow | undefined;
  }

  byId(id: number): AlertRow | undefined {
    return prepared(this.db, 'SELECT * FROM alerts WHERE id = ?').get(id) as AlertRow | undefined;
  }

  create(runId: number, rule: string, metric: string, state: 'pending' | 'firing', c: AlertChange): AlertRow {
    const info = prepared(
      this.db,
      `INSERT INTO alerts (run_id, rule, metric, severity, state, summary, details, started_step, started_at,
           fired_step, fired_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      runId,
      rule,
      metric,
      c.severity,
      state,
      c.summary,
      JSON.stringify(c.details),
      c.step,
      c.at,
      state === 'firing' ? c.step : null,
      state === 'firing' ? c.at : null,
    );
    const id = Number(info.lastInsertRowid);
    this.event(id, state, c);
    const row = newAlertRow(id, runId, rule, metric, state, c);
    this.opened.created(row);
    return row;
  }

  fire(id: number, c: AlertChange): void {
    prepared(
      this.db,
      `UPDATE alerts SET state = 'firing', fired_step = ?, fired_at = ?, severity = ?, summary = ?, details = ? WHERE id = ?`,
    ).run(c.step, c.at, c.severity, c.summary, JSON.stringify(c.details), id);
    this.event(id, 'firing', c);
    this.opened.fired(id, c);
  }

  /**
   * A firing alert's severity rose (a warning become critical): the same incident, one row, with its new severity,
   * summary and details, `fired_at` the time it last fired (`fired_step`, `started_*` and acks kept), and its
   * announcement cleared so that the next one tells it anew. An alert not firing is left as it is.
   */
  escalate(id: number, c: AlertChange): void {
    const info = prepared(
      this.db,
      `UPDATE alerts SET severity = ?, summary = ?, details = ?, fired_at = ?, notified_state = NULL,
           notified_at = NULL
         WHERE id = ? AND state = 'firing'`,
    ).run(c.severity, c.summary, JSON.stringify(c.details), c.at, id);
    if (info.changes === 0) return;
    this.event(id, 'firing', c);
    this.opened.escalated(id, c);
  }

  resolve(id: number, c: AlertChange): void {
    prepared(
      this.db,
      `UPDATE alerts SET state = 'resolved', resolved_step = ?, resolved_at = ?, details = json_set(details, '$.resolved', json(?)) WHERE id = ?`,
    ).run(c.step, c.at, JSON.stringify(changeDetails(c)), id);
    this.event(id, 'resolved', c);
    this.opened.closed(id);
    this.resolvedMayChange(id);
  }

  /** A pending alert whose condition cleared before it fired was never an incident. */
  drop(id: number): void {
    prepared(this.db, 'DELETE FROM alerts WHERE id = ?').run(id);
    this.opened.closed(id);
  }

  ack(id: number, by: Who, comment: string | null, at: number): void {
    prepared(
      this.db,
      'UPDATE alerts SET acked_by = ?, acked_by_name = ?, acked_at = ?, ack_comment = ? WHERE id = ?',
    ).run(by.id, by.name, at, comment, id);
    this.opened.changed(id);
  }

  markNotified(id: number, state: 'firing' | 'resolved', at: number): void {
    prepared(this.db, 'UPDATE alerts SET notified_state = ?, notified_at = ? WHERE id = ?').run(state, at, id);
    this.opened.notified(id, state, at);
    this.resolvedMayChange(id);
  }

  /** Alerts that may need announcing, in id order: firing ones (held: `openOf`), resolved ones whose firing was
   * announced, and ones that fired at or after `firedSince` and resolved before they could be announced. */
  announceable(runId: number, firedSince = Infinity): AlertRow[] {
    const firing = this.openOf(runId).filter((a) => a.state === 'firing');
    // none stays none until a resolve or a markNotified of the run's: a row this query would find for a later
    // `firedSince` (the engine passes its clock, or none) fired after it and was resolved since, which cleared the
    // mark; `openOf` has just looked for other writers
    if (this.nothingResolved.has(runId)) return firing;
    const resolved = prepared(
      this.db,
      `SELECT * FROM alerts WHERE run_id = :runId AND state = 'resolved'
           AND (notified_state = 'firing' OR (notified_state IS NULL AND fired_at >= :since))
         ORDER BY id`,
    ).all({ runId, since: Number.isFinite(firedSince) ? firedSince : null }) as AlertRow[];
    if (resolved.length === 0) this.nothingResolved.add(runId);
    return resolved.length === 0 ? firing : [...firing, ...resolved].sort((a, b) => a.id - b.id);
  }

  /** The alert was resolved or marked notified: its run may have a resolved alert to announce. */
  private resolvedMayChange(id: number): void {
    const runId = prepared(this.db, 'SELECT run_id FROM alerts WHERE id = ?').pluck().get(id) as number | undefined;
    if (runId !== undefined) this.nothingResolved.delete(runId);
  }

  /** The run's incidents that fired, by rule (sorted). */
  firedByRule(runId: number): RuleIncidents[] {
    return prepared(
      this.db,
      `SELECT rule, CASE max(CASE severity WHEN 'critical' THEN 3 WHEN 'warning' THEN 2 ELSE 1 END)
             WHEN 3 THEN 'critical' WHEN 2 THEN 'warning' ELSE 'info' END AS severity,
           count(*) AS incidents, sum(state = 'firing') AS firing
         FROM alerts WHERE run_id = ? AND fired_at IS NOT NULL GROUP BY rule ORDER BY rule`,
    ).all(runId) as RuleIncidents[];
  }

  list(opts: { runId?: number; all?: boolean }): AlertRow[] {
    return prepared(
      this.db,
      `SELECT * FROM alerts WHERE (:runId IS NULL OR run_id = :runId) AND (:all OR state = 'firing')
         ORDER BY id DESC`,
    ).all({ runId: opts.runId ?? null, all: opts.all ? 1 : 0 }) as AlertRow[];
  }

  events(id: number): Array<{ at: number; step: number | null; state: string; details: string }> {
    return prepared(this.db, 'SELECT at, step, state, details FROM alert_events WHERE alert_id = ? ORDER BY id').all(
      id,
    ) as Array<{
      at: number;
      step: number | null;
      state: string;
      details: string;
    }>;
  }

  cursor(runId: number, rule: string, metric: string): { step: number; state: Record<string, unknown> } | undefined {
    return this.cursors.cursor(runId, rule, metric);
  }

  /** Held until `flushCursors`, which the engine calls at the end of an evaluation, in its transaction. */
  saveCursor(runId: number, rule: string, metric: string, step: number, state: Record<string, unknown>): void {
    this.cursors.save(runId, rule, metric, step, state);
  }

  /** Writes the cursors saved since the last flush: one row per run that changed. */
  flushCursors(): void {
    this.cursors.flush();
  }

  /**
   * Drops the cursors (saved and not yet written ones too) and open alerts held in memory for the run (or for every
   * run): call when a transaction that may have written them rolled back, or when the run is removed. The next
   * read goes to the database.
   */
  forget(runId?: number): void {
    this.cursors.forget(runId);
    this.opened.forget(runId);
    if (runId === undefined) this.nothingResolved.clear();
    else this.nothingResolved.delete(runId);
  }

  /** The run's open (pending or firing) alerts, in id order. */
  openOf(runId: number): AlertRow[] {
    const version = this.dataVersion.get();
    if (version !== this.version) {
      // another connection committed: it may have acked one (or, `rlwatch` run beside, changed any alert)
      this.opened.forget();
      this.nothingResolved.clear();
      this.version = version;
    }
    const sql = `SELECT * FROM alerts WHERE run_id = ? AND state != 'resolved' ORDER BY id`;
    return this.opened.of(runId, () => prepared(this.db, sql).all(runId) as AlertRow[]);
  }

  /** Moves the run's cursors at or past `step` back to just before it, with their carried state cleared (written
   * by the next `flushCursors`, like a save). */
  rewindCursors(runId: number, step: number): void {
    this.cursors.rewind(runId, step);
  }

  private event(id: number, state: string, c: AlertChange): void {
    prepared(this.db, 'INSERT INTO alert_events (alert_id, at, step, state, details) VALUES (?, ?, ?, ?, ?)').run(
      id,
      c.at,
      c.step,
      state,
      JSON.stringify(changeDetails(c)),
    );
  }
}
