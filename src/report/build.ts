/**
 * The run report (issue 12, seed 001): every number a careful engineer reads off a run's logs, computed from
 * the store over a window of steps. Plain data: the Markdown, the chat summary and `--json` render it.
 */
import { knowledgeOf } from '../engine/presets/knowledge.ts';
import { compare, type MilestoneRule, type Rule } from '../engine/rules.ts';
import type { AlertRow } from '../store/alerts.ts';
import type { RunRow } from '../store/runs.ts';
import type { Store } from '../store/store.ts';
import { type ExpectedRange } from './ranges.ts';
import { direction, finite, mean, median } from './stats.ts';

export type Mark = 'ok' | 'warn' | 'bad' | 'none';
export type Level = 'healthy' | 'watch' | 'struggling' | 'stop';

export interface RangeRow {
  metric: string;
  /** finite values in the window */
  n: number;
  min: number | null;
  max: number | null;
  median: number | null;
  range: ExpectedRange;
  /** the early median a `baseline` range is a factor of */
  baseline?: number;
  /** records below / above the range */
  below: number;
  above: number;
  /** none outside: ok; under half: warn; half or more: bad; nothing to judge: none */
  mark: Mark;
}

export interface Finding {
  /** the knowledge entry: a rule id, or a range's (`reward_cv`, `entropy_range`, ...) */
  id: string;
  severity: 'critical' | 'warning' | 'info';
  title: string;
  /** the alert it came from, if any */
  alertId?: number;
  meaning: string;
  causes: readonly string[];
  actions: readonly string[];
}

export interface MilestoneItem {
  rule: string;
  epoch: number;
  metric: string;
  op: string;
  value: number;
  /** a stop criterion (critical) rather than a checkpoint */
  stop: boolean;
  /** unlogged: the run logs no such metric (nothing to judge, and no stop criterion waits on it) */
  state: 'met' | 'missed' | 'pending' | 'unlogged';
  /** the mean of the last `window` values at the first record at or past the epoch */
  actual: number | null;
  atEpoch: number | null;
}

export interface ComponentRow {
  name: string;
  mean: number;
  /** the best value seen for the component in the window: what it can give */
  best: number;
  /** best - mean: where the reward is lost */
  gap: number;
  source: 'metric' | 'generations';
}

export interface Generation {
  step: number;
  reward: number;
  breakdown: Record<string, number>;
  completion: string;
}

export interface RunReport {
  run: string;
  generatedAt: number;
  window: { fromStep: number; toStep: number; fromEpoch: number | null; toEpoch: number | null; records: number };
  status: { level: Level; decidedBy: string };
  progress: {
    step: number | null;
    epoch: number | null;
    totalSteps: number | null;
    elapsedMs: number | null;
    etaMs: number | null;
  };
  config: Record<string, string>;
  ranges: RangeRow[];
  reward: { first: number; last: number; trend: 'up' | 'down' | 'flat' | null } | null;
  findings: Finding[];
  actions: string[];
  milestones: MilestoneItem[];
  stop: { verdict: 'stop' | 'continue'; why: string[] };
  components: ComponentRow[];
  best: Generation[];
  worst: Generation[];
}

export interface ReportOptions {
  /** the window: from this step, or from the first record at this epoch; else the last `window` records */
  since?: { step: number } | { epoch: number };
  window: number;
  ranges: readonly ExpectedRange[];
  /** the rules in force for the run: milestones come from them */
  rules: readonly Rule[];
  now: number;
}

/** How many records of the run's start make the baseline of a `baseline` range. */
const BASELINE_RECORDS = 20;
const ACTIONS_SHOWN = 8;
const GENERATIONS_SHOWN = 2;

interface Window {
  steps: number[];
  from: number;
  to: number;
  /** generations logged without a step are filed after the last one: a window to the end takes them in */
  examplesTo: number;
}

function windowOf(store: Store, run: RunRow, opts: ReportOptions): Window {
  const all = store.points.steps(run.id);
  let steps: number[];
  if (opts.since && 'step' in opts.since) {
    const from = opts.since.step;
    steps = all.filter((s) => s >= from);
  } else if (opts.since) {
    const e = opts.since.epoch;
    const first = store.points.series(run.id, 'epoch').find((p) => p.value >= e - 1e-9);
    steps = first ? all.filter((s) => s >= first.step) : [];
  } else steps = all.slice(-opts.window);
  const to = steps[steps.length - 1] ?? -1;
  return { steps, from: steps[0] ?? 0, to, examplesTo: to === all[all.length - 1] ? Number.MAX_SAFE_INTEGER : to };
}

/** The values of a metric over the window, by step (reward_cv derived per record). */
function valuesIn(store: Store, runId: number, metric: string, w: Window): number[] {
  const inW = (m: string) => store.points.series(runId, m).filter((p) => p.step >= w.from && p.step <= w.to);
  if (metric !== 'reward_cv') return inW(metric).map((p) => p.value);
  const std = new Map(inW('reward_std').map((p) => [p.step, p.value]));
  return inW('reward').flatMap((p) => {
    const s = std.get(p.step);
    return s === undefined || !(Math.abs(p.value) > 1e-9) ? [] : [s / Math.abs(p.value)];
  });
}

/** The expected floor at each epoch: 0 at epoch 0, through each milestone `metric > value` at its epoch. */
function floorLine(rules: readonly Rule[], metric: string): Array<[number, number]> {
  const marks = rules
    .filter((r): r is MilestoneRule => r.kind === 'milestone' && r.severity !== 'critical' && r.metric === metric)
    .filter((r) => r.op === '>' || r.op === '>=')
    .map((r): [number, number] => [r.epoch, r.value])
    .sort((a, b) => a[0] - b[0]);
  return marks.length === 0 ? [] : [[0, 0], ...marks];
}

function floorAt(line: ReadonlyArray<[number, number]>, epoch: number): number {
  for (let i = 1; i < line.length; i++) {
    const [e1, v1] = line[i] as [number, number];
    const [e0, v0] = line[i - 1] as [number, number];
    if (epoch <= e1) return v0 + ((v1 - v0) * (epoch - e0)) / (e1 - e0);
  }
  return (line[line.length - 1] as [number, number])[1];
}

/** A `milestones` range: each record against the floor at its epoch. */
function trajectoryRow(store: Store, runId: number, r: ExpectedRange, w: Window, line: Array<[number, number]>): RangeRow {
  const epochs = new Map(store.points.series(runId, 'epoch').map((p) => [p.step, p.value]));
  const pts = store.points
    .series(runId, r.metric)
    .filter((p) => p.step >= w.from && p.step <= w.to && Number.isFinite(p.value) && epochs.has(p.step));
  const v = pts.map((p) => p.value);
  const below = pts.filter((p) => p.value < floorAt(line, epochs.get(p.step) as number)).length;
  const mark: Mark = v.length === 0 ? 'none' : below === 0 ? 'ok' : below * 2 < v.length ? 'warn' : 'bad';
  return {
    metric: r.metric,
    n: v.length,
    min: v.length ? Math.min(...v) : null,
    max: v.length ? Math.max(...v) : null,
    median: v.length ? median(v) : null,
    range: r,
    below,
    above: 0,
    mark,
  };
}

function rangeRow(store: Store, runId: number, r: ExpectedRange, w: Window, rules: readonly Rule[]): RangeRow {
  if (r.basis === 'milestones') {
    const line = floorLine(rules, r.metric);
    const hasEpochs = store.points.series(runId, 'epoch').length > 0;
    if (line.length > 0 && hasEpochs) return trajectoryRow(store, runId, r, w, line);
    r = { ...r, basis: 'baseline', max: undefined, source: 'ours: at least its early median (no epochs to judge by)' };
  }
  const v = finite(valuesIn(store, runId, r.metric, w));
  let lo = r.min;
  let hi = r.max;
  let baseline: number | undefined;
  if (r.basis === 'absolute' && r.fallback) {
    // a model that lives elsewhere from its start (verl GSM8K's entropy 0.03) is judged against itself
    const early = earlyMedian(store, runId, r.metric);
    const outside = early !== undefined && ((r.min !== undefined && early < r.min) || (r.max !== undefined && early > r.max));
    if (outside) r = { ...r, basis: 'baseline', ...r.fallback, source: `ours: its early median lies outside ${r.source}` };
  }
  if (r.basis === 'baseline') {
    baseline = earlyMedian(store, runId, r.metric);
    lo = baseline !== undefined && r.min !== undefined ? baseline * r.min : undefined;
    hi = baseline !== undefined && r.max !== undefined ? baseline * r.max : undefined;
  }
  const below = lo === undefined ? 0 : v.filter((x) => x < lo).length;
  const above = hi === undefined ? 0 : v.filter((x) => x > hi).length;
  const judged = v.length > 0 && (r.basis === 'absolute' || baseline !== undefined);
  const out = below + above;
  const mark: Mark = !judged ? 'none' : out === 0 ? 'ok' : out * 2 < v.length ? 'warn' : 'bad';
  return {
    metric: r.metric,
    n: v.length,
    min: v.length ? Math.min(...v) : null,
    max: v.length ? Math.max(...v) : null,
    median: v.length ? median(v) : null,
    range: r,
    ...(baseline === undefined ? {} : { baseline }),
    below,
    above,
    mark,
  };
}

function earlyMedian(store: Store, runId: number, metric: string): number | undefined {
  const early = finite(store.points.series(runId, metric).slice(0, BASELINE_RECORDS).map((p) => p.value));
  return early.length >= 5 ? median(early) : undefined;
}

/** A milestone as the engine judges it (evaluateMilestone): at the first record at or past the epoch. */
function milestone(store: Store, runId: number, rule: MilestoneRule): MilestoneItem {
  const base = {
    rule: rule.id, epoch: rule.epoch, metric: rule.metric, op: rule.op, value: rule.value,
    stop: rule.severity === 'critical',
  };
  if (!store.points.metricsOf(runId).includes(rule.metric)) return { ...base, state: 'unlogged', actual: null, atEpoch: null };
  const at = store.points.series(runId, 'epoch').find((p) => p.value >= rule.epoch - 1e-9);
  const recent = at ? store.points.upTo(runId, rule.metric, at.step, rule.window, true).map((p) => p.value) : [];
  if (!at || recent.length === 0) return { ...base, state: 'pending', actual: null, atEpoch: null };
  const m = mean(recent);
  return { ...base, state: compare(m, rule.op, rule.value) ? 'met' : 'missed', actual: m, atEpoch: at.value };
}

function alertFinding(a: AlertRow): Finding {
  const k = knowledgeOf(a.rule);
  return {
    id: a.rule,
    severity: a.severity as Finding['severity'],
    title: `${a.rule} (#${a.id}, ${a.state}): ${a.summary}`,
    alertId: a.id,
    meaning: k?.meaning ?? 'a rule from the config',
    causes: k?.causes ?? [],
    actions: k?.actions ?? [],
  };
}

function rangeFinding(r: RangeRow, fmt: (v: number) => string): Finding | null {
  if (r.mark !== 'warn' && r.mark !== 'bad') return null;
  const side = r.above >= r.below ? 'high' : 'low';
  const id = (side === 'high' ? r.range.high : r.range.low) ?? r.range.high ?? r.range.low;
  const k = id ? knowledgeOf(id) : undefined;
  const outside = r.above + r.below;
  const bound = side === 'high' ? 'above' : 'below';
  return {
    id: id ?? r.metric,
    severity: r.mark === 'bad' ? 'critical' : 'warning',
    title:
      `${r.metric} ${fmt(r.min ?? NaN)}-${fmt(r.max ?? NaN)}: ${outside} of ${r.n} records outside the expected range ` +
      `(${bound} it, ${r.range.source})`,
    meaning: k?.meaning ?? `${r.metric} outside its expected range`,
    causes: k?.causes ?? [],
    actions: k?.actions ?? [],
  };
}

/** Reward components: logged `rewards/<fn>` series, else the breakdowns of the kept generations. */
function components(store: Store, runId: number, w: Window): ComponentRow[] {
  // `rewards/<fn>` is a component's mean (TRL's rewards/<fn>/mean maps onto it); /std, /min, /max are not parts
  const names = store.points.metricsOf(runId).filter((m) => /^rewards\/[^/]+$/.test(m));
  const rows: ComponentRow[] = [];
  for (const name of names) {
    const v = finite(valuesIn(store, runId, name, w));
    if (v.length === 0) continue;
    const m = mean(v);
    const best = Math.max(...v);
    rows.push({ name, mean: m, best, gap: best - m, source: 'metric' });
  }
  const byKey = new Map<string, number[]>();
  const kept = store.examples.between(runId, w.from, w.examplesTo);
  for (const e of kept) {
    for (const [k, x] of Object.entries(e.breakdown)) if (Number.isFinite(x)) byKey.set(k, [...(byKey.get(k) ?? []), x]);
  }
  // a part of the reward is never larger than the largest reward: that keeps out counts (length, errors)
  const top = Math.max(...finite(kept.map((e) => e.reward)));
  for (const [name, v] of byKey) {
    if (v.some((x) => Math.abs(x) > Math.abs(top) + 1e-9)) continue;
    const m = mean(v);
    const best = Math.max(...v);
    rows.push({ name, mean: m, best, gap: best - m, source: 'generations' });
  }
  return rows.sort((a, b) => b.gap - a.gap);
}

function progress(store: Store, run: RunRow): RunReport['progress'] {
  const meta = store.events.meta(run.id);
  const totalSteps = meta.total_steps ?? meta.max_steps ?? null;
  const epoch = store.points.latest(run.id).find((l) => l.metric === 'epoch')?.value ?? null;
  const span = run.started_at !== null && run.updated_at !== null ? run.updated_at - run.started_at : null;
  // a log read at once (backfill) has no pace to speak of: under a second is no elapsed time
  const elapsedMs = span !== null && span >= 1000 ? span : null;
  const done = run.last_step !== null && run.first_step !== null ? run.last_step - run.first_step : 0;
  const etaMs =
    elapsedMs !== null && totalSteps !== null && run.last_step !== null && done > 0
      ? Math.max(0, ((totalSteps - run.last_step) * elapsedMs) / done)
      : null;
  return { step: run.last_step, epoch, totalSteps, elapsedMs, etaMs };
}

/** Stop criteria (seed 001): judged at epoch 1.0; before, green lights and red flags say how it goes. */
function stopVerdict(
  milestones: readonly MilestoneItem[],
  firing: readonly AlertRow[],
  trend: RunReport['reward'],
  frac: ReturnType<typeof direction>,
  fmt: (v: number) => string,
): RunReport['stop'] {
  const why: string[] = [];
  const missed = milestones.filter((m) => m.stop && m.state === 'missed');
  const dead = firing.filter((a) => a.rule === 'no_learning' || a.rule === 'non_finite');
  for (const m of missed) why.push(`${m.rule}: ${m.metric} ${fmt(m.actual ?? NaN)} at epoch ${fmt(m.atEpoch ?? NaN)}, expected ${m.op} ${m.value}`);
  for (const a of dead) why.push(`${a.rule} firing: ${a.summary}`);
  if (why.length > 0) return { verdict: 'stop', why };
  const stops = milestones.filter((m) => m.stop);
  const pending = stops.filter((m) => m.state === 'pending');
  if (pending.length > 0) why.push(`the stop criteria are judged at epoch ${pending.map((m) => m.epoch).filter((e, i, a) => a.indexOf(e) === i).join(', ')}`);
  else if (stops.length > 0) why.push('the stop criteria at epoch 1.0 are met');
  if (trend?.trend === 'up') why.push(`green light: reward trending up (${fmt(trend.first)} -> ${fmt(trend.last)})`);
  if (trend?.trend === 'down' || trend?.trend === 'flat') why.push(`red flag: reward ${trend.trend === 'down' ? 'falling' : 'flat'} (${fmt(trend.first)} -> ${fmt(trend.last)})`);
  if (frac?.way === 'down') why.push(`green light: frac_zero_std decreasing (${fmt(frac.first)} -> ${fmt(frac.second)})`);
  if (frac?.way === 'up') why.push(`red flag: frac_zero_std rising (${fmt(frac.first)} -> ${fmt(frac.second)})`);
  return { verdict: 'continue', why };
}

function statusOf(
  stop: RunReport['stop'],
  firing: readonly AlertRow[],
  ranges: readonly RangeRow[],
  milestones: readonly MilestoneItem[],
  fmt: (v: number) => string,
): RunReport['status'] {
  if (stop.verdict === 'stop') return { level: 'stop', decidedBy: `stop criterion: ${stop.why[0]}` };
  const outside = (r: RangeRow): string =>
    `${r.metric}: ${r.below + r.above} of ${r.n} records outside ${r.range.source}`;
  const critical = firing.find((a) => a.severity === 'critical');
  if (critical) return { level: 'struggling', decidedBy: `${critical.rule} firing (#${critical.id}): ${critical.summary}` };
  const bad = ranges.find((r) => r.mark === 'bad');
  if (bad) return { level: 'struggling', decidedBy: outside(bad) };
  const missed = milestones.find((m) => m.state === 'missed');
  if (missed) {
    return {
      level: 'struggling',
      decidedBy: `${missed.rule} missed: ${missed.metric} ${fmt(missed.actual ?? NaN)}, expected ${missed.op} ${missed.value}`,
    };
  }
  const warning = firing.find((a) => a.severity === 'warning');
  if (warning) return { level: 'watch', decidedBy: `${warning.rule} firing (#${warning.id}): ${warning.summary}` };
  const warn = ranges.find((r) => r.mark === 'warn');
  if (warn) return { level: 'watch', decidedBy: outside(warn) };
  return { level: 'healthy', decidedBy: 'no alert firing, every judged metric in its expected range, no milestone missed' };
}

export function buildReport(store: Store, run: RunRow, opts: ReportOptions, fmt: (v: number) => string): RunReport {
  const w = windowOf(store, run, opts);
  const epochs = store.points.series(run.id, 'epoch').filter((p) => p.step >= w.from && p.step <= w.to);
  const ranges = opts.ranges.map((r) => rangeRow(store, run.id, r, w, opts.rules)).filter((r) => r.n > 0);
  const firing = store.alerts.list({ runId: run.id }).reverse();
  // alerts of the window: firing now, or fired in it and resolved since
  const recent = store.alerts
    .list({ runId: run.id, all: true })
    .reverse()
    .filter((a) => a.state === 'firing' || (a.fired_step !== null && a.fired_step >= w.from && a.fired_step <= w.to));
  const milestones = opts.rules.filter((r): r is MilestoneRule => r.kind === 'milestone').map((r) => milestone(store, run.id, r));
  const rewardDir = direction(valuesIn(store, run.id, 'reward', w));
  const reward = rewardDir ? { first: rewardDir.first, last: rewardDir.second, trend: rewardDir.way } : null;
  const stop = stopVerdict(milestones, firing, reward, direction(valuesIn(store, run.id, 'frac_zero_std', w)), fmt);
  const rank = { critical: 0, warning: 1, info: 2 } as const;
  const findings = [
    ...recent.map(alertFinding),
    ...ranges.map((r) => rangeFinding(r, fmt)).filter((f): f is Finding => f !== null),
    ...milestones
      .filter((m) => m.state === 'missed' && !recent.some((a) => a.rule === m.rule))
      .map((m): Finding => {
        const k = knowledgeOf(m.rule);
        return {
          id: m.rule,
          severity: m.stop ? 'critical' : 'warning',
          title: `${m.rule}: ${m.metric} ${fmt(m.actual ?? NaN)} at epoch ${fmt(m.atEpoch ?? NaN)}, expected ${m.op} ${m.value}`,
          meaning: k?.meaning ?? 'a milestone from the config',
          causes: k?.causes ?? [],
          actions: k?.actions ?? [],
        };
      }),
  ].sort((a, b) => rank[a.severity] - rank[b.severity]);
  // resolved alerts explain the past; actions come from what is wrong now
  const live = findings.filter(
    (f) => f.severity !== 'info' && (f.alertId === undefined || firing.some((a) => a.id === f.alertId)),
  );
  const actions = distinct(live.flatMap((f) => f.actions)).slice(0, ACTIONS_SHOWN);
  const gen = (which: 'best' | 'worst'): Generation[] =>
    store.examples.extremes(run.id, w.from, w.examplesTo, which, GENERATIONS_SHOWN).map((e) => ({
      step: e.step, reward: e.reward, breakdown: e.breakdown, completion: e.completion,
    }));
  return {
    run: run.name,
    generatedAt: opts.now,
    window: {
      fromStep: w.from,
      toStep: w.to,
      fromEpoch: epochs[0]?.value ?? null,
      toEpoch: epochs[epochs.length - 1]?.value ?? null,
      records: w.steps.length,
    },
    status: statusOf(stop, firing, ranges, milestones, fmt),
    progress: progress(store, run),
    config: { ...numbersAsText(store.events.meta(run.id)), ...store.events.config(run.id), ...loggedLr(store, run.id) },
    ranges,
    reward,
    findings,
    actions,
    milestones,
    stop,
    components: components(store, run.id, w),
    best: gen('best'),
    worst: gen('worst'),
  };
}

const numbersAsText = (o: Record<string, number>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]));

/** Actions once each: `raise the temperature (seed 001: 0.9 -> 1.1)` and `raise the temperature` are one. */
function distinct(actions: readonly string[]): string[] {
  const key = (a: string): string => a.replace(/\s*\(.*\)\s*$/, '').trim();
  const seen = new Set<string>();
  return actions.filter((a) => !seen.has(key(a)) && seen.add(key(a)) !== undefined);
}

/** The learning rate the run logs now (seed 001: "currently running at ~3.55e-6 due to warmup"). */
function loggedLr(store: Store, runId: number): Record<string, string> {
  const lr = store.points.upTo(runId, 'lr', Number.MAX_SAFE_INTEGER, 1, true)[0];
  return lr ? { 'lr (logged now)': `${lr.value.toExponential(2)} at step ${lr.step}` } : {};
}
