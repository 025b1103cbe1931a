/**
 * Seeded noise for the labelled suite: a PRNG, Student-t innovations, AR(1) paths and a warm-up envelope.
 * Everything a run draws comes from one `Rng`, so a run is the same bytes on every machine.
 */

import { mulberry32 } from '../../scripts/rng.ts';

export type Rng = () => number;

/** The repository's mulberry32: small, fast, and good enough for noise (not for secrets). */
export const rng: (seed: number) => Rng = mulberry32;

export function normal(r: Rng): number {
  // Box-Muller; 1 - r() keeps the log's argument in (0, 1]
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/** Gamma(shape, 1) by Marsaglia and Tsang (shape < 1 boosted by U^(1/shape)). */
function gamma(r: Rng, shape: number): number {
  if (shape < 1) return gamma(r, shape + 1) * (1 - r()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = normal(r);
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = 1 - r();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** A Student-t draw with `df` degrees of freedom, scaled to unit variance (df > 2). */
export function studentT(r: Rng, df: number): number {
  const chi2 = 2 * gamma(r, df / 2);
  return (normal(r) / Math.sqrt(chi2 / df)) * Math.sqrt((df - 2) / df);
}

/** A batch mean of bounded samples cannot stray without limit: innovations are held within ±8 sd (a t draw at df 2.5
 * otherwise reaches 50 sd now and then: a mean completion length of 14 tokens in a run of ~350) */
const MAX_INNOVATION = 8;

/** A stationary AR(1) path of unit variance: x_t = φ x_{t−1} + √(1 − φ²) ε_t, ε Student-t(df). */
export function ar1(r: Rng, n: number, phi: number, df: number): Float64Array {
  const out = new Float64Array(n);
  const k = Math.sqrt(1 - phi * phi);
  const innovation = (): number => Math.max(-MAX_INNOVATION, Math.min(MAX_INNOVATION, studentT(r, df)));
  let x = innovation();
  for (let i = 0; i < n; i++) {
    x = phi * x + k * innovation();
    out[i] = x;
  }
  return out;
}

/**
 * The LR warm-up transient: 1 + extra at the first step, easing to 1 by `warm` steps (the first ~5% of a run),
 * as noise multiplier. The optimiser's first steps with a tiny, rising LR move the policy erratically.
 */
export function warmupFactor(i: number, warm: number, extra: number): number {
  return i >= warm ? 1 : 1 + extra * (1 - i / warm) ** 2;
}

/** The share of `groups` prompt groups whose rewards all came out equal, each with probability `q`. */
export function binomialShare(r: Rng, groups: number, q: number): number {
  let k = 0;
  for (let g = 0; g < groups; g++) if (r() < q) k++;
  return k / groups;
}
