/**
 * Who is paged. A platform's `mention` (on its section, or on a route, replacing the section's) names people and
 * groups by the platform's ids; rlwatch puts them in the field that notifies (src/platforms/<id>/) on the messages
 * that post an alert of a paging severity: critical ones unless `severity` says more. The mention is built from the
 * config alone: nothing of a log line, a run name or a generation can make anyone be paged.
 */
import * as z from '../lib/zod.ts';
import type { AlertCard } from './cards.ts';
import { routeTo, Severity, type Route } from './routing.ts';

/** A platform's mention schema: its own fields of who, and the severities that page. */
export function mentionSchema<S extends z.core.$ZodLooseShape>(who: S) {
  return z.strictObject({
    ...who,
    /** the severities whose alerts carry the mention */
    severity: z._default(z.array(Severity).check(z.minLength(1)), ['critical']),
  });
}

/** What every platform's mention has. */
export interface MentionBase {
  severity: readonly string[];
}

/** The part of a platform's section mentions come from. */
export interface Paged<M extends MentionBase> {
  routes: ReadonlyArray<Route & { mention?: M }>;
  mention?: M;
}

/** Two mentions as one: every id of either, a switch on when either has it on. */
function merged<M extends MentionBase>(a: M, b: M): M {
  const out = { ...a } as Record<string, unknown>;
  for (const [k, v] of Object.entries(b)) {
    const mine = out[k];
    if (Array.isArray(v)) out[k] = [...new Set([...((mine as unknown[] | undefined) ?? []), ...v])];
    else if (typeof v === 'boolean') out[k] = mine === true || v;
  }
  return out as M;
}

/**
 * The mention of a message posting `cards` to `dest`: for each card of an alert still firing (a new one, or a repeat
 * of one nobody acked), the mention of the route its alert took to `dest` (else the section's), when it pages the
 * card's severity; all such mentions merged. Null when no card pages.
 */
export function mentionOf<M extends MentionBase>(
  section: Paged<M>,
  dest: string,
  cards: readonly AlertCard[],
): M | null {
  let out: M | null = null;
  for (const c of cards) {
    if (c.alertId <= 0 || c.status !== 'firing') continue; // a report, a storm's summary, an acked or resolved alert
    const m = routeTo(section.routes, dest, c.run, c.severity)?.mention ?? section.mention;
    if (m?.severity.includes(c.severity)) out = out ? merged(out, m) : m;
  }
  return out;
}
