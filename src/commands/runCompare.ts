/** `run compare`: two runs side by side, metric by metric, aligned by epoch (else step), with a chart of both. */
import { UserError } from '../lib/errors.ts';
import { compareRuns, type MetricComparison } from '../report/compare.ts';
import { formatValue } from '../lib/numbers.ts';
import { resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

function line(m: MetricComparison, a: string, b: string, by: string): string {
  const values = `${a} ${formatValue(m.a)}, ${b} ${formatValue(m.b)} at ${by} ${formatValue(m.at)}`;
  if (m.better === undefined) return `${m.metric}: ${values} (no better side)`;
  if (m.ahead === 'even') return `${m.metric}: even (${values})`;
  return `${m.metric}: ${m.ahead === 'a' ? a : b} ahead (${values}; ${m.better} is better)`;
}

/** `run compare A B [metric]`: both runs aligned by epoch (else step), a line per metric, a chart of both. */
export async function runCompare(
  { store, seesRun }: CommandContext,
  args: { a: string; b: string; metric?: string },
): Promise<Reply> {
  const a = await resolveRun(store, args.a, seesRun);
  const b = await resolveRun(store, args.b, seesRun);
  if (a.id === b.id) throw new UserError('compare two different runs');
  const c = await compareRuns(store, a, b, args.metric);
  if (args.metric && c.metrics.length === 0)
    throw new UserError(`${a.name} and ${b.name} do not both log '${args.metric}'`);
  const point = (p: { x: number; value: number }) => ({ step: p.x, value: p.value });
  return {
    title: `${a.name} vs ${b.name}, by ${c.by}`,
    fields: [],
    lines:
      c.metrics.length === 0 ? ['no metric logged by both runs'] : c.metrics.map((m) => line(m, a.name, b.name, c.by)),
    ...(c.chart && c.chart.a.length + c.chart.b.length > 1
      ? {
          chart: {
            title: `${c.chart.metric}: ${a.name} (blue) vs ${b.name} (orange)`,
            metric: c.chart.metric,
            points: c.chart.a.map(point),
            second: { points: c.chart.b.map(point) },
            xTitle: c.by,
          },
        }
      : {}),
    data: c,
  };
}
