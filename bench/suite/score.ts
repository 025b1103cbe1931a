/**
 * Scores `rlwatch alerts --all --json` against the suite's labels. A notification is an incident that reaches the
 * channel: severity warning or critical (an info incident, and a milestone explained by a firing critical, which
 * rlwatch records as info, reach the terminal only), and not held back by an inhibiting rule all along.
 * The JSON does not say which incidents were held back: the preset's documented inhibitions (`inhibits`, ids or
 * globs) are applied from the incidents' own steps, as the engine applies them (docs/alerts.md, "One cause, one
 * page"): an incident that fired first, and was still firing, holds back a later one of a rule it names, for as
 * long as it fires. A symptom still firing when its cause resolves is announced then, in the message that says the
 * cause resolved (one evaluation announces both): it is listed apart, as riding on that resolution. An incident
 * whose severity rose while it fired (an early warning, then its page) is one incident, announced again at the step
 * it rose: listed apart too, as an escalation.
 */
import { globMatch } from '../../src/lib/duration.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import type { Label } from './runs.ts';

export interface Incident {
  id: number;
  run: string;
  rule: string;
  severity: string;
  state: string;
  step: number;
  resolvedStep: number | null;
  summary?: string;
  /** its severity rose while it fired: from what, at which step */
  escalated?: { from: string; step: number } | null;
  startedAt: string | null;
  resolvedAt: string | null;
}

export const SUDDEN_TARGET = 20;
export const GRADUAL_TARGET = 60;
export const MAX_NOTIFICATIONS_AFTER = 1;

const INHIBITS = new Map(GRPO_PRESET.map((r) => [r.id, r.inhibits]));
const inhibits = (a: string, b: string): boolean => a !== b && (INHIBITS.get(a) ?? []).some((p) => globMatch(p, b));

export interface Page {
  rule: string;
  step: number;
  severity: string;
  /** announced in the message of this rule's resolution (a symptom that outlived its cause) */
  with?: string;
}

export interface RunScore {
  run: string;
  kind: string;
  onset?: number;
  sudden?: boolean;
  /** the first notification of a right rule at or after the onset */
  detectedBy?: Page;
  delay?: number;
  target?: number;
  inTime: boolean;
  /** notifications before the onset (every notification of a healthy run) */
  falseAlarms: Page[];
  /** notifications at or after the onset in messages of their own, and those of them by a rule that does not name
   * the cause */
  after: Page[];
  wrongCause: Page[];
  /** symptoms at or after the onset announced in the message of their cause's resolution */
  riders: Page[];
  /** incidents at or after the onset announced again when their severity rose (at that step, at the new severity) */
  escalations: Page[];
  pass: boolean;
}

/** When an incident is notified: at its firing step; or, held back by incidents of the same run whose rules inhibit
 * its rule (one that fired before it, at the same step the inhibitor or of two that inhibit each other the older,
 * and resolved after it fired or not at all), at the last of their resolutions if it still fires then (`with`: the
 * rule resolving there); null if it is held back all along. */
function notifiedAt(i: Incident, all: readonly Incident[]): { step: number; with?: string } | null {
  const causes = all.filter(
    (j) =>
      j.run === i.run &&
      inhibits(j.rule, i.rule) &&
      (j.step < i.step || (j.step === i.step && (!inhibits(i.rule, j.rule) || j.id < i.id))) &&
      (j.resolvedStep === null || j.resolvedStep > i.step),
  );
  if (causes.length === 0) return { step: i.step };
  if (causes.some((j) => j.resolvedStep === null)) return null;
  const last = causes.reduce((a, b) => ((b.resolvedStep as number) > (a.resolvedStep as number) ? b : a));
  const released = last.resolvedStep as number;
  return i.resolvedStep !== null && i.resolvedStep <= released ? null : { step: released, with: last.rule };
}

export type Notified = Incident & { with?: string };

export function notifications(all: readonly Incident[]): Notified[] {
  return all.flatMap((i) => {
    if (i.severity !== 'warning' && i.severity !== 'critical') return [];
    const at = notifiedAt(i, all);
    return at === null ? [] : [{ ...i, ...at }];
  });
}

const page = (i: Notified): Page => ({
  rule: i.rule,
  step: i.step,
  severity: i.severity,
  ...(i.with ? { with: i.with } : {}),
});

export function scoreRun(run: string, label: Label, incidents: readonly Incident[]): RunScore {
  const mine = incidents.filter((i) => i.run === run);
  const sent = notifications(mine).sort((a, b) => a.step - b.step);
  if (label.onset === undefined) {
    const falseAlarms = sent.map(page);
    return {
      run,
      kind: label.kind,
      inTime: true,
      falseAlarms,
      after: [],
      wrongCause: [],
      riders: [],
      escalations: [],
      pass: falseAlarms.length === 0,
    };
  }
  const onset = label.onset;
  const target = label.sudden ? SUDDEN_TARGET : GRADUAL_TARGET;
  const right = new Set(label.rules);
  const before = sent.filter((i) => i.step < onset).map(page);
  const after = sent.filter((i) => i.step >= onset && !i.with).map(page);
  const riders = sent.filter((i) => i.step >= onset && i.with).map(page);
  const escalations = sent.flatMap((i) =>
    i.step >= onset && i.escalated ? [{ rule: i.rule, step: i.escalated.step, severity: i.severity }] : [],
  );
  const hit = after.find((p) => right.has(p.rule));
  // a gradual failure is due from the step it is significant (a 25% decline over 300 steps is no failure 10 steps in)
  const due = Math.max(onset, label.significant ?? onset);
  const delay = hit ? hit.step - due : undefined;
  const inTime = delay !== undefined && delay <= target;
  const wrongCause = after.filter((p) => !right.has(p.rule));
  return {
    run,
    kind: label.kind,
    onset,
    sudden: label.sudden,
    detectedBy: hit,
    delay,
    target,
    inTime,
    falseAlarms: before,
    after,
    wrongCause,
    riders,
    escalations,
    pass: inTime && before.length === 0 && after.length <= MAX_NOTIFICATIONS_AFTER,
  };
}

export interface SuiteTotals {
  failures: number;
  /** detected by a right rule within the target */
  caught: number;
  detected: number;
  healthy: number;
  healthyWithPages: number;
  /** notifications before onset on failure runs plus every notification of a healthy run */
  falseAlarms: number;
  wrongCause: number;
  /** symptoms announced in the message of their cause's resolution, after the onset */
  riders: number;
  /** incidents announced again when their severity rose, after the onset */
  escalations: number;
  pass: boolean;
}

export function totals(scores: readonly RunScore[]): SuiteTotals {
  const failures = scores.filter((s) => s.onset !== undefined);
  const healthy = scores.filter((s) => s.onset === undefined);
  return {
    failures: failures.length,
    caught: failures.filter((s) => s.inTime).length,
    detected: failures.filter((s) => s.detectedBy !== undefined).length,
    healthy: healthy.length,
    healthyWithPages: healthy.filter((s) => s.falseAlarms.length > 0).length,
    falseAlarms: scores.reduce((n, s) => n + s.falseAlarms.length, 0),
    wrongCause: failures.reduce((n, s) => n + s.wrongCause.length, 0),
    riders: failures.reduce((n, s) => n + s.riders.length, 0),
    escalations: failures.reduce((n, s) => n + s.escalations.length, 0),
    pass: scores.every((s) => s.pass),
  };
}
