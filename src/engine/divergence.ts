import { formatValue } from '../render/numbers.ts';
import type { RunContext } from './evaluate.ts';
import { Lifecycle } from './lifecycle.ts';
import type { DivergenceRule } from './rules.ts';
import { mean, successiveSd } from './stats.ts';

/** How many windows the noise of each metric is measured over. */
const NOISE_WINDOWS = 4;

interface Move {
  metric: string;
  before: number;
  after: number;
  delta: number;
}

const shown = (m: Move, arrow: string): string => `${m.metric} ${arrow} ${formatValue(m.before)} → ${formatValue(m.after)}`;

/**
 * Divergence (reward hacking): at each step, each metric's mean of the last `window` records against the
 * `window` before; the rule fires while one metric has risen and another fallen, both for real (past
 * `minDelta` and the noise). A metric without a record at a step keeps its last judgement. A step is judged once
 * each metric has logged it or a later one is logged.
 */
export function evaluateDivergence(ctx: RunContext, rule: DivergenceRule): void {
  const { store, runId } = ctx;
  const metrics = ctx.expand(rule.metrics);
  if (metrics.length < 2) return;
  const key = rule.metrics.join(' ');
  const cursor = store.alerts.cursor(runId, rule.id, key);
  const from = cursor?.step ?? -1;
  const w = rule.window;
  const span = NOISE_WINDOWS * w;
  const series = metrics.map((metric) => {
    const history = cursor ? store.points.upTo(runId, metric, from, span - 1, true) : [];
    const points = [...history, ...ctx.after(metric, from).filter((p) => Number.isFinite(p.value))];
    const steps = points.map((p) => p.step);
    return { metric, steps, values: points.map((p) => p.value), firstFresh: history.length, at: -1 };
  });
  // the newest step, unless every metric has logged it, waits for a later one: its record may not be whole yet (a
  // console log's step spreads over lines that can land in two reads), and a step judged without one of its metrics
  // is not judged again when it comes
  const lasts = series.map((s) => s.steps[s.steps.length - 1] ?? -Infinity);
  const newest = Math.max(...lasts);
  const upTo = lasts.every((l) => l === newest) ? newest : newest - 1;
  const steps = [...new Set(series.flatMap((s) => s.steps.slice(s.firstFresh)))].filter((t) => t <= upTo).sort((a, b) => a - b);
  if (steps.length === 0) return;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: key }, ctx.now, {
    quietFor: rule.quietFor,
    quiet: Number(cursor?.state.quiet ?? 0),
  });
  const moveOf = (s: (typeof series)[number]): Move | null => {
    const i = s.at;
    if (i + 1 < 2 * w) return null;
    const before = mean(s.values, i - 2 * w + 1, i - w + 1);
    const after = mean(s.values, i - w + 1, i + 1);
    const delta = after - before;
    const noise = rule.sigmas * successiveSd(s.values, Math.max(0, i - span + 1), i + 1) * Math.sqrt(2 / w);
    return Math.abs(delta) > rule.minDelta && Math.abs(delta) > noise ? { metric: s.metric, before, after, delta } : null;
  };
  for (const step of steps) {
    for (const s of series) while (s.at + 1 < s.steps.length && (s.steps[s.at + 1] as number) <= step) s.at++;
    const moves = series.map(moveOf).filter((m): m is Move => m !== null);
    const up = moves.find((m) => m.delta > 0);
    const down = moves.find((m) => m.delta < 0);
    if (up && down) {
      lc.hold(step, 1, 1, rule.severity, () => ({
        summary:
          `${shown(up, '↗')} while ${shown(down, '↘')} over ${w}-step windows: ` +
          "one reward rising at another's expense (reward hacking?)",
        details: { rising: up, falling: down, window: w },
      }));
    } else if (lc.wouldChange('ok', true)) {
      const describe = () => ({ summary: 'the rewards move together again', details: { window: w } });
      lc.apply(step, { kind: 'ok', recovered: true, describe });
    }
  }
  store.alerts.saveCursor(runId, rule.id, key, steps[steps.length - 1]!, { quiet: lc.quiet });
}
