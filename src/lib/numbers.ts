/** Metric values as text: for people (`formatValue`) and in JSON, which has no NaN or Infinity (`jsonValue`). */

/** A metric value for people: 4 significant digits, exponent for the very small and very large. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e6) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

/** JSON has no NaN or Infinity: they travel as the strings "nan", "inf", "-inf". */
export function jsonValue(v: number): number | string {
  return Number.isFinite(v) ? v : formatValue(v);
}
