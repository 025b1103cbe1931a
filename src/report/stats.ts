/** Small statistics for the report, on finite values only. */
import { mean } from '../engine/stats.ts';

export const finite = (xs: readonly number[]): number[] => xs.filter((x) => Number.isFinite(x));

export { mean, median, range } from '../engine/stats.ts';

/**
 * Which way a series went over the window: the means of its first and second halves, `up`/`down` when they
 * differ by more than two standard errors of the difference (noise alone rarely does), else `flat`.
 */
export function direction(
  xs: readonly number[],
): { first: number; second: number; way: 'up' | 'down' | 'flat' } | null {
  const v = finite(xs);
  if (v.length < 4) return null;
  const a = v.slice(0, v.length >> 1);
  const b = v.slice(v.length >> 1);
  const ma = mean(a);
  const mb = mean(b);
  const variance = (s: number[], m: number): number => s.reduce((acc, x) => acc + (x - m) ** 2, 0) / (s.length - 1);
  const se = Math.sqrt(variance(a, ma) / a.length + variance(b, mb) / b.length);
  const way = Math.abs(mb - ma) > 2 * se && mb !== ma ? (mb > ma ? 'up' : 'down') : 'flat';
  return { first: ma, second: mb, way };
}
