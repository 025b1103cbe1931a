/**
 * The run report, after a GRPO training analysis (Qwen2.5-Coder-1.5B on OCaml problems): every number a careful
 * engineer reads off a run's logs, computed from the store over a window of steps. Plain data: the Markdown, the chat
 * summary and `--json` render it.
 */
import { knowledgeOf, knowledgeOfAlert } from '../engine/presets/knowledge.ts';
import { compare, type MilestoneRule, type Rule } from '../engine/rules.ts';
import type { AlertRow, RunRow, StoreTx } from '../store/contract.ts';
import { rangeRow } from './judge.ts';
import type { ExpectedRange } from './ranges.ts';
import { direction, finite, mean, range } from './stats.ts';
import { endedBy, statusOf, stopVerdict } from './verdict.ts';
import { valuesIn, windowOf, type Window } from './window.ts';
import { readOnce } from './readOnce.ts';

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
  /** ended: the job no longer trains (it crashed, stalled or finished) */
  stop: { verdict: 'stop' | 'continue' | 'ended'; why: string[] };
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
  /** the report as of this step (a scheduled report, at the step that triggered it): nothing logged or fired later */
  until?: number;
  now: number;
}

const ACTIONS_SHOWN = 8;
const GENERATIONS_SHOWN = 2;

/** A milestone as the engine judges it (evaluateMilestone): at the first record at or past the epoch, if it is
 * at or before `until`. */
async function milestone(store: StoreTx, runId: number, rule: MilestoneRule, until: number): Promise<MilestoneItem> {
  const base = {
    rule: rule.id,
    epoch: rule.epoch,
    metric: rule.metric,
    op: rule.op,
    value: rule.value,
    stop: rule.severity === 'critical',
  };
  if (!(await store.points.metricsOf(runId)).includes(rule.metric)) {
    return { ...base, state: 'unlogged', actual: null, atEpoch: null };
  }
  const at = (await store.points.series(runId, 'epoch')).find((p) => p.value >= rule.epoch - 1e-9 && p.step <= until);
  const recent = at
    ? (await store.points.upTo(runId, rule.metric, at.step, rule.window, true)).map((p) => p.value)
    : [];
  if (!at || recent.length === 0) return { ...base, state: 'pending', actual: null, atEpoch: null };
  const m = mean(recent);
  return { ...base, state: compare(m, rule.op, rule.value) ? 'met' : 'missed', actual: m, atEpoch: at.value };
}

function alertFinding(a: AlertRow): Finding {
  const k = knowledgeOfAlert(a.rule, a.details);
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

/** best - mean, with the rounding of a mean of equal values (1e-17) read as no loss */
const gapOf = (best: number, m: number): number => (best - m < 1e-12 ? 0 : best - m);

/** Reward components: logged `rewards/<fn>` series, else the breakdowns of the kept generations. */
async function components(store: StoreTx, runId: number, w: Window): Promise<ComponentRow[]> {
  // `rewards/<fn>` is a component's mean (TRL's rewards/<fn>/mean maps onto it); /std, /min, /max are not parts
  const names = (await store.points.metricsOf(runId)).filter((m) => /^rewards\/[^/]+$/.test(m));
  const rows: ComponentRow[] = [];
  for (const name of names) {
    const v = finite(await valuesIn(store, runId, name, w));
    if (v.length === 0) continue;
    const m = mean(v);
    const best = range(v).max;
    rows.push({ name, mean: m, best, gap: gapOf(best, m), source: 'metric' });
  }
  const byKey = new Map<string, number[]>();
  const kept = await store.examples.between(runId, w.from, w.examplesTo);
  for (const e of kept) {
    for (const [k, x] of Object.entries(e.breakdown))
      if (Number.isFinite(x)) byKey.set(k, [...(byKey.get(k) ?? []), x]);
  }
  // a part of the reward is never larger than the largest reward: that keeps out counts (length, errors)
  const top = range(kept.map((e) => e.reward)).max;
  for (const [name, v] of byKey) {
    if (v.some((x) => Math.abs(x) > Math.abs(top) + 1e-9)) continue;
    const m = mean(v);
    const best = range(v).max;
    rows.push({ name, mean: m, best, gap: gapOf(best, m), source: 'generations' });
  }
  return rows.sort((a, b) => b.gap - a.gap);
}

async function progress(store: StoreTx, run: RunRow, until: number | undefined): Promise<RunReport['progress']> {
  const meta = await store.events.meta(run.id);
  const totalSteps = meta.total_steps ?? meta.max_steps ?? null;
  if (until !== undefined && until !== run.last_step) {
    // as of an earlier step: the run's clock is read at its last step only, so no pace is told
    const epoch = (await store.points.upTo(run.id, 'epoch', until, 1))[0]?.value ?? null;
    return { step: until, epoch, totalSteps, elapsedMs: null, etaMs: null };
  }
  const epoch = (await store.points.latest(run.id)).find((l) => l.metric === 'epoch')?.value ?? null;
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

/** The report of `run` from what the store holds now; its repeated reads are asked once (`readOnce`). */
export async function buildReport(
  tx: StoreTx,
  run: RunRow,
  opts: ReportOptions,
  fmt: (v: number) => string,
): Promise<RunReport> {
  const store = readOnce(tx);
  const w = await windowOf(store, run, opts);
  const epochs = (await store.points.series(run.id, 'epoch')).filter((p) => p.step >= w.from && p.step <= w.to);
  const ranges: RangeRow[] = [];
  for (const r of opts.ranges) {
    const row = await rangeRow(store, run.id, r, w, opts.rules);
    if (row.n > 0) ranges.push(row);
  }
  const until = opts.until ?? Number.MAX_SAFE_INTEGER;
  const fired = (await store.alerts.list({ runId: run.id, all: true }))
    .reverse()
    .filter((a): a is AlertRow & { fired_step: number } => a.fired_step !== null && a.fired_step <= until);
  // firing at `until` (now, without one): fired by then, and not resolved by then
  const firing = fired.filter(
    (a) => a.state === 'firing' || (opts.until !== undefined && a.resolved_step !== null && a.resolved_step > until),
  );
  // alerts of the window: firing then, or fired in it and resolved since
  const recent = fired.filter((a) => firing.includes(a) || (a.fired_step >= w.from && a.fired_step <= w.to));
  const milestones: MilestoneItem[] = [];
  for (const r of opts.rules) if (r.kind === 'milestone') milestones.push(await milestone(store, run.id, r, until));
  const rewardDir = direction(await valuesIn(store, run.id, 'reward', w));
  const reward = rewardDir ? { first: rewardDir.first, last: rewardDir.second, trend: rewardDir.way } : null;
  const zeroStd = direction(await valuesIn(store, run.id, 'frac_zero_std', w));
  const kinds = new Map(opts.rules.map((r) => [r.id, r.kind]));
  const stop = stopVerdict(
    milestones,
    firing,
    reward,
    zeroStd,
    fmt,
    endedBy(firing, (rule) => kinds.get(rule)),
  );
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
  const gen = async (which: 'best' | 'worst'): Promise<Generation[]> =>
    (await store.examples.extremes(run.id, w.from, w.examplesTo, which, GENERATIONS_SHOWN)).map((e) => ({
      step: e.step,
      reward: e.reward,
      breakdown: e.breakdown,
      completion: e.completion,
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
    progress: await progress(store, run, opts.until),
    config: {
      ...numbersAsText(await store.events.meta(run.id)),
      ...(await store.events.config(run.id)),
      ...(await loggedLr(store, run.id, until)),
    },
    ranges,
    reward,
    findings,
    actions,
    milestones,
    stop,
    components: await components(store, run.id, w),
    best: await gen('best'),
    worst: await gen('worst'),
  };
}

const numbersAsText = (o: Record<string, number>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]));

/** Actions once each: `raise the temperature (a GRPO training analysis: 0.9 -> 1.1)` and `raise the temperature`
 * are one. */
function distinct(actions: readonly string[]): string[] {
  const key = (a: string): string => a.replace(/\s*\(.*\)\s*$/, '').trim();
  const seen = new Set<string>();
  return actions.filter((a) => !seen.has(key(a)) && seen.add(key(a)) !== undefined);
}

/** The learning rate the run logs now (the training analysis: "currently running at ~3.55e-6 due to
 * warmup"). */
async function loggedLr(store: StoreTx, runId: number, until: number): Promise<Record<string, string>> {
  const lr = (await store.points.upTo(runId, 'lr', until, 1, true))[0];
  return lr ? { 'lr (logged now)': `${lr.value.toExponential(2)} at step ${lr.step}` } : {};
}
