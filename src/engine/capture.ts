/**
 * What a card needs beyond the alert's numbers, captured from the store when the alert changes (the engine
 * writing its outbox row; a button acking or muting it), so that delivery renders what it is given.
 */
import type { AlertRow } from '../store/alerts.ts';
import { silenceMatches, type SilenceRow } from '../store/silences.ts';
import type { LiveStore } from '../store/live.ts';
import type { AlertSnapshot, ChartData } from './notification.ts';
import { alternatives, type Rule } from './rules.ts';

/** points a card's chart draws: up to this many, ending a little after the alert's step */
const CHART_POINTS = 200;
const CHART_AFTER = 50;

/** The alert's state as its card shows it. */
export function snapshotOf(a: AlertRow, muted: boolean): AlertSnapshot {
  const resolved = a.state === 'resolved'
    ? { step: a.resolved_step ?? a.started_step, at: a.resolved_at ?? 0, summary: resolvedSummary(a) }
    : null;
  return {
    startsAt: a.fired_at ?? a.started_at,
    firedStep: a.fired_step,
    ack: a.acked_by ? { by: a.acked_by, name: a.acked_by_name, at: a.acked_at ?? 0, comment: a.ack_comment } : null,
    muted,
    resolved,
  };
}

/** Whether an active mute matches the alert. */
export const isMuted = (silences: readonly SilenceRow[], run: string, a: AlertRow): boolean =>
  silences.some((s) => silenceMatches(s, { run, rule: a.rule, severity: a.severity }));

const resolvedSummary = (a: AlertRow): string =>
  String((JSON.parse(a.details) as { resolved?: { summary?: string } }).resolved?.summary ?? '');

/** The metric's points around `step` and the rule's line; null for alerts about logs or activity. */
export function chartOf(store: LiveStore, a: AlertRow, step: number, rules: readonly Rule[]): ChartData | null {
  if (a.metric === 'activity' || a.metric.startsWith('log:')) return null;
  const points = store.points.upTo(a.run_id, a.metric, step + CHART_AFTER, CHART_POINTS);
  if (points.length < 2) return null;
  const threshold = thresholdOf(rules, a.rule, a.metric);
  return { points: points.map((p) => ({ step: p.step, value: p.value })), threshold };
}

/** The value a threshold rule compares `metric` with (its condition on that metric); null for other rules. */
export function thresholdOf(rules: readonly Rule[], ruleId: string, metric: string): number | null {
  const rule = rules.find((r) => r.id === ruleId);
  if (rule?.kind !== 'threshold') return null;
  for (const conds of alternatives(rule)) {
    const c = conds.find((x) => x.metric === metric);
    if (c) return c.value;
  }
  return null;
}
