/**
 * `reward history`: one metric's series of a run, from the store's digest (a table, a chart, the full list on --json).
 */
import { UserError } from '../lib/errors.ts';
import { formatValue, jsonValue } from '../lib/numbers.ts';
import { sparkline } from '../render/sparkline.ts';
import type { Columns } from '../store/contract.ts';
import { newestFrom, OVERVIEW_WIDTH } from '../store/seriesDigest.ts';
import { resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/** Rows of the text table; the full series is in `data` (`--json`) and in the chart. */
const TABLE_ROWS = 10;

/** `reward history [run] [--metric NAME] [--last N]`: the series of one metric, steps ascending. Shows its digest
 * (`SeriesDigest`: overview, extremes, newest rows, chart points), which a store makes without handing a million
 * points to JavaScript; the point-by-point list with epochs is read only when asked for (`data`, i.e. `--json`). */
export async function rewardHistory(
  { store, seesRun }: CommandContext,
  args: { run?: string; metric?: string; last?: number },
): Promise<Reply> {
  const run = await resolveRun(store, args.run, seesRun);
  const metric = args.metric ?? 'reward';
  const known = await store.points.metricsOf(run.id);
  if (!known.includes(metric)) {
    throw new UserError(`run '${run.name}' has no metric '${metric}' (it logs: ${known.join(', ') || 'nothing yet'})`);
  }
  if (args.last !== undefined && (!Number.isInteger(args.last) || args.last < 1)) {
    throw new UserError(`--last must be a whole number of at least 1, not ${args.last}`);
  }
  const d = await store.points.digest(run.id, metric, args.last);
  const n = d.length;
  const stats = Number.isFinite(d.min)
    ? `min ${formatValue(d.min)}  max ${formatValue(d.max)}  last ${formatValue(d.tail.values.at(-1) ?? NaN)}`
    : 'no finite values';
  const tail = { steps: d.tail.steps.slice(-TABLE_ROWS), values: d.tail.values.slice(-TABLE_ROWS) };
  const tailEpochs = await store.points.epochsAt(run.id, tail.steps);
  return {
    title:
      `${metric} of ${run.name}: ${n} point${n === 1 ? '' : 's'}` +
      (n > 0 ? `, steps ${d.firstStep}..${d.lastStep}` : ''),
    fields: [],
    lines: [sparkline(d.overview, OVERVIEW_WIDTH), stats],
    // a table aligned by spaces: a code block, the only text chat shows in a fixed-width font
    blocks:
      tail.steps.length === 0
        ? []
        : [
            {
              title: `the last ${tail.steps.length} point${tail.steps.length === 1 ? '' : 's'}`,
              code: tail.steps
                .map((step, k) => {
                  const epoch = tailEpochs[k] ?? null;
                  return `step ${String(step).padStart(6)}  epoch ${epoch === null ? '   -' : formatValue(epoch).padStart(4)}  ${formatValue(tail.values[k] as number)}`;
                })
                .join('\n'),
            },
          ],
    chart: { title: `${metric} of ${run.name}`, metric, points: d.chart },
    // the epoch beside each point (--json) is a second series: read only when asked for
    get data() {
      return (async () => {
        const cols = await store.points.columns(run.id, metric);
        const from = newestFrom(cols.length, args.last);
        const epochs = known.includes('epoch') ? await store.points.columns(run.id, 'epoch') : null;
        const [steps, values] = [cols.steps.subarray(from, cols.length), cols.values.subarray(from, cols.length)];
        return { run: run.name, metric, points: pointsWithEpochs(steps, values, epochs) };
      })();
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
