// zod's functional build (zod/mini): rlwatch parses its config and rule book once per process, so what a schema
// costs to load and build is start-up time, and the mini build brings only the checks used (not the whole of zod
// with a method per check on every schema). Every module takes zod from here (`import * as z`, which the bundle
// tree-shakes), so that this runs first.
import { config, int, maximum, minimum, minLength, refine, string } from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { DURATION_EXPECTED, parseDuration } from './duration.ts';

// English messages (classic zod sets them itself), and no fast paths compiled with new Function: each schema
// parses a handful of times, so compiling them would only cost start-up
config({ ...en(), jitless: true });

export * from 'zod/mini';

/** A string of at least one character. */
export const nonEmpty = () => string().check(minLength(1));

/** A whole number from `min` (to `max`). */
export const wholeFrom = (min: number, max?: number) =>
  int().check(minimum(min), ...(max === undefined ? [] : [maximum(max)]));

/** A duration such as 90s, 15m, 2h or 1d (duration.ts). */
export const duration = () =>
  string().check(refine((s) => parseDuration(s) !== undefined, { message: DURATION_EXPECTED }));
