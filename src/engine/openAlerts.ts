import type { AlertChange, AlertRow } from '../store/alerts.ts';
import type { LiveStore } from '../store/live.ts';

const keyOf = (rule: string, metric: string): string => `${rule}\u0000${metric}`;

/**
 * One run's open (pending or firing) alerts for one evaluation: asked of the store once, when a rule first looks
 * (each rule's Lifecycle used to look its alert up with a query of its own), and kept exact for the rest of the
 * evaluation because every change the rules make goes through here. Nothing here outlives the evaluation; what the
 * store holds between evaluations is kept exact there (`Alerts.openOf`).
 */
export class OpenAlerts {
  private rows: Map<string, AlertRow> | undefined;
  constructor(
    private readonly alerts: LiveStore['alerts'],
    readonly runId: number,
  ) {}

  /** The open alert of a key, if any. */
  get(rule: string, metric: string): AlertRow | undefined {
    return this.held().get(keyOf(rule, metric));
  }

  /** The run's firing alerts, newest first (as `Alerts.list({ runId })`). */
  firing(): AlertRow[] {
    return [...this.held().values()].filter((a) => a.state === 'firing').sort((a, b) => b.id - a.id);
  }

  create(rule: string, metric: string, state: 'pending' | 'firing', c: AlertChange): AlertRow {
    const row = this.alerts.create(this.runId, rule, metric, state, c);
    this.held().set(keyOf(rule, metric), row);
    return row;
  }

  /** Fires a pending alert; returns its row as it is now. */
  fire(a: AlertRow, c: AlertChange): AlertRow {
    this.alerts.fire(a.id, c);
    const row = this.alerts.byId(a.id) as AlertRow;
    this.held().set(keyOf(a.rule, a.metric), row);
    return row;
  }

  resolve(a: AlertRow, c: AlertChange): void {
    this.alerts.resolve(a.id, c);
    this.held().delete(keyOf(a.rule, a.metric));
  }

  drop(a: AlertRow): void {
    this.alerts.drop(a.id);
    this.held().delete(keyOf(a.rule, a.metric));
  }

  private held(): Map<string, AlertRow> {
    return (this.rows ??= new Map(this.alerts.openOf(this.runId).map((a) => [keyOf(a.rule, a.metric), a])));
  }
}
