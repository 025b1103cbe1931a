/**
 * One run's open alerts for the length of one evaluation, read from the store once and kept exact as rules change
 * them.
 */
import type { AlertChange, AlertRow } from '../store/alerts.ts';
import type { LiveStore } from '../store/live.ts';

/**
 * One run's open (pending or firing) alerts for one evaluation: asked of the store once, when a rule first looks
 * (each rule's Lifecycle used to look its alert up with a query of its own), and kept exact for the rest of the
 * evaluation because every change the rules make goes through here. Nothing here outlives the evaluation; what the
 * store holds between evaluations is kept exact there (`Alerts.openOf`).
 */
export class OpenAlerts {
  /** by rule, then metric: no key string built per look-up (every rule's Lifecycle looks after every batch) */
  private rows: Map<string, Map<string, AlertRow>> | undefined;
  constructor(
    private readonly alerts: LiveStore['alerts'],
    readonly runId: number,
  ) {}

  /** The open alert of a key, if any. */
  get(rule: string, metric: string): AlertRow | undefined {
    return this.held().get(rule)?.get(metric);
  }

  /** The run's firing alerts, newest first (as `Alerts.list({ runId })`). */
  firing(): AlertRow[] {
    const out: AlertRow[] = [];
    for (const byMetric of this.held().values())
      for (const a of byMetric.values()) if (a.state === 'firing') out.push(a);
    return out.sort((a, b) => b.id - a.id);
  }

  create(rule: string, metric: string, state: 'pending' | 'firing', c: AlertChange): AlertRow {
    const row = this.alerts.create(this.runId, rule, metric, state, c);
    this.put(row);
    return row;
  }

  /** Fires a pending alert; returns its row as it is now. */
  fire(a: AlertRow, c: AlertChange): AlertRow {
    this.alerts.fire(a.id, c);
    const row = this.alerts.byId(a.id) as AlertRow;
    this.put(row);
    return row;
  }

  /** Raises a firing alert's severity; returns its row as it is now. */
  escalate(a: AlertRow, c: AlertChange): AlertRow {
    this.alerts.escalate(a.id, c);
    const row = this.alerts.byId(a.id) as AlertRow;
    this.put(row);
    return row;
  }

  resolve(a: AlertRow, c: AlertChange): void {
    this.alerts.resolve(a.id, c);
    this.held().get(a.rule)?.delete(a.metric);
  }

  drop(a: AlertRow): void {
    this.alerts.drop(a.id);
    this.held().get(a.rule)?.delete(a.metric);
  }

  private put(a: AlertRow): void {
    const held = this.held();
    let byMetric = held.get(a.rule);
    if (!byMetric) held.set(a.rule, (byMetric = new Map()));
    byMetric.set(a.metric, a);
  }

  private held(): Map<string, Map<string, AlertRow>> {
    if (!this.rows) {
      this.rows = new Map();
      for (const a of this.alerts.openOf(this.runId)) this.put(a);
    }
    return this.rows;
  }
}
