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

/** The whole series in `width` characters: each character is the mean of its share of the points. */
export function overview(values: ArrayLike<number>, width = 60): string {
  if (values.length <= width) return sparkline(Array.from(values), width);
  const means: number[] = [];
  for (let b = 0; b < width; b++) {
    const from = Math.floor((b * values.length) / width);
    const to = Math.floor(((b + 1) * values.length) / width);
    let sum = 0;
    let n = 0;
    for (let i = from; i < to; i++) {
      const v = values[i] as number;
      if (Number.isFinite(v)) {
        sum += v;
        n++;
      }
    }
    means.push(n > 0 ? sum / n : NaN);
  }
  return sparkline(means, width);
}
