import { range } from '../engine/stats.ts';
import { UserError } from '../errors.ts';
import { lttbIndices } from '../render/lttb.ts';
import { formatValue, jsonValue } from '../render/numbers.ts';
import { overview } from '../render/sparkline.ts';
import type { Columns } from '../store/contract.ts';
import { resolveRun, type CommandContext, type Reply } from './reply.ts';

/** Rows of the text table; the full series is in `data` (`--json`) and in the chart. */
const TABLE_ROWS = 10;
/** Points handed to the chart, which down-samples them again to what it draws. */
const CHART_POINTS = 2000;

/** `reward history [run] [--metric NAME] [--last N]`: the series of one metric, steps ascending. Works on
 * the in-memory columns of the series, so that a million points answer in a fraction of a second; the
 * point-by-point list with epochs is built only when asked for (`data`, i.e. `--json`). */
export async function rewardHistory(
  { store }: CommandContext,
  args: { run?: string; metric?: string; last?: number },
): Promise<Reply> {
  const run = await resolveRun(store, args.run);
  const metric = args.metric ?? 'reward';
  const known = await store.metricsOf(run.id);
  if (!known.includes(metric)) {
    throw new UserError(`run '${run.name}' has no metric '${metric}' (it logs: ${known.join(', ') || 'nothing yet'})`);
  }
  if (args.last !== undefined && (!Number.isInteger(args.last) || args.last < 1)) {
    throw new UserError(`--last must be a whole number of at least 1, not ${args.last}`);
  }
  const cols = await store.columns(run.id, metric);
  const from = args.last === undefined ? 0 : Math.max(0, cols.length - args.last);
  const steps = cols.steps.subarray(from, cols.length);
  const values = cols.values.subarray(from, cols.length);
  const n = steps.length;
  const { min, max } = range(values);
  const stats = Number.isFinite(min)
    ? `min ${formatValue(min)}  max ${formatValue(max)}  last ${formatValue(n > 0 ? (values[n - 1] as number) : NaN)}`
    : 'no finite values';
  const tail = Array.from({ length: Math.min(TABLE_ROWS, n) }, (_, k) => n - Math.min(TABLE_ROWS, n) + k);
  const tailEpochs = await store.epochsAt(run.id, tail.map((i) => steps[i] as number));
  return {
    title: `${metric} of ${run.name}: ${n} point${n === 1 ? '' : 's'}` + (n > 0 ? `, steps ${steps[0]}..${steps[n - 1]}` : ''),
    fields: [],
    lines: [
      overview(values),
      stats,
      ...tail.map((i, k) => {
        const epoch = tailEpochs[k] ?? null;
        return `step ${String(steps[i]).padStart(6)}  epoch ${epoch === null ? '   -' : formatValue(epoch).padStart(4)}  ${formatValue(values[i] as number)}`;
      }),
    ],
    chart: { title: `${metric} of ${run.name}`, metric, points: chartPoints(steps, values) },
    // the epoch beside each point (--json) is a second series: read only when asked for
    get data() {
      const epochs = known.includes('epoch') ? store.columns(run.id, 'epoch') : Promise.resolve(null);
      return epochs.then((e) => ({ run: run.name, metric, points: pointsWithEpochs(steps, values, e) }));
    },
  };
}

/** Each point with the epoch logged at its step (null where none was): both columns ascend by step. */
function pointsWithEpochs(steps: Float64Array, values: Float64Array, epochs: Columns | null) {
  const out: Array<{ step: number; epoch: number | null; value: number | string }> = [];
  let j = 0;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i] as number;
    while (epochs && j < epochs.length && (epochs.steps[j] as number) < step) j++;
    const epoch = epochs && j < epochs.length && epochs.steps[j] === step ? (epochs.values[j] as number) : null;
    const shown = epoch === null || Number.isNaN(epoch) ? null : epoch;
    out.push({ step, epoch: shown, value: jsonValue(values[i] as number) });
  }
  return out;
}

/** The finite points, down-sampled with LTTB so that the chart gets thousands of points, not millions. */
function chartPoints(steps: Float64Array, values: Float64Array): Array<{ step: number; value: number }> {
  const xs = new Float64Array(steps.length);
  const ys = new Float64Array(steps.length);
  let m = 0;
  for (let i = 0; i < steps.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v)) continue;
    xs[m] = steps[i] as number;
    ys[m++] = v;
  }
  return Array.from(lttbIndices(xs, ys, m, CHART_POINTS), (i) => ({ step: xs[i] as number, value: ys[i] as number }));
}
