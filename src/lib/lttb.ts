/**
 * Largest-Triangle-Three-Buckets down-sampling (Sveinn Steinarsson, "Downsampling Time Series for
 * Visual Representation", 2013).
 *
 * The first and last points are always kept. The points in between are split into `threshold - 2`
 * buckets of (almost) equal size; from each bucket the point is kept that forms the largest
 * triangle with the point kept from the previous bucket and the mean of the next bucket. Spikes
 * therefore survive, unlike with averaging or striding.
 *
 * The points are expected in increasing x order (as steps of a training run are).
 */

/**
 * The core of the algorithm over parallel arrays: returns the indices (into `xs`/`ys`) of the kept
 * points, in increasing order. `n` is the number of points to use from the arrays (they may be
 * longer). All values must be finite. When `n <= threshold` every index is returned.
 */
export function lttbIndices(xs: ArrayLike<number>, ys: ArrayLike<number>, n: number, threshold: number): Uint32Array {
  const t = normaliseThreshold(threshold);
  if (n <= t) {
    const all = new Uint32Array(n);
    for (let i = 0; i < n; i++) all[i] = i;
    return all;
  }
  if (t === 0) return new Uint32Array(0);
  if (t === 1) return Uint32Array.of(0);
  if (t === 2) return Uint32Array.of(0, n - 1);

  const out = new Uint32Array(t);
  let o = 0;
  out[o++] = 0;

  // Buckets cover the points 1 .. n-2; the size is fractional so all buckets are (nearly) equal.
  const every = (n - 2) / (t - 2);
  let a = 0; // index of the point kept from the previous bucket

  for (let b = 0; b < t - 2; b++) {
    // Mean of the next bucket (for the last bucket: the last point).
    let avgFrom = Math.floor((b + 1) * every) + 1;
    let avgTo = Math.floor((b + 2) * every) + 1;
    if (avgTo > n) avgTo = n;
    if (avgFrom >= avgTo) avgFrom = avgTo - 1;
    let avgX = 0;
    let avgY = 0;
    for (let j = avgFrom; j < avgTo; j++) {
      avgX += xs[j] as number;
      avgY += ys[j] as number;
    }
    const avgLen = avgTo - avgFrom;
    avgX /= avgLen;
    avgY /= avgLen;

    // The point of this bucket with the largest triangle (a, point, mean of next bucket).
    const from = Math.floor(b * every) + 1;
    let to = Math.floor((b + 1) * every) + 1;
    if (to > n - 1) to = n - 1;
    const ax = xs[a] as number;
    const ay = ys[a] as number;
    const dx = ax - avgX;
    const dy = avgY - ay;
    let maxArea = -1;
    let chosen = from;
    for (let j = from; j < to; j++) {
      // Twice the triangle area; the factor does not change the arg max.
      const area = Math.abs(dx * ((ys[j] as number) - ay) - (ax - (xs[j] as number)) * dy);
      if (area > maxArea) {
        maxArea = area;
        chosen = j;
      }
    }
    out[o++] = chosen;
    a = chosen;
  }

  out[o++] = n - 1;
  return out;
}

/**
 * Down-samples `points` to at most `threshold` points with LTTB. Points whose `y` (or `x`) is not
 * finite are dropped first. When no more than `threshold` points remain they are all returned (in a
 * new array; the input is never modified). The returned elements are the input objects themselves.
 */
export function lttb<T extends { x: number; y: number }>(points: readonly T[], threshold: number): T[] {
  const t = normaliseThreshold(threshold);
  const len = points.length;
  if (len <= t) {
    // Nothing to sample away; only the non-finite points go.
    const out: T[] = [];
    for (let i = 0; i < len; i++) {
      const p = points[i] as T;
      if (Number.isFinite(p.y) && Number.isFinite(p.x)) out.push(p);
    }
    return out;
  }

  // One pass copies the usable points into flat arrays (no per-point objects); `origin` maps them
  // back to the input and only exists once a point has been dropped.
  const xs = new Float64Array(len);
  const ys = new Float64Array(len);
  let origin: Uint32Array | null = null;
  let n = 0;
  for (let i = 0; i < len; i++) {
    const p = points[i] as T;
    const x = p.x;
    const y = p.y;
    if (Number.isFinite(y) && Number.isFinite(x)) {
      xs[n] = x;
      ys[n] = y;
      if (origin !== null) origin[n] = i;
      n++;
    } else if (origin === null) {
      origin = new Uint32Array(len);
      for (let j = 0; j < n; j++) origin[j] = j;
    }
  }

  const kept = lttbIndices(xs, ys, n, t);
  const out = new Array<T>(kept.length);
  for (let i = 0; i < kept.length; i++) {
    const idx = kept[i] as number;
    out[i] = points[origin !== null ? (origin[idx] as number) : idx] as T;
  }
  return out;
}

function normaliseThreshold(threshold: number): number {
  if (Number.isNaN(threshold)) throw new RangeError('lttb: threshold must be a number');
  if (threshold === Infinity) return Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.floor(threshold));
}
