import { UserError } from '../config/load.ts';
import { formatValue, jsonValue } from '../render/numbers.ts';
import { overview } from '../render/sparkline.ts';
import { resolveRun, type CommandContext, type Reply } from './reply.ts';

/** Rows of the text table; the full series is in `data` (and, with the chat issue, in the chart). */
const TABLE_ROWS = 10;

/** `reward history [run] [--metric NAME] [--last N]`: the series of one metric, steps ascending. */
export function rewardHistory(
  { store }: CommandContext,
  args: { run?: string; metric?: string; last?: number },
): Reply {
  const run = resolveRun(store, args.run);
  const metric = args.metric ?? 'reward';
  const known = store.points.metricsOf(run.id);
  if (!known.includes(metric)) {
    throw new UserError(`run '${run.name}' has no metric '${metric}' (it logs: ${known.join(', ') || 'nothing yet'})`);
  }
  if (args.last !== undefined && (!Number.isInteger(args.last) || args.last < 1)) {
    throw new UserError(`--last must be a whole number of at least 1, not ${args.last}`);
  }
  const points = store.points.series(run.id, metric, args.last);
  const values = points.map((p) => p.value);
  const last = points[points.length - 1];
  const { min, max } = range(values);
  const stats = Number.isFinite(min)
    ? `min ${formatValue(min)}  max ${formatValue(max)}  last ${formatValue(last?.value ?? NaN)}`
    : 'no finite values';
  return {
    title: `${metric} of ${run.name}: ${points.length} point${points.length === 1 ? '' : 's'}` +
      (points.length > 0 ? `, steps ${points[0]?.step}..${last?.step}` : ''),
    fields: [],
    lines: [
      overview(values),
      stats,
      ...points.slice(-TABLE_ROWS).map(
        (p) => `step ${String(p.step).padStart(6)}  epoch ${p.epoch === null ? '   -' : formatValue(p.epoch).padStart(4)}  ${formatValue(p.value)}`,
      ),
    ],
    chart: { title: `${metric} of ${run.name}`, metric, points: points.map((p) => ({ step: p.step, value: p.value })) },
    data: {
      run: run.name,
      metric,
      points: points.map((p) => ({ step: p.step, epoch: p.epoch, value: jsonValue(p.value) })),
    },
  };
}

/** Min and max of the finite values (a loop: spreading a million values into Math.min overflows the stack). */
function range(values: readonly number[]): { min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { min, max };
}
