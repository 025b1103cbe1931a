/**
 * Lines of a log file parsed into chunks of records, in a form that crosses a thread cheaply (a backfill parses in
 * a worker while the main thread writes): the metric values of a chunk are one Float64Array, grouped by line shape
 * (the metric names of a line, in order), not a Map per line. The same code parses in-thread and in the worker.
 */
import type { SkipCount } from '../../store/files.ts';
import { failureScanner, type FailureScanner } from '../failures.ts';
import { FORMATS } from '../formats/index.ts';
import { readLines } from './lineReader.ts';
import type { EventRecord, ExampleRecord, LineFormat, LineParser, ShapedLineParser } from '../records.ts';

/** What one chunk of lines parsed to. Steps still to be filed under the run's latest step are left open: only
 * the writer knows the run. */
export interface ParsedChunk {
  /** byte offset just past the chunk's last line */
  end: number;
  /** lines read, those too long included */
  lines: number;
  /** the file's record count after the chunk (records without a step are numbered by it) */
  seq: number;
  /** the metric names of each line shape used in the chunk, in the order the line gave them */
  shapes: string[][];
  /** per metric record: its step, and its shape (an index into `shapes`) */
  steps: Float64Array<ArrayBuffer>;
  shapeOf: Uint32Array<ArrayBuffer>;
  /** the values of every metric record, record after record, in its shape's order */
  values: Float64Array<ArrayBuffer>;
  /** in line order; `after` is the highest metric step logged before it in the chunk (-Infinity: none) */
  events: Array<{ record: EventRecord; after: number }>;
  /** generations with a finite reward */
  examples: ExampleRecord[];
  /** lines that parsed as nothing, by reason, in the order the reasons first came up */
  skips: Array<[reason: string, skip: SkipCount]>;
}

/** What reads the lines of one file: its format's parser and, for captured stdout, the failure scanner. Both may
 * keep state from line to line (steps per epoch, the bar's marks, a block still open), so one file keeps one of these
 * while it is read on, and it is good only for a read that starts where it stopped. */
export interface FileParser {
  /** the format's parser, without a Map per metric line where the format has one */
  parse: LineParser | ShapedLineParser;
  scan?: FailureScanner;
  /** the byte offset just past the last line it has read */
  at: number;
}

/** How many chunks a parse worker reads ahead of the thread that writes them (parseWorker.ts); that thread gives as
 * many again once it has taken them all: one message, and one wake-up of an idle worker, per CHUNKS_AHEAD chunks. */
export const CHUNKS_AHEAD = 4;

const SAMPLE_CHARS = 200;

function lineFormat(formatId: string): LineFormat {
  const format = FORMATS.find((f) => f.id === formatId);
  if (format?.kind !== 'lines') throw new Error(`no line format ${formatId}`);
  return format;
}

export function fileParser(formatId: string, relPath: string): FileParser {
  const format = lineFormat(formatId);
  const parse = format.openShaped?.({ relPath }) ?? format.open({ relPath });
  return { parse, scan: format.textLog ? failureScanner() : undefined, at: 0 };
}

/**
 * A parser to read `range` with when none stopped where it starts: a new one that first reads the lines before the
 * range and drops what they give (they are stored). A process that starts again, a read after a backfill's thread,
 * or a read after a rolled-back commit thus goes on with the context (steps per epoch, the bar's marks, a step's
 * lines begun before) it would have had reading the file in one go: the same bytes give the same records however
 * many processes read them.
 */
export function resumedParser(formatId: string, relPath: string, range: LineRange): FileParser {
  const parser = fileParser(formatId, relPath);
  parser.at = range.start;
  if (lineFormat(formatId).independentLines) return parser;
  const { parse, scan } = parser;
  const read = typeof parse === 'function' ? parse : (line: string) => parse.read(line);
  // [0, start) ends at a line's end: a last `\r` there is a whole terminator, not half of a `\r\n`
  for (const chunk of readLines(range.fd, 0, range.start, range.maxLineBytes, range.chunkBytes, true)) {
    for (const line of chunk.lines) {
      scan?.(line);
      read(line);
    }
  }
  return parser;
}

/** Where to read and how: the same request in-thread and in the worker. */
export interface LineRange {
  fd: number;
  start: number;
  size: number;
  maxLineBytes: number;
  chunkBytes?: number;
  /** the file's record count so far */
  seq: number;
}

/** The parsed chunks of [start, size) of an open file. */
export function* parsedChunks(range: LineRange, parser: FileParser): Generator<ParsedChunk> {
  let seq = range.seq;
  for (const chunk of readLines(range.fd, range.start, range.size, range.maxLineBytes, range.chunkBytes)) {
    const parsed = parseLines(chunk.lines, parser, seq);
    if (chunk.tooLong > 0) parsed.skips.unshift(['line too long', { count: chunk.tooLong, sample: '' }]);
    parsed.end = chunk.end;
    parsed.lines = chunk.lines.length + chunk.tooLong;
    seq = parsed.seq;
    parser.at = chunk.end;
    yield parsed;
  }
}

function parseLines(lines: readonly string[], { parse, scan }: FileParser, seq: number): ParsedChunk {
  const shapes = new ShapeTable();
  // at most one record per line; the values grow as they come
  const steps = new Float64Array(lines.length);
  const shapeOf = new Uint32Array(lines.length);
  let values = new Float64Array(16 * lines.length);
  let records = 0;
  let at = 0;
  const events: ParsedChunk['events'] = [];
  const examples: ExampleRecord[] = [];
  const skips = new Map<string, SkipCount>();
  let latest = -Infinity;
  const shaped = typeof parse === 'function' ? null : parse;
  for (const line of lines) {
    const found = scan?.(line);
    if (found) events.push({ record: found, after: latest });
    const r = shaped ? shaped.read(line) : (parse as LineParser)(line);
    if (r === null) {
      const step = ++seq;
      const n = shaped!.names.length;
      if (at + n > values.length) values = grown(values, at + n);
      steps[records] = step;
      shapeOf[records++] = shapes.ofNames(shaped!.names);
      for (let k = 0; k < n; k++) values[at++] = shaped!.values[k]!;
      if (step > latest) latest = step;
    } else if (r.kind === 'metric') {
      const step = r.record.step ?? ++seq;
      const { values: named, epoch } = r.record;
      if (epoch !== undefined && !named.has('epoch')) named.set('epoch', epoch);
      if (at + named.size > values.length) values = grown(values, at + named.size);
      steps[records] = step;
      shapeOf[records++] = shapes.of(named);
      for (const v of named.values()) values[at++] = v;
      if (step > latest) latest = step;
    } else if (r.kind === 'event') {
      events.push({ record: r.record, after: latest });
    } else if (r.kind === 'example') {
      if (Number.isFinite(r.record.reward)) examples.push(r.record);
      else addSkip(skips, 'generation without a finite reward', line);
    } else if (r.kind === 'bad') {
      addSkip(skips, r.reason, line);
    }
  }
  return {
    end: 0,
    lines: 0,
    seq,
    shapes: shapes.names,
    // views of their first records: the buffers cross to the writer whole, without a copy
    steps: steps.subarray(0, records),
    shapeOf: shapeOf.subarray(0, records),
    values: values.subarray(0, at),
    events,
    examples,
    skips: [...skips],
  };
}

/** `values` in a buffer of at least `size` values: twice as large, or more. */
function grown(values: Float64Array<ArrayBuffer>, size: number): Float64Array<ArrayBuffer> {
  const more = new Float64Array(Math.max(size, 2 * values.length));
  more.set(values);
  return more;
}

function addSkip(skips: Map<string, SkipCount>, reason: string, line: string): void {
  const s = skips.get(reason);
  const sample = line.slice(0, SAMPLE_CHARS);
  if (s) {
    s.count++;
    if (sample) s.sample = sample;
  } else skips.set(reason, { count: 1, sample });
}

/** The line shapes of one chunk: a log repeats one shape line after line, so the last one is tried first. */
class ShapeTable {
  readonly names: string[][] = [];
  private readonly byKey = new Map<string, number>();
  private last = -1;
  private lastNames: readonly string[] | undefined;

  /** The shape of names a ShapedLineParser gave: the same array as the last line's, most of the time. */
  ofNames(names: readonly string[]): number {
    if (names === this.lastNames) return this.last;
    this.lastNames = names;
    return (this.last = this.idOf([...names]));
  }

  of(values: Map<string, number>): number {
    const last = this.names[this.last];
    if (last && last.length === values.size) {
      let i = 0;
      for (const name of values.keys()) {
        if (last[i] !== name) break;
        i++;
      }
      if (i === last.length) return this.last;
    }
    this.lastNames = undefined;
    return (this.last = this.idOf([...values.keys()]));
  }

  private idOf(names: string[]): number {
    const key = names.join('\n');
    let id = this.byKey.get(key);
    if (id === undefined) {
      id = this.names.push(names) - 1;
      this.byKey.set(key, id);
    }
    return id;
  }
}
