/**
 * What a card needs beyond the alert's numbers, captured from the store when the alert changes (the engine
 * writing its outbox row; a button acking or muting it), so that delivery renders what it is given.
 */
import { lttb } from '../lib/lttb.ts';
import { formatValue } from '../lib/numbers.ts';
import * as z from '../lib/zod.ts';
import type { AlertRow } from '../store/alerts.ts';
import { silenceMatches, type SilenceRow } from '../store/silences.ts';
import type { LiveStore } from '../store/live.ts';
import type { AlertSnapshot, ChartData } from './notification.ts';
import { alternatives, compare, type Condition, type Op, type Rule } from './rules.ts';

/** points a card's chart draws: up to this many, ending a little after the alert's step */
const CHART_POINTS = 200;
const CHART_AFTER = 50;

/** The alert's state as its card shows it. */
export function snapshotOf(a: AlertRow, muted: boolean): AlertSnapshot {
  const resolved =
    a.state === 'resolved'
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

/** The metric's points around `step`, the rule's line, and what shows why it fired (`guides`); null for alerts about
 * logs or activity. */
export function chartOf(store: LiveStore, a: AlertRow, step: number, rules: readonly Rule[]): ChartData | null {
  if (a.metric === 'activity' || a.metric.startsWith('log:')) return null;
  const rule = rules.find((r) => r.id === a.rule);
  const details = JSON.parse(a.details) as Record<string, unknown>;
  const around = (metric: string, n = CHART_POINTS): Point[] =>
    store.points.upTo(a.run_id, metric, step + CHART_AFTER, n).map((p) => ({ step: p.step, value: p.value }));
  if (rule?.kind === 'divergence') return divergenceChart(a, details, around);
  // a decline is measured from the best level of a horizon longer than the chart: the chart reaches back to it
  const reach =
    rule?.kind === 'trend' && details.best ? CHART_POINTS + rule.declineHorizon + 2 * rule.declineWindow : CHART_POINTS;
  const points = around(a.metric, reach);
  if (points.length < 2) return null;
  const threshold = thresholdOf(rules, a.rule, a.metric);
  const guides = rule ? guidesOf(rule, a, details, points, around) : null;
  // a decline's chart reaching back to its best level (up to 560 records) is drawn from as many points as any other,
  // its shape kept (largest-triangle-three-buckets; the windows carry their own steps and means): a storm of ten
  // thousand alerts carries no more than it did
  const drawn = points.length > CHART_POINTS ? thinned(points, CHART_POINTS) : points;
  return { points: drawn, threshold, ...(guides && { guides }) };
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

const point = z.object({ step: z.number(), value: z.number() });
/** a series' record: JSON has no NaN, a non-finite value was written as null and reads as NaN */
const record = z.object({
  step: z.number(),
  value: z.pipe(
    z.nullable(z.number()),
    z.transform((v: number | null) => v ?? Number.NaN),
  ),
});
const line = z.object({
  value: z.number(),
  label: z.string(),
  /** the rule's own limit (what the value crossed), drawn bold; else a level it is measured from */
  limit: z.boolean(),
});
const panel = {
  lines: z.array(line),
  /** the records at which the rule's condition held (the firing one always among them) */
  breaches: z.array(point),
  /** a horizontal band: the range the rule calls normal (an anomaly's median ± z robust σ) */
  bands: z.array(z.object({ lo: z.number(), hi: z.number(), label: z.string() })),
  /** records compared, shaded over their steps, with their mean (a trend's two windows, a decline's best level) */
  windows: z.array(z.object({ from: z.number(), to: z.number(), mean: z.number(), label: z.string() })),
};

/** What an alert's chart draws besides its series: the evidence the rule fired on, from the alert's details. */
export const ChartGuidesSchema = z.object({
  ...panel,
  /** the series' metric when it is not the alert's own (a divergence's alert names its patterns) */
  metric: z.optional(z.string()),
  /** a second metric of the rule (no_learning's grad_norm beside its loss), drawn in a panel of its own */
  second: z.optional(z.object({ metric: z.string(), points: z.array(record), ...panel })),
});
export type ChartGuides = z.infer<typeof ChartGuidesSchema>;
type Point = { step: number; value: number };
type Line = ChartGuides['lines'][number];
type Around = (metric: string, n?: number) => Point[];

const OP_WORDS: Record<Op, string> = { '>': '>', '>=': '≥', '<': '<', '<=': '≤', '==': '=', '!=': '≠' };
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function guidesOf(
  rule: Rule,
  a: AlertRow,
  details: Record<string, unknown>,
  points: Point[],
  around: Around,
): ChartGuides | null {
  const fired = a.fired_step ?? a.started_step;
  const guides: ChartGuides = { lines: [], breaches: [], bands: [], windows: [] };
  const firing = points.find((p) => p.step === fired && Number.isFinite(p.value));
  switch (rule.kind) {
    case 'threshold': {
      const conds = alternatives(rule).find((cs) => cs[0]?.metric === a.metric) ?? [];
      const own = conds.filter((c) => c.metric === a.metric);
      guides.lines = own.map(limitOf);
      // an escalating rule's second line, and (once it rose) the records past that line as its breaches
      const esc = rule.escalate;
      let breachedBy = own;
      if (esc && own[0]) {
        guides.lines.push({
          value: esc.value,
          label: `${esc.severity} ${own[0].op} ${formatValue(esc.value)}`,
          limit: true,
        });
        if (a.severity === esc.severity) breachedBy = [{ ...own[0], value: esc.value }];
      }
      guides.breaches = points.filter(
        (p) => Number.isFinite(p.value) && breachedBy.every((c) => compare(p.value, c.op, c.value)),
      );
      const other = conds.find((c) => c.metric !== a.metric);
      if (other) {
        const theirs = conds.filter((c) => c.metric === other.metric);
        const pts = around(other.metric);
        const breaches = pts.filter(
          (p) => Number.isFinite(p.value) && theirs.every((c) => compare(p.value, c.op, c.value)),
        );
        if (pts.length > 0)
          guides.second = {
            metric: other.metric,
            points: pts,
            lines: theirs.map(limitOf),
            breaches,
            bands: [],
            windows: [],
          };
      }
      return guides;
    }
    case 'relative': {
      const limit = num(details.line);
      const base = num(details.baseline);
      if (limit === null) return null;
      const byFactor = base !== null && Math.abs(limit - rule.factor * base) <= 1e-9 * Math.abs(limit);
      guides.lines.push({
        value: limit,
        label: `limit ${OP_WORDS[rule.op]} ${byFactor ? `${formatValue(rule.factor)}× baseline = ${formatValue(limit)}` : formatValue(limit)}`,
        limit: true,
      });
      if (base !== null) guides.lines.push({ value: base, label: `baseline ${formatValue(base)}`, limit: false });
      // the band it must come back through to resolve: between the limit and recover × baseline
      if (rule.recover !== undefined && base !== null && rule.recover !== rule.factor) {
        const back = rule.recover * base;
        guides.bands.push({
          lo: Math.min(back, limit),
          hi: Math.max(back, limit),
          label: `resolves past ${formatValue(back)}`,
        });
      }
      guides.breaches = heldFrom(a, points, (v) => compare(v, rule.op, limit));
      break;
    }
    case 'anomaly': {
      const med = num(details.median);
      const scale = num(details.scale);
      if (med === null || scale === null) return null;
      const lo = med - rule.z * scale;
      const hi = med + rule.z * scale;
      guides.bands.push({ lo, hi, label: `median ± ${formatValue(rule.z)} robust σ` });
      guides.lines.push({ value: med, label: `median ${formatValue(med)}`, limit: false });
      if (rule.direction !== 'down') guides.lines.push({ value: hi, label: `limit ${formatValue(hi)}`, limit: true });
      if (rule.direction !== 'up') guides.lines.push({ value: lo, label: `limit ${formatValue(lo)}`, limit: true });
      const out = (v: number): boolean =>
        rule.direction === 'up' ? v > hi : rule.direction === 'down' ? v < lo : v > hi || v < lo;
      guides.breaches = heldFrom(a, points, out);
      break;
    }
    case 'trend': {
      const at = points.findIndex((p) => p.step === fired);
      if (at < 0) return null;
      const w = rule.window;
      const from = num(details.from);
      const to = num(details.to);
      const best = details.best as { mean?: unknown; step?: unknown } | undefined;
      const bestMean = num(best?.mean);
      const bestEnd = points.findIndex((p) => p.step === best?.step);
      if (bestMean !== null && bestEnd >= 0) {
        // a decline: its best level (2 × declineWindow records) and the current declineWindow records
        const dw = rule.declineWindow;
        guides.windows.push(windowOf(points, bestEnd, 2 * dw, bestMean, 'best'));
        const now = meanOf(points, at, dw);
        if (now !== null) guides.windows.push(windowOf(points, at, dw, now, 'now'));
      } else if (from !== null && to !== null && at + 1 >= 2 * w) {
        guides.windows.push(windowOf(points, at - w, w, from, 'before'), windowOf(points, at, w, to, 'after'));
      }
      if (rule.direction === 'flat' && rule.below !== undefined) {
        guides.lines.push({ value: rule.below, label: `plateau below ${formatValue(rule.below)}`, limit: true });
      }
      break;
    }
    case 'milestone': {
      const target = num(details.target);
      const m = num(details.mean);
      if (target === null) return null;
      const epoch = num(details.epoch) ?? rule.epoch;
      guides.lines.push({
        value: target,
        label: `epoch ${formatValue(epoch)}: ${OP_WORDS[rule.op]} ${formatValue(target)}`,
        limit: true,
      });
      const at = points.findIndex((p) => p.step === fired);
      const n = num(details.window) ?? rule.window;
      if (m !== null && at >= 0) guides.windows.push(windowOf(points, at, n, m, `mean of the last ${n}`));
      break;
    }
    case 'non_finite': {
      const last = num(details.lastFinite);
      if (last === null) return null;
      guides.lines.push({
        value: last,
        label: `last finite ${formatValue(last)}, then ${String(details.value)}`,
        limit: false,
      });
      // where it went non-finite: drawn at the last finite value (the value itself has no place on the axis)
      guides.breaches = [{ step: fired, value: last }];
      return guides;
    }
    case 'saturation': {
      const max = num(details.max);
      if (max === null) return null;
      guides.lines.push({ value: max, label: `its highest ${formatValue(max)}`, limit: true });
      guides.breaches = heldFrom(a, points, (v) => v >= max - 1e-9);
      const std = around(`${a.metric}/std`);
      if (std.length > 0) {
        const flat = { value: 0, label: 'no spread: 0', limit: true };
        guides.second = {
          metric: `${a.metric}/std`,
          points: std,
          lines: [flat],
          breaches: heldFrom(a, std, (v) => v <= 1e-9),
          bands: [],
          windows: [],
        };
      }
      break;
    }
    default:
      return null;
  }
  // the firing record is marked whatever the rule's own test (a smoothed value, a window mean) made of it
  if (firing && !guides.breaches.some((p) => p.step === fired)) guides.breaches.push(firing);
  return guides;
}

/** The threshold condition as its line. */
const limitOf = (c: Condition): Line => ({
  value: c.value,
  label: `limit ${OP_WORDS[c.op]} ${formatValue(c.value)}`,
  limit: true,
});

/** The records from the alert's start to its firing at which `holds`: a rule judged against a level of that moment
 * (a rolling baseline, an anomaly's window) says nothing of the records long before. */
function heldFrom(a: AlertRow, points: readonly Point[], holds: (v: number) => boolean): Point[] {
  const fired = a.fired_step ?? a.started_step;
  return points.filter(
    (p) => p.step >= a.started_step && p.step <= fired && Number.isFinite(p.value) && holds(p.value),
  );
}

/** The `n` records ending at index `end`, as a window with its mean. */
/** At most `n` of `points`, their shape kept (LTTB); a point that is not finite (a NaN) is kept where it was. */
function thinned(points: readonly Point[], n: number): Point[] {
  const kept = new Set(
    lttb(
      points.map((p) => ({ x: p.step, y: p.value, p })),
      n,
    ).map((q) => q.p),
  );
  return points.filter((p) => kept.has(p) || !Number.isFinite(p.value));
}

function windowOf(
  points: readonly Point[],
  end: number,
  n: number,
  mean: number,
  label: string,
): ChartGuides['windows'][number] {
  const first = points[Math.max(0, end - n + 1)]!;
  return { from: first.step, to: points[end]!.step, mean, label: `${label} ${formatValue(mean)}` };
}

function meanOf(points: readonly Point[], end: number, n: number): number | null {
  let sum = 0;
  let k = 0;
  for (let i = Math.max(0, end - n + 1); i <= end; i++) {
    const v = points[i]!.value;
    if (Number.isFinite(v)) {
      sum += v;
      k++;
    }
  }
  return k > 0 ? sum / k : null;
}

/** A divergence's chart: the rising metric, the falling one beneath, each with its two windows' means. */
function divergenceChart(a: AlertRow, details: Record<string, unknown>, around: Around): ChartData | null {
  type Move = { metric?: unknown; before?: unknown; after?: unknown; window?: unknown };
  const rising = details.rising as Move | undefined;
  const falling = details.falling as Move | undefined;
  if (typeof rising?.metric !== 'string' || typeof falling?.metric !== 'string') return null;
  const fired = a.fired_step ?? a.started_step;
  const panelOf = (m: Move): { points: Point[]; windows: ChartGuides['windows'] } => {
    const points = around(m.metric as string);
    const at = points.findIndex((p) => p.step >= fired);
    const w = num(m.window);
    const before = num(m.before);
    const after = num(m.after);
    const windows =
      at >= 0 && w !== null && before !== null && after !== null && at + 1 >= 2 * w
        ? [windowOf(points, at - w, w, before, 'before'), windowOf(points, at, w, after, 'after')]
        : [];
    return { points, windows };
  };
  const up = panelOf(rising);
  const down = panelOf(falling);
  if (up.points.length < 2) return null;
  return {
    points: up.points,
    threshold: null,
    guides: {
      metric: rising.metric,
      lines: [],
      breaches: [],
      bands: [],
      windows: up.windows,
      ...(down.points.length > 0 && {
        second: {
          metric: falling.metric,
          points: down.points,
          lines: [],
          breaches: [],
          bands: [],
          windows: down.windows,
        },
      }),
    },
  };
}
