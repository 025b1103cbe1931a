/** A one-line text chart of the last values of a series. */
const BARS = '▁▂▃▄▅▆▇█';

/** A one-line chart of the last `width` values; non-finite values show as a gap. */
export function sparkline(values: readonly number[], width = 50): string {
  const tail = values.slice(-width);
  const finite = tail.filter(Number.isFinite);
  if (finite.length === 0) return ' '.repeat(tail.length);
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const span = hi - lo;
  return tail
    .map((v) => {
      if (!Number.isFinite(v)) return ' ';
      const i = span === 0 ? 3 : Math.round(((v - lo) / span) * (BARS.length - 1));
      return BARS[i];
    })
    .join('');
}
