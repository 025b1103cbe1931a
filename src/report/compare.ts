/**
 * Two runs side by side: each metric both log, aligned by epoch when both log one (runs with other batch sizes reach
 * the same data at other steps), else by step, and compared where both have got to.
 */
import type { RunRow, StoreTx } from '../store/contract.ts';
import { finite, mean } from './stats.ts';

/** Which side is better, where there is one: the reward and pass rates up, groups without signal down. */
const BETTER: Record<string, 'higher' | 'lower'> = {
  reward: 'higher',
  pass_at_1: 'higher',
  pass_at_all: 'higher',
  frac_zero_std: 'lower',
  clipped_ratio: 'lower',
};
const betterOf = (metric: string): 'higher' | 'lower' | undefined =>
  BETTER[metric] ?? (/^rewards\/[^/]+$/.test(metric) ? 'higher' : undefined);

/** The metrics compared when none is named: those that say most about a GRPO run. */
export const COMPARED = [
  'reward',
  'frac_zero_std',
  'entropy',
  'grad_norm',
  'kl',
  'completion_length',
  'clipped_ratio',
  'pass_at_1',
];
/** How many of the last values at the common point are averaged (one record is noise). */
const TAIL = 10;

export interface Aligned {
  x: number;
  value: number;
}

export interface MetricComparison {
  metric: string;
  /** the mean of each run's last values up to `at` (the furthest point both reached) */
  a: number;
  b: number;
  at: number;
  better?: 'higher' | 'lower';
  /** a, b, or even (equal, or no better side) */
  ahead: 'a' | 'b' | 'even';
}

export interface Comparison {
  a: string;
  b: string;
  by: 'epoch' | 'step';
  metrics: MetricComparison[];
  /** the charted metric's series, aligned */
  chart: { metric: string; a: Aligned[]; b: Aligned[] } | null;
}

async function aligned(store: StoreTx, run: RunRow, metric: string, by: 'epoch' | 'step'): Promise<Aligned[]> {
  return (await store.points.series(run.id, metric))
    .filter((p) => Number.isFinite(p.value) && (by === 'step' || p.epoch !== null))
    .map((p) => ({ x: by === 'epoch' ? (p.epoch as number) : p.step, value: p.value }));
}

function compareMetric(metric: string, a: Aligned[], b: Aligned[]): MetricComparison | null {
  if (a.length === 0 || b.length === 0) return null;
  const at = Math.min(a[a.length - 1]!.x, b[b.length - 1]!.x);
  const tail = (s: Aligned[]) =>
    finite(
      s
        .filter((p) => p.x <= at)
        .slice(-TAIL)
        .map((p) => p.value),
    );
  const ta = tail(a);
  const tb = tail(b);
  if (ta.length === 0 || tb.length === 0) return null;
  const ma = mean(ta);
  const mb = mean(tb);
  const better = betterOf(metric);
  const ahead = better === undefined || ma === mb ? 'even' : ma > mb === (better === 'higher') ? 'a' : 'b';
  return { metric, a: ma, b: mb, at, ...(better ? { better } : {}), ahead };
}

export async function compareRuns(store: StoreTx, a: RunRow, b: RunRow, metric?: string): Promise<Comparison> {
  const hasEpochs = async (r: RunRow) => (await store.points.series(r.id, 'epoch', 1)).length > 0;
  const by = (await hasEpochs(a)) && (await hasEpochs(b)) ? 'epoch' : 'step';
  const both = new Set(await store.points.metricsOf(b.id));
  const ofA = await store.points.metricsOf(a.id);
  const names = metric ? [metric] : COMPARED.filter((m) => both.has(m) && ofA.includes(m));
  const metrics: MetricComparison[] = [];
  for (const m of names) {
    const c = compareMetric(m, await aligned(store, a, m, by), await aligned(store, b, m, by));
    if (c !== null) metrics.push(c);
  }
  const charted = metric ?? (names.includes('reward') ? 'reward' : names[0]);
  return {
    a: a.name,
    b: b.name,
    by,
    metrics,
    chart: charted
      ? { metric: charted, a: await aligned(store, a, charted, by), b: await aligned(store, b, charted, by) }
      : null,
  };
}
