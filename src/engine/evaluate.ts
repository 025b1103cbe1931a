import { formatValue } from '../lib/numbers.ts';
import { replayingStep, type AttemptRow } from '../store/attempts.ts';
import type { RunRow } from '../store/runs.ts';
import type { LiveStore } from '../store/live.ts';
import { finishedAt } from './finished.ts';
import { Lifecycle } from './lifecycle.ts';
import { OpenAlerts } from './openAlerts.ts';
import { type Break, breakSpan, lineBreak, Sums } from './breaks.ts';
import { type Drawdown, drawdown, PeakWindow } from './drawdown.ts';
import { longRunFactor, mean, median, windowDiffSe } from './stats.ts';
import {
  alternatives,
  compare,
  type Condition,
  type MilestoneRule,
  type ThresholdRule,
  type TrendRule,
} from './rules.ts';

export interface RunContext {
  store: LiveStore;
  runId: number;
  /** the run's row, read once per evaluation (with `live_at` as `noteLive` left it; no rule writes it) */
  run: RunRow | undefined;
  now: () => number;
  /** `store.attempts.replaying` of the run (its attempts read once per evaluation) */
  replaying: number | null;
  /** the run's open alerts, asked of the store once per evaluation: every rule's Lifecycle looks its alert up here */
  alerts: OpenAlerts;
  /** `store.points.after`, memoised for one evaluation: several rules read the same series */
  after(metric: string, step: number): Array<{ step: number; value: number }>;
  /** `store.points.metricsOf`, memoised for one evaluation (rules write no points) */
  metrics(): readonly string[];
  /** whether the run has logged the metric: rules ask for metrics a log may not have (kl, train_runtime) */
  logged(metric: string): boolean;
  /** `expandMetrics` of a rule's patterns over `metrics()`, memoised for one evaluation */
  expand(patterns: readonly string[]): readonly string[];
  /** `finishedAt`, memoised for one evaluation (crash and run_finished both ask) */
  finishedAt(): number | null;
}

/** The context one evaluation of `runId` gives its rules; `run` is its row and `attempts` its attempts as read for
 * that evaluation. */
export function runContext(
  store: LiveStore,
  runId: number,
  run: RunRow | undefined,
  now: () => number,
  attempts: readonly AttemptRow[] = store.attempts.list(runId),
): RunContext {
  // by metric, then step: no key string built per call (the rules ask ~40 times per evaluation)
  const memo = new Map<string, Map<number, Array<{ step: number; value: number }>>>();
  // a restarted job logging its steps again: the steps the earlier attempt logged past it are not evaluated
  const head = replayingStep(attempts[attempts.length - 1], run?.last_step ?? null);
  let metrics: readonly string[] | undefined;
  let names: ReadonlySet<string> | undefined;
  let finished: number | null | undefined;
  const expanded = new Map<readonly string[], readonly string[]>();
  const ctx: RunContext = {
    store,
    runId,
    run,
    now,
    replaying: head,
    alerts: new OpenAlerts(store.alerts, runId),
    after(metric, step) {
      let byStep = memo.get(metric);
      if (!byStep) memo.set(metric, (byStep = new Map()));
      let rows = byStep.get(step);
      if (!rows) {
        rows = ctx.logged(metric) ? store.points.after(runId, metric, step) : [];
        if (head !== null) rows = rows.filter((p) => p.step <= head);
        byStep.set(step, rows);
      }
      return rows;
    },
    metrics: () => (metrics ??= store.points.metricsOf(runId)),
    logged: (metric) => (names ??= new Set(ctx.metrics())).has(metric),
    expand(patterns) {
      let found = expanded.get(patterns);
      if (!found) expanded.set(patterns, (found = expandMetrics(patterns, ctx.metrics())));
      return found;
    },
    finishedAt: () => (finished !== undefined ? finished : (finished = finishedAt(store, run, ctx.logged))),
  };
  return ctx;
}

/** Before any step: where a rule's cursor starts. */
const START = -1;

/** Where a rule left off on a metric (its cursor), and the finite points logged since: how the rules that judge
 * one metric record by record begin. */
export function resume(
  ctx: RunContext,
  rule: string,
  metric: string,
): { cursor: ReturnType<LiveStore['alerts']['cursor']>; from: number; fresh: Array<{ step: number; value: number }> } {
  const cursor = ctx.store.alerts.cursor(ctx.runId, rule, metric);
  const from = cursor?.step ?? START;
  return { cursor, from, fresh: ctx.after(metric, from).filter((p) => Number.isFinite(p.value)) };
}
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The values of a series (steps ascending, as `ctx.after` gives them) looked up at ascending steps: a walk along
 * it instead of a Map built per batch (rules look other metrics up at every step of a backfill). */
export class StepLookup {
  private at = 0;
  constructor(private readonly points: ReadonlyArray<{ step: number; value: number }>) {}

  /** the value logged at `step`, undefined where none was; each call's step must be past the one before */
  get(step: number): number | undefined {
    const points = this.points;
    let j = this.at;
    while (j < points.length && points[j]!.step < step) j++;
    this.at = j;
    const p = points[j];
    return p !== undefined && p.step === step ? p.value : undefined;
  }
}

const NO_LOOKUPS: readonly StepLookup[] = [];

/** Threshold: each alternative is its own alert key, named after its first metric. */
export function evaluateThreshold(ctx: RunContext, rule: ThresholdRule): void {
  const { store, runId } = ctx;
  for (const conds of alternatives(rule)) {
    const [first, ...rest] = conds;
    if (!first) continue;
    const cursor = store.alerts.cursor(runId, rule.id, first.metric);
    const from = cursor?.step ?? START;
    const logged = ctx.after(first.metric, from);
    if (logged.length === 0) continue;
    const otherPoints = rest.map((c) => ctx.after(c.metric, from));
    // the newest step, unless every other metric has logged it or a later one, waits for a later step: its record
    // may not be whole yet (a console log's step spreads over lines that can land in two reads), and a step
    // judged without a metric is not judged again when it comes
    const newest = logged[logged.length - 1]!.step;
    const whole = otherPoints.every((o) => o.length > 0 && o[o.length - 1]!.step >= newest);
    const main = whole ? logged : logged.slice(0, -1);
    if (main.length === 0) continue;
    const others = rest.length === 0 ? NO_LOOKUPS : otherPoints.map((o) => new StepLookup(o));
    let streak = Number(cursor?.state.streak ?? 0);
    let recovering = Number(cursor?.state.recovering ?? 0);
    // `learn`: the first records of the run, and whether their median leaves the line to be judged at all
    const early = (cursor?.state.early as number[] | undefined) ?? [];
    let gate = (cursor?.state.gate as 'on' | 'off' | undefined) ?? (rule.learn === 0 ? 'on' : undefined);
    if (gate === 'off') {
      store.alerts.saveCursor(runId, rule.id, first.metric, main[main.length - 1]!.step, cursor?.state ?? {});
      continue;
    }
    const quiet = { quietFor: rule.quietFor, quiet: Number(cursor?.state.quiet ?? 0) };
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: first.metric }, ctx.now, quiet);
    // plain loops and one reused array: this runs for every step of every threshold rule in a backfill
    const values: Array<number | undefined> = new Array<number | undefined>(conds.length);
    for (const p of main) {
      if (gate === undefined && Number.isFinite(p.value)) {
        early.push(p.value);
        if (early.length >= rule.learn) gate = compare(median(early), first.op, first.value) ? 'off' : 'on';
        if (gate === 'off') break;
      }
      values[0] = p.value;
      let missing = Number.isNaN(p.value);
      for (let k = 0; k < others.length && !missing; k++) {
        const v = (others[k] as StepLookup).get(p.step);
        values[k + 1] = v;
        missing = v === undefined || Number.isNaN(v);
      }
      if (missing) continue; // neither bad nor recovered
      let holds = true;
      for (let k = 0; k < conds.length && holds; k++) holds = compare(values[k] as number, conds[k]!.op, conds[k]!.value);
      if (holds) {
        const n = ++streak;
        recovering = 0;
        if (gate === undefined) continue;
        lc.hold(p.step, n, rule.for, rule.severity, () => {
          const { shown, details } = describeValues(conds, values);
          const summary = shown().map((s, i) => `${s} ${conds[i]!.op} ${formatValue(conds[i]!.value)}`).join(' and ');
          return { summary: `${summary} for ${plural(n, 'step')}`, details: details() };
        });
      } else {
        streak = 0;
        // hysteresis: a single-condition rule resolves only once the value is back past `recover`
        const past = conds.length > 1 || rule.recover === undefined || !compare(p.value, first.op, rule.recover);
        recovering = past ? recovering + 1 : 0;
        const recovered = recovering >= rule.recoverFor;
        if (gate === undefined || !lc.wouldChange('ok', recovered)) continue;
        const bound = rule.recover ?? first.value;
        const n = recovering;
        const { shown, details } = describeValues(conds, [...values]);
        lc.apply(p.step, {
          kind: 'ok',
          recovered,
          describe: () => ({ summary: `${shown().join(', ')}: back past ${formatValue(bound)} for ${plural(n, 'step')}`, details: details() }),
        });
      }
    }
    const held = rule.quietFor > 1 ? { quiet: lc.quiet } : {};
    const state = gate === undefined ? { streak, recovering, early, ...held } : { streak, recovering, gate, ...held };
    store.alerts.saveCursor(runId, rule.id, first.metric, main[main.length - 1]!.step, state);
  }
}

/** `rewards/*` matches every logged metric under `rewards/` except the `/std` series. A pattern that finds
 * a single metric beside named ones is dropped: one reward function is the reward itself (in the OCaml GRPO
 * trainer's learning.log `syntax_rew` equals `reward`), and the same alert twice is noise. */
export function expandMetrics(patterns: readonly string[], logged: readonly string[]): string[] {
  const named = patterns.filter((p) => !p.endsWith('*') && logged.includes(p));
  const out = new Set<string>(named);
  for (const p of patterns.filter((x) => x.endsWith('*'))) {
    const prefix = p.slice(0, -1);
    const found = logged.filter((m) => m.startsWith(prefix) && !m.endsWith('/std') && !m.endsWith('_std'));
    if (found.length === 1 && named.length > 0) continue;
    for (const m of found) out.add(m);
  }
  return [...out];
}

/** `metric value` for each condition, and the values as details: built only for transitions. */
function describeValues(conds: readonly Condition[], values: ReadonlyArray<number | undefined>) {
  return {
    shown: (): string[] => conds.map((c, i) => `${c.metric} ${formatValue(values[i] as number)}`),
    details: () => ({ values: Object.fromEntries(conds.map((c, i) => [c.metric, values[i]])) }),
  };
}

/** A firing trend alert whose direction differs from the current one (a rise turned into a fall). */
function turned(lc: Lifecycle, up: boolean): boolean {
  const d = lc.details.direction;
  return d !== undefined && d !== 'flat' && d !== (up ? 'up' : 'down');
}

/** The records a trend's autocorrelation is measured over: φ is a property of the run, and ~120 records
 * estimate it to ±0.2 (an AR(1) φ of 0.6 read as 0 to 0.95), 400 to about ±0.1. */
const PHI_RECORDS = 400;
/** How many windows the noise of a trend is measured over (the two compared and those before them). */
const NOISE_WINDOWS = 8;
/** A plateau is flat by this many standard errors of the difference of its window means beyond the noise of
 * those two windows alone (measured there, so that a noisy climb just before it does not hide it). One: the se
 * read as AR(1) is already wider than independent records' (30 seeded plateaus at 0.15 under AR(1) noise, φ 0.6:
 * with 1.5, 4 were caught 63-93 records in and 1 missed; with 1, all 28-64 records in). */
const FLAT_SIGMAS = 1;

/** Trend: the mean of the last `window` records against the mean of the `window` before them, (with
 * `breakSigmas`) the last records against the line the metric was on (breaks.ts), and (with `declineSigmas`) the
 * last records against the best level of the horizon before them (drawdown.ts): one alert a metric. */
export function evaluateTrend(ctx: RunContext, rule: TrendRule): void {
  const { store, runId } = ctx;
  const w = rule.window;
  const span = NOISE_WINDOWS * w;
  const breaks = rule.breakSigmas > 0;
  const declines = rule.declineSigmas > 0 && rule.direction !== 'flat' && rule.direction !== 'up';
  const dw = rule.declineWindow;
  const reach = Math.max(span, breaks ? breakSpan(rule.breakFit) : 0, PHI_RECORDS, declines ? rule.declineHorizon + dw : 0);
  for (const metric of ctx.expand(rule.metrics)) {
    const { cursor, from, fresh } = resume(ctx, rule.id, metric);
    if (fresh.length === 0) continue;
    const history = cursor ? store.points.upTo(runId, metric, from, reach - 1, true) : [];
    // the history, then the fresh records, as columns (no array of both built, then mapped)
    const { steps, values } = columnsOf(history, fresh);
    const sums = new Sums(values);
    // the line is learnt again after each break (a fit across one would bend towards it): from this step on
    let breakFrom = Number(cursor?.state.breakFrom ?? START);
    let lineFrom = 0;
    while (lineFrom < steps.length && steps[lineFrom]! < breakFrom) lineFrom++;
    if (lineFrom === steps.length) lineFrom = 0; // no step that far on yet: as findIndex's -1
    // records in a row the windows' change (or the plateau) has held: it fires after `for` of them
    let held = Number(cursor?.state.held ?? 0);
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric }, ctx.now, {
      quietFor: rule.quietFor,
      quiet: Number(cursor?.state.quiet ?? 0),
    });
    // the same for every record: worked out once (the loop runs for every record of a backfill)
    const root2w = Math.sqrt(2 / w);
    const rootW = Math.sqrt(w);
    const flatRule = rule.direction === 'flat';
    // one closure for the loop, judging a break against the record's scale
    let scale = 0;
    const accept = (b: Break): boolean => moved(b, rule, scale);
    // the run's records before the history read here (a cursor saved before they were counted: past any warm-up)
    const seen = cursor ? Number(cursor.state.seen ?? Number.MAX_SAFE_INTEGER / 2) : 0;
    const earlier = seen - history.length;
    // nothing is judged in the warm-up: the learning rate ramps, and a few records tell nothing of the noise
    const first = Math.max(history.length, 2 * w - 1, rule.warmup - earlier);
    const peaks = declines ? new PeakWindow(sums, 2 * dw, dw, rule.declineHorizon, 0, first) : null;
    for (let i = first; i < values.length; i++) {
      const before = sums.mean(i - 2 * w + 1, i - w + 1);
      const after = sums.mean(i - w + 1, i + 1);
      const delta = after - before;
      // the noise: k standard errors of the difference of two window means, the records read as AR(1): a
      // batch-mean reward meanders (data order, curriculum), and neighbours that move together make window
      // means swing more than independent records would (stats.ts: windowDiffSe)
      const sd = sums.sd(Math.max(0, i - span + 1), i + 1);
      const phi = sums.phi(values, Math.max(0, i - PHI_RECORDS + 1), i + 1);
      const inflate = longRunFactor(phi);
      const diffSe = phi > 0 ? windowDiffSe(phi, w) : root2w;
      const noise = rule.sigmas * sd * diffSe;
      const real = Math.abs(delta) > noise;
      // a positive level well above its noise: change in % of the level; else (near or below 0, as
      // minimind's -2.3 -> -1.6) in % of the range the metric spanned over the last windows
      const onLevel = before > 0 && before >= 3 * sd;
      const range = onLevel ? 0 : spread(values, Math.max(0, i - span + 1), i + 1);
      scale = onLevel ? before : range;
      const rel = ratio(delta, scale);
      const brk = breaks ? lineBreak(sums, i, rule.breakFit, lineFrom, accept, inflate) : null;
      const brkDelta = brk ? brk.observed - brk.before : 0;
      const brkRel = ratio(brkDelta, scale);
      const broke = brk !== null;
      if (broke) {
        lineFrom = i - brk.m + 1;
        breakFrom = steps[lineFrom]!;
      }
      const upWindows = rel > rule.change && delta > rule.minDelta && real;
      const downWindows = rel < -rule.change && -delta > rule.minDelta && real;
      const dd = peaks && i >= 3 * dw - 1 ? drawdown(sums, peaks, i, dw, 2 * dw, sd, inflate, PHI_RECORDS) : null;
      const ddScale = onLevel && dd ? dd.peak : scale;
      const ddRel = dd ? ratio(dd.now - dd.peak, ddScale) : 0;
      const declined = dd !== null && fell(dd, ddRel, rule);
      const up = upWindows || (broke && brkDelta > 0);
      const down = downWindows || declined || (broke && brkDelta < 0);
      // flat only on a positive level: on a reward near or below 0, "flat below 0.3" cannot tell stuck from a
      // slow climb (the range it is measured against grows with the climb); only a plateau rule asks
      const flat =
        flatRule && onLevel && isFlat(sums, i, w, delta, scale, after, rule, diffSe, inflate / rootW);
      const step = steps[i]!;
      const isBad = flatRule ? flat : (up && rule.direction !== 'down') || (down && rule.direction !== 'up');
      held = (flatRule ? flat : upWindows || downWindows || declined) ? held + 1 : 0;
      // a break fires at once: it is judged once (the line is learnt again after it)
      const firing = broke || held >= rule.for;
      // hysteresis both ways: a trend settles once the change is back under half the threshold or within
      // half the noise; a plateau ends once the metric really moves (twice the threshold, beyond the noise)
      // or climbs past `below` (else it flaps at the edge)
      const settled =
        rule.direction === 'flat'
          ? (Math.abs(rel) >= 2 * rule.change && real) || after >= (rule.below ?? Infinity)
          : (Math.abs(rel) <= rule.change / 2 || Math.abs(delta) <= noise / 2) && !(dd !== null && fell(dd, ddRel, rule, 2));
      // most steps change nothing: skip the words (and, while firing, the direction check) for those
      if (isBad ? lc.state === 'firing' && lc.quiet === 0 && !turned(lc, up) : !lc.wouldChange('ok', settled)) continue;
      const of = onLevel ? '' : ' of its range';
      const pct = (r: number): string =>
        Number.isFinite(r) ? `${r >= 0 ? '+' : ''}${(r * 100).toFixed(1)}%${of}` : 'from 0';
      const details = {
        from: before,
        to: after,
        change: rel,
        window: w,
        noise,
        scale: onLevel ? 'level' : 'range',
        ...(brk && { line: { ...brk } }),
        ...(declined && { best: { mean: dd.peak, step: steps[dd.peakEnd], window: dw, z: dd.z } }),
      };
      let bad: { severity: string; direction: string; summary: () => string } | null = null;
      if (rule.direction === 'flat') {
        if (flat) {
          bad = {
            severity: rule.severity,
            direction: 'flat',
            summary: () => `${metric} flat at ${formatValue(after)} (${pct(rel)} over ${w} steps), below ${formatValue(rule.below ?? Infinity)}`,
          };
        }
      } else if ((up && rule.direction !== 'down') || (down && rule.direction !== 'up')) {
        const arrow = up ? '↗' : '↘';
        // the windows' numbers when they show it; else the line's (a fall from a climb)
        const byWindows = up ? upWindows : downWindows;
        bad = {
          severity: up ? rule.rise : rule.fall,
          direction: up ? 'up' : 'down',
          summary: () =>
            byWindows || (!brk && !declined)
              ? `${metric} ${arrow} ${pct(rel)} (${formatValue(before)} → ${formatValue(after)}) over ${w}-step windows`
              : brk
                ? `${metric} ${arrow} ${pct(brkRel)} (${formatValue(brk.before)} → ${formatValue(brk.observed)} over ${brk.m}-step windows; ` +
                  `${Math.abs(brk.z).toFixed(1)}σ off its course of ${rule.breakFit} steps)`
                : `${metric} ${arrow} ${pct(ddRel)} from its best ${dw}-step mean of the last ${rule.declineHorizon} steps ` +
                  `(${formatValue(dd!.peak)} to step ${steps[dd!.peakEnd]} → ${formatValue(dd!.now)} now)`,
        };
      }
      if (bad && lc.state !== null && lc.details.direction !== undefined && lc.details.direction !== bad.direction) {
        // a rise that turns into a fall is a new incident
        const turned = bad.direction;
        const describe = () => ({ summary: `${metric} turned ${turned}`, details });
        lc.apply(step, { kind: 'ok', recovered: true, final: true, describe });
      }
      if (bad) {
        const { summary, direction } = bad;
        lc.apply(step, { kind: 'bad', firing, severity: bad.severity, describe: () => ({ summary: summary(), details: { ...details, direction } }) });
      } else {
        lc.apply(step, {
          kind: 'ok',
          recovered: settled,
          describe: () => ({ summary: `${metric} ${pct(rel)} (${formatValue(before)} → ${formatValue(after)})`, details }),
        });
      }
    }
    const learnt = breaks ? { breakFrom } : {};
    const counted = { seen: seen + fresh.length };
    store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, { quiet: lc.quiet, held, ...learnt, ...counted });
  }
}

/** The records before the fresh ones, then those, as a column of steps and one of values. */
function columnsOf(
  history: ReadonlyArray<{ step: number; value: number }>,
  fresh: ReadonlyArray<{ step: number; value: number }>,
): { steps: number[]; values: number[] } {
  const n = history.length + fresh.length;
  const steps = new Array<number>(n);
  const values = new Array<number>(n);
  for (let k = 0; k < history.length; k++) {
    steps[k] = history[k]!.step;
    values[k] = history[k]!.value;
  }
  for (let k = 0, at = history.length; k < fresh.length; k++, at++) {
    steps[at] = fresh[k]!.step;
    values[at] = fresh[k]!.value;
  }
  return { steps, values };
}

/** A plateau at record i (on a positive level): the two windows' means differ by less than `change` of the level,
 * beyond the noise of those two windows alone, and the level is below `below` beyond the noise of a window mean
 * (else a noisy level above it dips in). The noise is σ_d of the two windows read as AR(1), as the trend's gate:
 * `diffSe` is the se of the difference of the window means and `meanSe` that of one window mean, both in units of
 * σ_d (windowDiffSe; longRunFactor / √w): a meandering reward's windows agree by chance more often than
 * independent records' would, and that is no plateau. */
function isFlat(
  sums: Sums, i: number, w: number, delta: number, scale: number, after: number, rule: TrendRule, diffSe: number,
  meanSe: number,
): boolean {
  const localSd = sums.sd(i - 2 * w + 1, i + 1);
  const margin = (rule.sigmas / 2) * localSd * meanSe;
  // or the window means' own spread, where they show a meander wider than φ says (Sums.batchSe)
  const se = Math.max(localSd * diffSe, Math.SQRT2 * sums.batchSe(i, w, PHI_RECORDS));
  const flatBy = Math.abs(delta) + FLAT_SIGMAS * se;
  return flatBy / scale < rule.change && after + margin < (rule.below ?? Infinity);
}

/** A fall from the best level beyond `declineSigmas` standard errors, `change` and `minDelta` (each over `by`: a
 * decline has settled once it is back within half of them). */
function fell(dd: Drawdown, rel: number, rule: TrendRule, by = 1): boolean {
  return dd.z > rule.declineSigmas / by && -rel > rule.change / by && dd.peak - dd.now > rule.minDelta / by;
}

/** A change in units of `scale` (a level or a range); from 0 it is infinite. */
function ratio(delta: number, scale: number): number {
  return scale !== 0 ? delta / scale : delta === 0 ? 0 : Math.sign(delta) * Infinity;
}

/** A break counts beyond the noise of the line and by `change` from the m records before it: a climb that
 * levels off is off its course but has not fallen (a plateau, which the flat rule judges). */
function moved(b: Break, rule: TrendRule, scale: number): boolean {
  const d = b.observed - b.before;
  return (
    Math.abs(b.z) > rule.breakSigmas &&
    Math.sign(b.z) === Math.sign(d) &&
    Math.abs(ratio(d, scale)) > rule.change &&
    Math.abs(d) > rule.minDelta
  );
}

function spread(values: readonly number[], from: number, to: number): number {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = from; i < to; i++) {
    const v = values[i] as number;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return hi - lo;
}

/** Milestone: when the run first reaches the epoch, the recent mean must satisfy the rule; the alert
 * resolves once it does. */
export function evaluateMilestone(ctx: RunContext, rule: MilestoneRule): void {
  const { store, runId } = ctx;
  const cursor = store.alerts.cursor(runId, rule.id, rule.metric);
  let reached = cursor?.state.reached === true;
  // the line as judged at the epoch (in the run's range, for a `unit` milestone): its recovery is judged by it too
  let line = typeof cursor?.state.line === 'number' ? cursor.state.line : rule.value;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: rule.metric }, ctx.now);
  if (reached && lc.state === null) return; // judged and met: nothing more to watch
  const from = cursor?.step ?? START;
  const epochs = ctx.after('epoch', from);
  if (epochs.length === 0) return;
  const detailsOf = (epoch: number | null, m: number, n: number) => ({ epoch, mean: m, window: n });
  let watchFrom = from; // recovery is watched on the metric's own steps after this one
  // a `unit` milestone's range of the metric so far, carried in the cursor from the run's first record (a cursor
  // saved without it: undefined, read from the store at the epoch)
  let range: Range | null | undefined = cursor ? (cursor.state.range as Range | null | undefined) : null;
  if (!reached) {
    const at = epochs.find((e) => e.value >= rule.epoch - 1e-9);
    if (rule.scale === 'unit' && range !== undefined) {
      const upTo = (at ?? epochs[epochs.length - 1]!).step;
      range = widen(range, ctx.after(rule.metric, from), upTo);
    }
    if (at) {
      const recent = store.points.upTo(runId, rule.metric, at.step, rule.window, true).map((p) => p.value);
      // a run that does not log the metric yet is judged when it first does, at a later epoch record
      if (recent.length > 0) {
        reached = true;
        watchFrom = at.step;
        const m = mean(recent, 0, recent.length);
        const { value: target, scaled } = targetOf(ctx, rule, at.step, range);
        line = target;
        if (!compare(m, rule.op, target)) {
          // one cause, one page: a run a critical alert is firing for (mode_collapse since step 5), or one a rule
          // that explains the miss is firing for (zero_signal_too_easy), misses its milestones because of it; they
          // are recorded as info (terminal, digest, report), naming that alert
          const paged = ctx.alerts
            .firing()
            .find(
              (a) =>
                a.rule !== rule.id &&
                (a.severity === 'critical' || rule.explainedBy.includes(a.rule)) &&
                (a.fired_step ?? a.started_step) <= at.step,
            );
          const since = paged ? `; ${paged.rule} ${paged.severity} since step ${paged.fired_step ?? paged.started_step}` : '';
          // the preset's numbers are assumptions about the run (one GRPO analysis' rewards at its epochs): a miss of
          // one is news for the report, not a page; the user's own target pages
          const severity = paged || rule.assumed ? 'info' : rule.severity;
          lc.apply(at.step, {
            kind: 'bad',
            firing: true,
            severity,
            describe: () => ({
              summary: `${rule.metric} ${formatValue(m)} at epoch ${formatValue(at.value)}: expected ${rule.op} ${formatValue(target)}${scaled} by epoch ${formatValue(rule.epoch)} (mean of last ${recent.length})${since}`,
              details: { ...detailsOf(at.value, m, recent.length), target, ...(paged && { covered: paged.rule }) },
            }),
          });
        }
      }
    }
  }
  if (lc.state === 'firing') {
    // one query for the whole batch: the window before, then the new values, with a rolling mean
    const before = store.points.upTo(runId, rule.metric, watchFrom, rule.window, true).map((p) => p.value);
    const fresh = ctx.after(rule.metric, watchFrom).filter((p) => Number.isFinite(p.value));
    const window = [...before];
    for (const p of fresh) {
      window.push(p.value);
      if (window.length > rule.window) window.shift();
      const m = mean(window, 0, window.length);
      if (compare(m, rule.op, line)) {
        const n = window.length;
        lc.apply(p.step, {
          kind: 'ok',
          recovered: true,
          describe: () => ({ summary: `${rule.metric} ${formatValue(m)} now ${rule.op} ${formatValue(line)}`, details: detailsOf(null, m, n) }),
        });
        break;
      }
    }
  }
  const state = rule.scale === 'unit' && !reached && range !== undefined ? { reached, line, range } : { reached, line };
  store.alerts.saveCursor(runId, rule.id, rule.metric, epochs[epochs.length - 1]!.step, state);
}

/** The lowest and highest finite value of a series so far. */
type Range = [lo: number, hi: number];

/** `r` widened by the finite values of `points` at or before `upTo`. */
function widen(r: Range | null, points: ReadonlyArray<{ step: number; value: number }>, upTo: number): Range | null {
  let [lo, hi] = r ?? [Infinity, -Infinity];
  for (const { step, value } of points) {
    if (step > upTo || !Number.isFinite(value)) continue;
    if (value < lo) lo = value;
    if (value > hi) hi = value;
  }
  return lo <= hi ? [lo, hi] : null;
}

/** The line a milestone is judged by at `step`: its value, or for a `unit` milestone on a run whose metric has
 * left [0, 1], that fraction of the run's range up to the step (a reward in [-1, 0] or in the hundreds): `range`
 * as the evaluations carried it, else (a cursor from before they did) read from the store. */
function targetOf(
  ctx: RunContext, rule: MilestoneRule, step: number, range: Range | null | undefined,
): { value: number; scaled: string } {
  if (rule.scale === 'absolute') return { value: rule.value, scaled: '' };
  const r = range !== undefined ? range : widen(null, ctx.store.points.upTo(ctx.runId, rule.metric, step, Number.MAX_SAFE_INTEGER, true), step);
  const [lo, hi] = r ?? [Infinity, -Infinity];
  if (lo >= 0 && hi <= 1) return { value: rule.value, scaled: '' };
  return {
    value: lo + rule.value * (hi - lo),
    scaled: ` (${formatValue(rule.value)} of its range ${formatValue(lo)}..${formatValue(hi)})`,
  };
}
