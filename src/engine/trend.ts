/**
 * The trend rule kind: a window's mean against the window before (a rise, a fall, a plateau, a decline from the
 * best), judged against the series' own autocorrelated noise.
 */
import { formatValue } from '../lib/numbers.ts';
import { type Break, breakSpan, lineBreak, Sums } from './breaks.ts';
import { resume, START, type RunContext } from './context.ts';
import { type Drawdown, drawdown, PeakWindow } from './drawdown.ts';
import { Lifecycle } from './lifecycle.ts';
import type { TrendRule } from './rules.ts';
import { longRunFactor, windowDiffSe } from './stats.ts';

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
/** A plateau's pace is read optimistically, this many standard errors above the slope fitted to its records: a
 * reward is called stuck only when even that pace would not take it to its line in time. */
const PACE_SIGMAS = 2;
/** A noisy reward's plateau is read over this many windows; a quiet one's over one and a half, or two. */
const PLATEAU_WINDOWS = 4;
const QUIET_SPAN = 1.5;
/** The blocks a plateau's records are cut into for the spread of their means. */
const PACE_BLOCKS = 6;

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
  const reach = Math.max(
    span,
    breaks ? breakSpan(rule.breakFit) : 0,
    PHI_RECORDS,
    declines ? rule.declineHorizon + dw : 0,
  );
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
    let at = 0;
    // a break counts beyond the noise of the line read as AR(1), and beyond the spread of the m-record means
    // themselves (Sums.batchSe: a meander wider than φ says; the line's own se is about that of its 100 records'
    // mean), looked at only for a break the first reading lets through
    const accept = (b: Break): boolean =>
      moved(b, rule, scale) &&
      Math.abs(b.observed - b.expected) >
        rule.breakSigmas * sums.batchSe(at, b.m, PHI_RECORDS) * Math.sqrt(1 + b.m / rule.breakFit);
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
      // ...and beyond the spread of the window means themselves where they meander wider than φ says (Sums.batchSe;
      // worked out only for a change the first reading lets through)
      const real =
        Math.abs(delta) > noise && Math.abs(delta) > rule.sigmas * Math.SQRT2 * sums.batchSe(i, w, PHI_RECORDS);
      // a positive level well above its noise: change in % of the level; else (near or below 0, as
      // minimind's -2.3 -> -1.6) in % of the range the metric spanned over the last windows
      const onLevel = before > 0 && before >= 3 * sd;
      const range = onLevel ? 0 : spread(values, Math.max(0, i - span + 1), i + 1);
      scale = onLevel ? before : range;
      const rel = ratio(delta, scale);
      at = i;
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
      const gate = peaks && i >= 3 * dw - 1 ? declineGate(rule, earlier + i + 1) : null;
      const dd =
        peaks && gate !== null ? drawdown(sums, peaks, i, dw, 2 * dw, sd, inflate, PHI_RECORDS, gate / 2) : null;
      const ddScale = onLevel && dd ? dd.peak : scale;
      const ddRel = dd ? ratio(dd.now - dd.peak, ddScale) : 0;
      const declined = dd !== null && gate !== null && fell(dd, ddRel, rule, gate);
      const up = upWindows || (broke && brkDelta > 0);
      const down = downWindows || declined || (broke && brkDelta < 0);
      // flat only on a positive level: on a reward near or below 0, "flat below 0.3" cannot tell stuck from a
      // slow climb (the range it is measured against grows with the climb); only a plateau rule asks
      const plateau = flatRule && onLevel ? plateauOf(sums, i, w, after, rule, inflate, inflate / rootW) : null;
      const flat = plateau?.stuck === true;
      const pace = plateau?.pace;
      const step = steps[i]!;
      const isBad = flatRule ? flat : (up && rule.direction !== 'down') || (down && rule.direction !== 'up');
      held = (flatRule ? flat : upWindows || downWindows || declined) ? held + 1 : 0;
      // a break fires at once: it is judged once (the line is learnt again after it)
      const firing = broke || held >= rule.for;
      // hysteresis both ways: a trend settles once the change is back under half the threshold or within
      // half the noise; a plateau ends once the metric climbs past `below` or, read pessimistically, is on its way
      // there within half the horizon (else it flaps at the edge)
      const settled =
        rule.direction === 'flat'
          ? after >= (rule.below ?? Infinity) || plateau?.moving === true
          : (Math.abs(rel) <= rule.change / 2 || Math.abs(delta) <= noise / 2) &&
            !(dd !== null && gate !== null && fell(dd, ddRel, rule, gate, 2));
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
        ...(pace && { pace: { slope: pace.slope, se: pace.se, horizon: rule.plateauHorizon } }),
        ...(declined && { best: { mean: dd.peak, step: steps[dd.peakEnd], window: dw, z: dd.z } }),
      };
      let bad: { severity: string; direction: string; summary: () => string } | null = null;
      if (rule.direction === 'flat') {
        if (flat) {
          bad = {
            severity: rule.severity,
            direction: 'flat',
            summary: () =>
              `${metric} flat at ${formatValue(after)} (${pct(pace!.change)} over the last ${pace!.n} steps), below ` +
              `${formatValue(rule.below ?? Infinity)}: not there within ${rule.plateauHorizon} steps at that pace`,
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
        lc.apply(step, {
          kind: 'bad',
          firing,
          severity: bad.severity,
          describe: () => ({ summary: summary(), details: { ...details, direction } }),
        });
      } else {
        lc.apply(step, {
          kind: 'ok',
          recovered: settled,
          describe: () => ({
            summary: `${metric} ${pct(rel)} (${formatValue(before)} → ${formatValue(after)})`,
            details,
          }),
        });
      }
    }
    const learnt = breaks ? { breakFrom } : {};
    const counted = { seen: seen + fresh.length };
    store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, {
      quiet: lc.quiet,
      held,
      ...learnt,
      ...counted,
    });
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

/** A pace read over n records at record i: the least-squares slope, its standard error and the change it makes
 * over them in % of the level. */
interface Pace {
  n: number;
  slope: number;
  se: number;
  change: number;
}

/** The pace of the n records ending at index i: se = σ_d · √(1 + φ)/(1 − φ) / √Sxx, the records read as AR(1)
 * (`inflate`), or from the means of PACE_BLOCKS blocks of them where they meander wider than φ says (Sums.batchSe),
 * the larger (`wide`: worked out only when asked, as it costs a sort). */
function paceOf(sums: Sums, i: number, n: number, after: number, inflate: number, wide: boolean): Pace {
  const from = i - n + 1;
  const { slope, sxx } = sums.line(from, i + 1);
  const rootSxx = Math.sqrt(sxx);
  let se = (sums.sd(from, i + 1) * inflate) / rootSxx;
  if (wide) {
    // blocks within the records read: a fall just before a plateau is no noise of it
    const b = Math.floor(n / PACE_BLOCKS);
    se = Math.max(se, (sums.batchSe(i, b, n) * Math.sqrt(b)) / rootSxx);
  }
  return { n, slope, se, change: after > 0 ? (slope * n) / after : 0 };
}

/**
 * A plateau of a reward below its line at record i (on a positive level), judged by the distance to the line: the
 * reward is stuck when it has not moved by `change` of its level and even its optimistic pace (slope + PACE_SIGMAS ·
 * se) would not reach `below` within `plateauHorizon` records. A quiet reward is judged over the last one and a half
 * or two windows, where the change is read to within `change` (|change| + PACE_SIGMAS · se · n < `change` × level:
 * a plateau seen soon after it starts, its fit not reaching back into the climb before it); a noisy one over the
 * last four, where the change is under `change` (at 0.1 under a batch of 256's noise a 60-record slope is read to
 * about ±15% of the level, and a steady climb of +25% in 60 steps was called flat). It has ended when the
 * pessimistic pace would reach the line within half the horizon, or the reward is past it. A change in % of the level
 * alone cannot tell a plateau at 0.12 from a slow climb (5% of 0.12 is under the noise of a batch of 256); the
 * distance to the line can.
 */
function plateauOf(
  sums: Sums,
  i: number,
  w: number,
  after: number,
  rule: TrendRule,
  inflate: number,
  meanSe: number,
): { pace: Pace; stuck: boolean; moving: boolean } {
  const gap = (rule.below ?? Infinity) - after;
  const h = rule.plateauHorizon;
  const onCourse = (p: Pace): boolean => (p.slope + PACE_SIGMAS * p.se) * h >= gap;
  const still = (p: Pace): boolean => Math.abs(p.change) < rule.change && !onCourse(p);
  const long = i + 1 >= PLATEAU_WINDOWS * w ? paceOf(sums, i, PLATEAU_WINDOWS * w, after, inflate, false) : null;
  const two = paceOf(sums, i, 2 * w, after, inflate, false);
  const judged = long ?? two;
  const moving = (judged.slope - PACE_SIGMAS * judged.se) * (h / 2) >= gap;
  if (!(gap > (rule.sigmas / 2) * sums.sd(i - 2 * w + 1, i + 1) * meanSe))
    return { pace: judged, stuck: false, moving };
  for (const p of [paceOf(sums, i, Math.round(QUIET_SPAN * w), after, inflate, false), two]) {
    if (Math.abs(p.change) + (PACE_SIGMAS * p.se * p.n) / after < rule.change && !onCourse(p))
      return { pace: p, stuck: true, moving };
  }
  if (long && still(long)) {
    // the batch means' spread only for what is stuck by the first reading (a larger se can only make it less so)
    const wide = paceOf(sums, i, long.n, after, inflate, true);
    if (still(wide)) return { pace: wide, stuck: true, moving };
  }
  return { pace: judged, stuck: false, moving };
}

/** The decline's gate after `records` records of the run: `declineSigmas` up to 1,000 records, a quarter of a
 * standard error more per decade after (6.2 at 50,000). Each record is one more look at the run's best level: the
 * more looks, the further pure noise strays once, while a 1,500-step run that has fallen 10% must be told without
 * waiting for what a 50,000-step one needs. */
function declineGate(rule: TrendRule, records: number): number {
  return rule.declineSigmas + LOOK_SIGMAS * Math.log10(Math.max(records, 1_000) / 1_000);
}
const LOOK_SIGMAS = 0.25;

/** A fall from the best level beyond `gate` standard errors, `change` and `minDelta` (each over `by`: a decline
 * has settled once it is back within half of them). */
function fell(dd: Drawdown, rel: number, rule: TrendRule, gate: number, by = 1): boolean {
  return dd.z > gate / by && -rel > rule.change / by && dd.peak - dd.now > rule.minDelta / by;
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
