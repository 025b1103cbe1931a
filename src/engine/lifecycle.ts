/** One alert key's lifecycle (pending, firing, resolved) as the rules' verdicts arrive, step by step. */
import type { AlertRow } from '../store/alerts.ts';
import { urgencyOf } from '../store/outbox.ts';
import type { OpenAlerts } from './openAlerts.ts';

/** Words and values for a transition; built only when a transition happens (most steps change nothing). */
export type Describe = () => { summary: string; details: Record<string, unknown> };

/** What a rule decided about one step of one alert key. */
export type Verdict =
  /** the condition holds; `firing` once it has held long enough */
  | { kind: 'bad'; firing: boolean; severity: string; describe: Describe }
  /** the condition no longer holds; `recovered` once the alert may resolve (hysteresis); `final` resolves
   * at once, without waiting for `quietFor` clear records (a trend that turned is over) */
  | { kind: 'ok'; recovered: boolean; final?: boolean; describe: Describe };

/**
 * Moves one alert key through pending → firing → resolved as verdicts arrive, step by step. Every
 * transition is written with its step and time; a pending alert that clears before firing is dropped.
 */
export class Lifecycle {
  private current: AlertRow | undefined;
  /** the current row's details, parsed once: trend rules look at them on every step while firing */
  private parsed: { row: AlertRow; details: Record<string, unknown> } | undefined;

  /** records in a row the firing condition has been clear (kept by the caller between evaluations) */
  quiet: number;

  /**
   * `quietFor`: a firing alert resolves only after that many clear records in a row, so a condition that
   * clears and returns within them continues the same incident instead of opening a new one.
   */
  constructor(
    private readonly alerts: OpenAlerts,
    private readonly key: { rule: string; metric: string },
    private readonly now: () => number,
    private readonly quietHold: { quietFor: number; quiet: number } = { quietFor: 1, quiet: 0 },
  ) {
    this.current = alerts.get(key.rule, key.metric);
    this.quiet = this.current?.state === 'firing' ? quietHold.quiet : 0;
  }

  get state(): AlertRow['state'] | null {
    return this.current?.state ?? null;
  }

  get details(): Record<string, unknown> {
    const cur = this.current;
    if (!cur) return {};
    if (this.parsed?.row !== cur)
      this.parsed = { row: cur, details: JSON.parse(cur.details) as Record<string, unknown> };
    return this.parsed.details;
  }

  /** Whether a verdict of this kind would change anything: lets the hot loop skip building one. */
  wouldChange(kind: Verdict['kind'], flag: boolean): boolean {
    const cur = this.current;
    if (kind === 'bad') return !cur || (cur.state === 'pending' && flag) || this.quiet > 0;
    return cur !== undefined && (cur.state === 'pending' || flag || this.quiet > 0);
  }

  /**
   * A condition that has held `n` records in a row: pending, then firing once `n` reaches `needed`. Writes only
   * when that changes the alert; `describe` is called then, before `hold` returns, or never.
   */
  hold(step: number, n: number, needed: number, severity: string, describe: Describe): void {
    const firing = n >= needed;
    if (this.wouldChange('bad', firing) || (firing && this.raises(severity)))
      this.apply(step, { kind: 'bad', firing, severity, describe });
  }

  /** Whether a firing verdict of this severity would escalate the firing alert (severities ranked as the outbox
   * ranks them: an incident's severity only rises while it fires). */
  private raises(severity: string): boolean {
    const cur = this.current;
    return cur?.state === 'firing' && urgencyOf(severity) > urgencyOf(cur.severity);
  }

  apply(step: number, v: Verdict): void {
    const at = this.now();
    const cur = this.current;
    if (v.kind === 'bad') {
      this.quiet = 0;
      const change = () => ({ step, at, severity: v.severity, ...v.describe() });
      if (!cur) {
        this.current = this.alerts.create(this.key.rule, this.key.metric, v.firing ? 'firing' : 'pending', change());
      } else if (cur.state === 'pending' && v.firing) {
        this.current = this.alerts.fire(cur, change());
      } else if (v.firing && this.raises(v.severity)) {
        // the same incident, announced anew at its new severity, saying from what and since when
        const c = change();
        const escalated = { from: cur.severity, step, firedStep: cur.fired_step };
        const summary = `${c.summary}; escalated from ${cur.severity}, firing since step ${cur.fired_step}`;
        this.current = this.alerts.escalate(cur, { ...c, summary, details: { ...c.details, escalated } });
      }
      return;
    }
    if (!cur) return;
    if (cur.state === 'pending') {
      this.alerts.drop(cur);
      this.current = undefined;
    } else if (!v.recovered) {
      this.quiet = 0;
    } else if (++this.quiet >= this.quietHold.quietFor || v.final === true) {
      this.quiet = 0;
      this.alerts.resolve(cur, { step, at, severity: cur.severity, ...v.describe() });
      this.current = undefined;
    }
  }
}
