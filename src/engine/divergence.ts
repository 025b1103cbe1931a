/** The divergence rule kind (reward hacking): one metric rises while another falls, both beyond their noise. */
import { formatValue } from '../lib/numbers.ts';
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { DivergenceRule } from './rules.ts';
import { Sums } from './breaks.ts';
import { windowDiffSe } from './stats.ts';

/** How many windows the noise of each metric is measured over. */
const NOISE_WINDOWS = 4;
/** The records the autocorrelation of a long window's metric is read over (as the trend's). */
const PHI_RECORDS = 400;
/** How far beyond its own noise each of two long-window moves must be for their gap to count (see `diverging`). */
const JOINT_SIGMAS = 3;

interface Move {
  metric: string;
  before: number;
  after: number;
  delta: number;
  window: number;
}

const shown = (m: Move, arrow: string): string =>
  `${m.metric} ${arrow} ${formatValue(m.before)} → ${formatValue(m.after)}`;

/**
 * Divergence (reward hacking): at each step, each metric's mean of the last `window` records against the
 * `window` before (and the same over `longWindow`); the rule fires while one metric has risen and another fallen
 * over the same windows, both for real (past `minDelta` and the noise, read as AR(1) as the trend's). A metric
 * without a record at a step keeps its last judgement. A step is judged once each metric has logged it or a later
 * one is logged.
 */
export function evaluateDivergence(ctx: RunContext, rule: DivergenceRule): void {
  const { store, runId } = ctx;
  const metrics = ctx.expand(rule.metrics);
  if (metrics.length < 2) return;
  const key = rule.metrics.join(' ');
  const cursor = store.alerts.cursor(runId, rule.id, key);
  const from = cursor?.step ?? -1;
  const w = rule.window;
  const windows = rule.longWindow > w ? [w, rule.longWindow] : [w];
  const span = Math.max(NOISE_WINDOWS * windows[windows.length - 1]!, rule.longWindow > w ? PHI_RECORDS : 0);
  const series = metrics.map((metric) => {
    const history = cursor ? store.points.upTo(runId, metric, from, span - 1, true) : [];
    const points = [...history, ...ctx.after(metric, from).filter((p) => Number.isFinite(p.value))];
    const steps = points.map((p) => p.step);
    const values = points.map((p) => p.value);
    return { metric, steps, values, sums: new Sums(values), firstFresh: history.length, at: -1 };
  });
  // the newest step, unless every metric has logged it, waits for a later one: its record may not be whole yet (a
  // console log's step spreads over lines that can land in two reads), and a step judged without one of its metrics
  // is not judged again when it comes
  const lasts = series.map((s) => s.steps[s.steps.length - 1] ?? -Infinity);
  const newest = Math.max(...lasts);
  const upTo = lasts.every((l) => l === newest) ? newest : newest - 1;
  const steps = [...new Set(series.flatMap((s) => s.steps.slice(s.firstFresh)))]
    .filter((t) => t <= upTo)
    .sort((a, b) => a - b);
  if (steps.length === 0) return;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: key }, ctx.now, {
    quietFor: rule.quietFor,
    quiet: Number(cursor?.state.quiet ?? 0),
  });
  /** each metric's move over two windows of w, with its noise (k standard errors of the difference of the means) */
  const moveOf = (s: (typeof series)[number], w: number): (Move & { se: number }) | null => {
    const i = s.at;
    if (i + 1 < 2 * w) return null;
    const before = s.sums.mean(i - 2 * w + 1, i - w + 1);
    const after = s.sums.mean(i - w + 1, i + 1);
    const delta = after - before;
    // below what either test asks of a move (minDelta; half of it in the long windows' gap test): no noise read
    if (!(Math.abs(delta) > (w > rule.window ? rule.minDelta / 2 : rule.minDelta))) return null;
    const from = Math.max(0, i - NOISE_WINDOWS * w + 1);
    // a long window's means meander with the records' autocorrelation (a batch-mean reward's): its se read as AR(1)
    const phi = w > rule.window ? s.sums.phi(s.values, Math.max(0, i - PHI_RECORDS + 1), i + 1) : 0;
    const se = s.sums.sd(from, i + 1) * windowDiffSe(phi, w);
    return { metric: s.metric, before, after, delta, window: w, se };
  };
  const real = (m: Move & { se: number }): boolean =>
    Math.abs(m.delta) > rule.minDelta && Math.abs(m.delta) > rule.sigmas * m.se;
  /** one metric up and another down over the same windows, the short ones first. Over the long windows, also a
   * pair whose gap opened by twice `minDelta` beyond `sigmas` standard errors of the gap, each of the two moving its
   * way by half `minDelta` and beyond JOINT_SIGMAS of its own: a component falling slowly under a rising one
   * (accuracy 0.38 → 0.10 over 200 steps) is beyond its own noise only ~80 steps in, the gap between them ~55 */
  const diverging = (): { up: Move; down: Move } | null => {
    for (const win of windows) {
      const moves = series.map((s) => moveOf(s, win)).filter((m) => m !== null);
      const up = moves.find((m) => m.delta > 0 && real(m));
      const down = moves.find((m) => m.delta < 0 && real(m));
      if (up && down) return { up, down };
      if (win === rule.window) continue;
      const half = rule.minDelta / 2;
      const rising = moves.filter((m) => m.delta > half && m.delta > JOINT_SIGMAS * m.se);
      const falling = moves.filter((m) => -m.delta > half && -m.delta > JOINT_SIGMAS * m.se);
      for (const u of rising)
        for (const d of falling) {
          const gap = u.delta - d.delta;
          if (gap > 2 * rule.minDelta && gap > rule.sigmas * Math.hypot(u.se, d.se)) return { up: u, down: d };
        }
    }
    return null;
  };
  for (const step of steps) {
    for (const s of series) while (s.at + 1 < s.steps.length && (s.steps[s.at + 1] as number) <= step) s.at++;
    const found = diverging();
    if (found) {
      const { up, down } = found;
      lc.hold(step, 1, 1, rule.severity, () => ({
        summary:
          `${shown(up, '↗')} while ${shown(down, '↘')} over ${up.window}-step windows: ` +
          "one reward rising at another's expense (reward hacking?)",
        details: { rising: up, falling: down, window: up.window },
      }));
    } else if (lc.wouldChange('ok', true)) {
      const describe = () => ({ summary: 'the rewards move together again', details: { window: w } });
      lc.apply(step, { kind: 'ok', recovered: true, describe });
    }
  }
  store.alerts.saveCursor(runId, rule.id, key, steps[steps.length - 1]!, { quiet: lc.quiet });
}
