/**
 * What any store may be handed of a batch: names and text that cannot be stored, and names past a run's cap, left
 * out or cleaned and counted as skips.
 */
import type { ExampleRecord, EventRecord } from './records.ts';
import { ShapedRows, type MetricRecords, type MetricRow } from './metricRows.ts';
import type { Batch } from './sqlite/store.ts';
import { DEFAULT_MAX_METRIC_NAMES } from '../config/storeSettings.ts';

/** What no store may be handed as text: NUL (PostgreSQL's text refuses it, and the whole batch with it: the file
 * never got past that line) and a UTF-16 half without its other half (`\ud800` in JSON; not a character). */
const UNSTORABLE = /[\0\ud800-\udfff]/u;
const LONE_SURROGATE = /[\ud800-\udfff]/gu;

export const BAD_NAME = 'metric name holding a NUL or a broken character (value not stored)';
export const CLEANED_TEXT = 'text holding a NUL or a broken character (cleaned)';
/** How the skip of names past the cap starts (a store finds a run's earlier one by it). */
export const PAST_CAP = "metric names past the run's cap";
/** The skip of names past the cap: `rlwatch files` shows reasons, so the reason names the first few. */
export const pastCap = (cap: number, names: string): string =>
  `${PAST_CAP} of ${cap} (ingest.maxMetricNames), from ${names}: values not stored`;

/** How many names past the cap the skip's sample names. */
const NAMED_PAST_CAP = 5;

/** The metric names a run has stored, held by the store between batches (dropped when a transaction rolls back). */
export interface RunNames {
  known: Set<string>;
  /** the reason its values past the cap are counted under (`pastCap`), from its first batch past it: named once, and
   * every later batch's counted under it */
  past?: string;
}

const clean = (s: string): string => s.replaceAll('\0', '').replace(LONE_SURROGATE, '\ufffd');

/** A query parameter as PostgreSQL's text takes it: a string cleaned of NUL and lone halves (a mute's reason, an ack's
 * comment, a display name from chat), anything else as it is. */
export const storable = (v: unknown): unknown => (typeof v === 'string' && UNSTORABLE.test(v) ? clean(v) : v);
/** A name from a log as a skip names it: on one line, and short (a key may be as long as a line may be). */
const shown = (name: string): string => {
  const line = clean(name).replace(/\p{Cc}/gu, '?');
  return line.length > 40 ? `${line.slice(0, 39)}…` : line;
};

/**
 * The batch as a store may write it, the same for SQLite and PostgreSQL, live and in backfill: a metric whose name
 * cannot be stored, or that would take the run past its cap of distinct names (`b.maxMetricNames`, else
 * DEFAULT_MAX_METRIC_NAMES), is left out; other text (generations, events, the run's config, skip samples) is cleaned
 * of what cannot be stored. Each part left out or cleaned is counted among the file's skips (added to `b.skips`, so
 * the reader's counts see them too). Returns `b` when nothing changed.
 */
export function guardBatch(b: Batch, run: RunNames): Batch {
  const cap = b.maxMetricNames ?? DEFAULT_MAX_METRIC_NAMES;
  // counted per record (line) a value was left out of, as the file's skips count lines
  const dropped = { bad: new Dropped(), past: new Dropped() };
  const refused = new Map<string, Dropped>();
  const keep = (name: string): boolean => {
    if (run.known.has(name)) return true;
    if (refused.has(name)) return false;
    const why = UNSTORABLE.test(name) ? dropped.bad : run.known.size >= cap ? dropped.past : null;
    if (!why) {
      run.known.add(name);
      return true;
    }
    refused.set(name, why);
    if (why.names.length < NAMED_PAST_CAP) why.names.push(name);
    return false;
  };
  const metrics = keepNames(b.metrics, keep, (name, line) => refused.get(name)!.lines.add(line));
  // counted per record cleaned (a generation, an event: a line of the log), the first one's kind as the sample
  let cleaned = 0;
  let where = '';
  const cleanerOf = (what: string) => {
    let counted = false;
    return (s: string): string => {
      if (!UNSTORABLE.test(s)) return s;
      if (!counted) {
        counted = true;
        cleaned++;
        where ||= what;
      }
      return clean(s);
    };
  };
  const examples = b.examples.some(exampleUnstorable)
    ? b.examples.map((e) => cleanExample(e, cleanerOf('a generation')))
    : b.examples;
  const events = b.events?.some(eventUnstorable)
    ? b.events.map((e) => cleanEvent(e, cleanerOf(`a ${e.kind} event`)))
    : b.events;
  for (const [reason, s] of [...b.skips]) {
    if (!UNSTORABLE.test(reason) && !UNSTORABLE.test(s.sample)) continue;
    b.skips.delete(reason);
    addSkip(b, clean(reason), s.count, clean(s.sample));
  }
  if (dropped.bad.lines.size > 0) addSkip(b, BAD_NAME, dropped.bad.lines.size, shown(dropped.bad.names[0]!));
  if (dropped.past.lines.size > 0) {
    run.past ??= pastCap(cap, dropped.past.names.map(shown).join(', '));
    addSkip(b, run.past, dropped.past.lines.size, '');
  }
  if (cleaned > 0) addSkip(b, CLEANED_TEXT, cleaned, where);
  if (metrics === b.metrics && examples === b.examples && events === b.events) return b;
  return { ...b, metrics, examples, events };
}

/** Names left out for one reason: the first few of them, and the records (lines) they were left out of. */
class Dropped {
  readonly names: string[] = [];
  readonly lines = new Set<number>();
}

function addSkip(b: Batch, reason: string, count: number, sample: string): void {
  const s = b.skips.get(reason);
  if (s) s.count += count;
  else b.skips.set(reason, { count, sample });
}

/** `metrics` without the names `keep` refuses (asked once per name of a shape, or per name of a row), `drop` called
 * for each value left out with its record's index; the same object when it keeps them all. */
function keepNames(
  metrics: MetricRecords,
  keep: (name: string) => boolean,
  drop: (name: string, record: number) => void,
): MetricRecords {
  if (metrics instanceof ShapedRows) {
    const kept = metrics.shapes.map((names) => names.map(keep));
    if (kept.every((k) => k.every(Boolean))) return metrics;
    const values: number[] = [];
    let at = 0;
    for (let r = 0; r < metrics.length; r++) {
      const shape = metrics.shapeOf[r]!;
      kept[shape]!.forEach((k, j) => {
        if (k) values.push(metrics.values[at]!);
        else drop(metrics.shapes[shape]![j]!, r);
        at++;
      });
    }
    const shapes = metrics.shapes.map((names, i) => names.filter((_, j) => kept[i]![j]));
    return new ShapedRows(shapes, metrics.steps, metrics.shapeOf, Float64Array.from(values));
  }
  let out: MetricRow[] | null = null;
  for (let r = 0; r < metrics.length; r++) {
    const row = metrics[r]!;
    let values: Map<string, number> | null = null;
    for (const [name, value] of row.values) {
      if (keep(name)) {
        values?.set(name, value);
        continue;
      }
      drop(name, r);
      if (values) continue;
      // the names before this one were kept
      values = new Map();
      for (const [n, v] of row.values) {
        if (n === name) break;
        values.set(n, v);
      }
    }
    if (values) (out ??= metrics.slice())[r] = { ...row, values };
  }
  return out ?? metrics;
}

type Example = ExampleRecord & { step: number };
type Event = EventRecord & { step: number };

const keysUnstorable = (r: Record<string, unknown> | undefined): boolean =>
  r !== undefined && Object.keys(r).some((k) => UNSTORABLE.test(k));

function exampleUnstorable(e: Example): boolean {
  return [e.key, e.prompt ?? '', e.completion].some((s) => UNSTORABLE.test(s)) || keysUnstorable(e.breakdown);
}

function cleanExample(e: Example, text: (s: string) => string): Example {
  const out = { ...e, key: text(e.key), completion: text(e.completion), breakdown: cleanKeys(e.breakdown, text) };
  if (e.prompt !== undefined) out.prompt = text(e.prompt);
  return out;
}

function eventUnstorable(e: Event): boolean {
  return (
    [e.title, e.text, ...(e.context ?? []), ...Object.values(e.config ?? {})].some((s) => UNSTORABLE.test(s)) ||
    keysUnstorable(e.values) ||
    keysUnstorable(e.config)
  );
}

function cleanEvent(e: Event, text: (s: string) => string): Event {
  const out: Event = { ...e, title: text(e.title), text: text(e.text) };
  if (e.context) out.context = e.context.map(text);
  if (e.values) out.values = cleanKeys(e.values, text);
  if (e.config) out.config = Object.fromEntries(Object.entries(e.config).map(([k, v]) => [text(k), text(v)]));
  return out;
}

function cleanKeys<V>(r: Record<string, V>, text: (s: string) => string): Record<string, V> {
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [text(k), v]));
}
