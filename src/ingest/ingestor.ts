/**
 * The ingestor: turns a log file's new bytes into records and commits them with the offset they were read up to, in
 * one transaction, so that a crash never loses or duplicates a line.
 */
import { closeSync, lstatSync, readSync, type Stats } from 'node:fs';
import { relative, sep } from 'node:path';
import { setImmediate as nextTick } from 'node:timers/promises';
import type { FileRow, SkipCount } from '../store/files.ts';
import { isDatabaseError, isDiskFull } from '../store/dbErrors.ts';
import type { LiveStore } from '../store/live.ts';
import type { Batch, BatchResult } from '../store/sqlite/store.ts';
import { ShapedRows, type MetricRow } from '../store/metricRows.ts';
import { FORMATS, detectFormat } from './formats/index.ts';
import { OutsideRoots, openInsideRoots } from './discover/insideRoots.ts';
import { parsedChunks, resumedParser, type FileParser, type LineRange, type ParsedChunk } from './tail/lineChunks.ts';
import type { ParseThread } from './threads/parseThread.ts';
import type {
  DocumentFormat,
  ExampleRecord,
  ParseResult,
  RecordDecoder,
  RecordFormat,
  TableFormat,
} from './records.ts';
import { rotatedSince } from './tail/rotation.ts';
import { locateRun, type RunLocation } from './discover/runLocator.ts';

export interface IngestOptions {
  maxLineBytes: number;
  examplesPerStep: number;
  /** bytes read per transaction */
  chunkBytes?: number;
  /** run names start with `<runPrefix>/` (`watch.prefix`, src/store/open.ts `runPrefix`); none when empty */
  runPrefix?: string;
  /** distinct metric names a run may have; the store leaves out and counts values of names past it */
  maxMetricNames?: number;
}

export type IngestEvent =
  | { kind: 'batch'; result: BatchResult }
  | { kind: 'restart'; path: string; why: 'truncated' | 'rotated' }
  | { kind: 'unreadable'; path: string; error: string };

/** Reads `fd` (a file at or rotated from `row`'s path) from `from` to `st.size` into `row`'s file; returns the offset
 * reached. `fresh`: content new from its first byte. */
type ReadFrom = (fd: number, st: Stats, row: FileRow, from: number, fresh: boolean) => Promise<number>;

/** What one call to `ingest` did to one file. */
export interface FileOutcome {
  path: string;
  run: string;
  format: string;
  bytes: number;
  lines: number;
  records: number;
  /** lines that parsed as nothing, by reason */
  skips: Record<string, number>;
}

/** The database's disk filled while a file was read: what of it was committed before (the rest is read on
 * from there next time, as the offset is committed with the records). */
export class DatabaseFullError extends Error {
  constructor(readonly outcome: FileOutcome) {
    super(
      `the database's disk is full: ${outcome.path} is stored up to line ${outcome.lines} of this read; ` +
        'free some space and it is read on from there',
    );
  }
}

const HEAD_BYTES = 64 * 1024;
const SAMPLE_CHARS = 200;
/** trainer_state.json is re-read whole; past this it is not a Trainer state file. */
const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;

/**
 * Turns bytes into committed records, one file at a time: detects the format, reads from the stored
 * offset, numbers records without steps, and commits each chunk with its offset in one transaction.
 * Callers must not ingest the same file concurrently (the watcher and backfill call it serially).
 */
export class Ingestor {
  /** parsers of line files, by file id (with the failure scanner of captured stdout) */
  private readonly parsers = new Map<number, FileParser>();
  private readonly decoders = new Map<number, RecordDecoder>();
  /** set during a backfill: lines are parsed there, off the thread that writes */
  private parseThread: ParseThread | null = null;
  /** files judged not (yet) a log: path -> size when judged, so they are looked at again only once grown */
  private readonly undecided = new Map<string, number>();
  /** the run name of each file read, by root then path (`locateRun` of the same paths on every append) */
  private readonly runNames = new Map<string, Map<string, string>>();

  constructor(
    private readonly store: LiveStore,
    private readonly opts: IngestOptions,
    private readonly onEvent: (e: IngestEvent) => void = () => {},
    /** runs inside the transaction of each batch that stored something, before its 'batch' event: the rules,
     * so that a batch and its evaluation are one commit */
    private readonly inBatch?: (r: BatchResult) => void,
  ) {}

  /** Parses lines in `thread` from now on (a backfill), or in-thread again (null). A file's parser state lives
   * where it is parsed: switch between whole reads of a backfill, not while a file is read on. */
  useParseThread(thread: ParseThread | null): void {
    this.parseThread = thread;
  }

  /** Reads what is new in `path` (a file under the watch root `root`). Null when it is not a log file. */
  async ingest(path: string, root: string): Promise<FileOutcome | null> {
    let opened: { fd: number; st: Stats } | null;
    try {
      // regular files only (a FIFO blocks open() until a writer comes), and only inside the root (insideRoots.ts)
      opened = openInsideRoots(path, [root]);
    } catch (err) {
      if (err instanceof OutsideRoots) {
        this.refused(path, root, err.reason);
        return null;
      }
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') this.onEvent({ kind: 'unreadable', path, error: String((err as Error).message) });
      return null;
    }
    if (!opened) return null;
    // the descriptor's own stat, of the regular file checked before the open
    const { fd, st } = opened;
    let outcome: FileOutcome | undefined;
    try {
      const row = this.fileRow(fd, st, path, root);
      if (!row) return null;
      const format = FORMATS.find((f) => f.id === row.format);
      if (!format) return null; // a format since removed from the code
      outcome = {
        path,
        run: this.runName(root, path),
        format: format.id,
        bytes: 0,
        lines: 0,
        records: 0,
        skips: {},
      };
      if (format.kind === 'document') this.readDocument(fd, st, row, format, outcome);
      else if (format.kind === 'records') await this.readNewRecords(fd, st, row, format, outcome, root);
      else if (format.kind === 'table') await this.readTable(fd, st, row, format, outcome);
      else await this.readNewLines(fd, st, row, outcome, root);
      return outcome;
    } catch (err) {
      // the database's trouble, not the file's: the caller says so (and a backfill stops)
      if (isDiskFull(err)) throw new DatabaseFullError(outcome ?? emptyOutcome(path, root, this.opts.runPrefix));
      if (isDatabaseError(err)) throw err;
      this.onEvent({ kind: 'unreadable', path, error: String((err as Error).message) });
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** The stored row of a known file, or a new one once its format is recognised. */
  private fileRow(fd: number, st: Stats, path: string, root: string): FileRow | null {
    const known = this.store.files.byPath(path);
    if (known) return known;
    if (this.undecided.get(path) === st.size) return null;
    const loc = locateRun(root, path, this.opts.runPrefix);
    const head = Buffer.alloc(Math.min(HEAD_BYTES, st.size));
    const n = head.length > 0 ? readSync(fd, head, 0, head.length, 0) : 0;
    const verdict = detectFormat({ relPath: loc.relPath }, head.toString('utf8', 0, n));
    if (verdict === null || verdict === 'later') {
      this.undecided.set(path, st.size);
      this.store.unread.note({ ...unreadOf(loc, path, st.size, verdict), seen_at: Date.now() });
      return null;
    }
    this.undecided.delete(path);
    this.store.unread.forget(path);
    const run = this.store.runs.ensure(loc.name, loc.dir);
    return this.store.files.add(run.id, path, verdict.format.id);
  }

  /** Lists a file the rule refuses as not read, with why; of a symlink, its own size (nothing of where it leads). */
  private refused(path: string, root: string, reason: string): void {
    const { name: run, dir: run_dir, relPath: rel_path } = locateRun(root, path, this.opts.runPrefix);
    const size = lstatSync(path, { throwIfNoEntry: false })?.size ?? 0;
    this.store.unread.note({ path, run, run_dir, rel_path, reason, size, seen_at: Date.now() });
  }

  private runName(root: string, path: string): string {
    let byPath = this.runNames.get(root);
    if (!byPath) this.runNames.set(root, (byPath = new Map()));
    let name = byPath.get(path);
    if (name === undefined) byPath.set(path, (name = locateRun(root, path, this.opts.runPrefix).name));
    return name;
  }

  /** The file's parser as it stood at the range's start: the one kept when it stopped there (a live read goes on
   * from its last), else one that read the lines before again. */
  private parserFor(row: FileRow, range: LineRange): FileParser {
    const kept = this.parsers.get(row.id);
    if (kept?.at === range.start) return kept;
    const parser = resumedParser(row.format, this.runOf(row).relPath, range);
    this.parsers.set(row.id, parser);
    return parser;
  }

  /** A batch of the records of one parsed chunk of lines: what was logged without a step is filed here, under the
   * run's latest step before it (generations: under the step being trained while they were written). */
  private batchOf(chunk: ParsedChunk, row: FileRow, st: Stats): Batch {
    const metrics = new ShapedRows(chunk.shapes, chunk.steps, chunk.shapeOf, chunk.values);
    const batch = { ...this.emptyBatch(row, st, chunk.end, chunk.seq), metrics };
    let runLast: number | undefined;
    const last = (): number => (runLast ??= this.store.runs.byId(row.run_id)?.last_step ?? 0);
    for (const { record, after } of chunk.events) {
      batch.events.push({ ...record, step: record.step ?? Math.max(last(), after) });
    }
    const exampleStep = chunk.examples.length > 0 ? last() + 1 : 0;
    const examples = chunk.examples.map((e) => ({ ...e, step: e.step ?? exampleStep }));
    batch.examples = keepExtremes(examples, this.opts.examplesPerStep);
    for (const [reason, skip] of chunk.skips) batch.skips.set(reason, skip);
    batch.progress.lines = chunk.lines;
    // a generation is a record its file gave (completions.jsonl gives no metric), counted before any is pruned
    batch.progress.records = batch.metrics.length + chunk.examples.length;
    return batch;
  }

  private async readNewLines(fd: number, st: Stats, row: FileRow, out: FileOutcome, root: string): Promise<void> {
    let offset = row.offset;
    const groups = this.store.groupsRolledBack;
    const renamed = row.ino !== null && (row.ino !== st.ino || row.dev !== st.dev);
    if (renamed) {
      const read: ReadFrom = (f, fst, r, from, fresh) => this.readLines(f, fst, r, from, fresh, out, groups);
      row = await this.drainRotated(row, st, read, root);
      offset = 0;
      this.onEvent({ kind: 'restart', path: row.path, why: 'rotated' });
    }
    const truncated = !renamed && st.size < offset;
    if (truncated) {
      offset = 0;
      this.onEvent({ kind: 'restart', path: row.path, why: 'truncated' });
    }
    if (offset === st.size && !renamed && !truncated && row.ino !== null) return;
    offset = await this.readLines(fd, st, row, offset, renamed || truncated, out, groups);
    // the group this read began in rolled back (Store.group): what it read is read again from what did commit
    if (this.store.groupsRolledBack !== groups) return;
    if ((row.ino === null || renamed || truncated) && offset === 0) {
      // an empty new (or emptied) file: remember its identity and offset 0, so that a later rotation is
      // recognised and lines written after a truncation are read from the start
      this.commit(this.emptyBatch(row, st, 0, row.seq), out, 0);
    }
  }

  /** Reads the lines of `fd` from `offset` to `st.size` into `row`'s file, each chunk committed with the offset and
   * identity of `st`. `fresh`: new content from its first byte. Returns the offset reached. */
  private async readLines(
    fd: number,
    st: Stats,
    row: FileRow,
    offset: number,
    fresh: boolean,
    out: FileOutcome,
    groups: number,
  ): Promise<number> {
    // a parser's or scanner's memory of the old content (a tqdm total, an open traceback) must not carry over
    if (fresh) this.parsers.delete(row.id);
    const start = offset;
    const { maxLineBytes, chunkBytes } = this.opts;
    const range = { fd, start: offset, size: st.size, maxLineBytes, chunkBytes, seq: row.seq };
    const take = (chunk: ParsedChunk): void => {
      this.commit(this.batchOf(chunk, row, st), out, chunk.end - offset);
      offset = chunk.end;
    };
    if (this.parseThread) {
      const { relPath } = this.runOf(row);
      for await (const chunk of this.parseThread.chunks({
        fileId: row.id,
        format: row.format,
        relPath,
        fresh,
        range,
      })) {
        take(chunk);
      }
    } else {
      // a plain loop, not `for await`: live, an append's one chunk commits before the first await, inside the
      // watcher's group transaction (Store.group); the file's parser is made once, not its run looked up per read
      for (const chunk of parsedChunks(range, this.parserFor(row, range))) {
        // the group this read began in rolled back (Store.group): its first chunk with it; read again from there
        if (this.store.groupsRolledBack !== groups) return start;
        take(chunk);
        await nextTick(); // let the watcher, timers and chat clients breathe between chunks
      }
    }
    return offset;
  }

  /**
   * Framed binary records (TensorBoard event files), read like lines: from the stored offset, each chunk's
   * records committed with the offset just past the last complete record, so a record cut mid-write waits.
   */
  private async readNewRecords(
    fd: number,
    st: Stats,
    row: FileRow,
    format: RecordFormat,
    out: FileOutcome,
    root: string,
  ): Promise<void> {
    let offset = row.offset;
    const groups = this.store.groupsRolledBack;
    const renamed = row.ino !== null && (row.ino !== st.ino || row.dev !== st.dev);
    if (renamed) {
      const read: ReadFrom = (f, fst, r, from, fresh) => this.readRecords(f, fst, r, from, fresh, format, out, groups);
      row = await this.drainRotated(row, st, read, root);
      offset = 0;
      this.onEvent({ kind: 'restart', path: row.path, why: 'rotated' });
    } else if (st.size < offset) {
      offset = 0;
      this.onEvent({ kind: 'restart', path: row.path, why: 'truncated' });
    }
    if (offset === st.size && !renamed && row.ino !== null) return;
    offset = await this.readRecords(fd, st, row, offset, renamed || offset !== row.offset, format, out, groups);
    if (this.store.groupsRolledBack !== groups) return;
    if ((row.ino === null || renamed) && offset === 0) this.commit(this.emptyBatch(row, st, 0, row.seq), out, 0);
  }

  /** Reads the records of `fd` from `offset` to `st.size` into `row`'s file, as readLines does lines. */
  private async readRecords(
    fd: number,
    st: Stats,
    row: FileRow,
    offset: number,
    fresh: boolean,
    format: RecordFormat,
    out: FileOutcome,
    groups: number,
  ): Promise<number> {
    let decode = this.decoders.get(row.id);
    if (!decode || fresh) {
      decode = await format.open({ relPath: this.runOf(row).relPath }, this.opts.maxLineBytes);
      this.decoders.set(row.id, decode);
    }
    const chunkBytes = this.opts.chunkBytes ?? 256 * 1024;
    const buf = Buffer.allocUnsafe(chunkBytes);
    let pending = Buffer.alloc(0); // bytes from `offset` on that hold no complete record yet
    let readPos = offset;
    let seq = row.seq;
    // as readLines: a group rolled back since this read began took its first chunk with it
    while (readPos < st.size && this.store.groupsRolledBack === groups) {
      const n = readSync(fd, buf, 0, Math.min(chunkBytes, st.size - readPos), readPos);
      if (n === 0) break; // the file shrank under us: the next read sees the truncation
      readPos += n;
      const data = pending.length > 0 ? Buffer.concat([pending, buf.subarray(0, n)]) : buf.subarray(0, n);
      const { results, consumed, tooLong } = decode(data);
      let end = offset + consumed;
      const batch = this.emptyBatch(row, st, end, seq);
      for (const r of results) {
        if (r.kind === 'metric') {
          const step = r.record.step ?? ++seq;
          batch.metrics.push({ step, values: withEpoch(r.record.values, r.record.epoch) });
        } else if (r.kind === 'bad') addSkip(batch.skips, r.reason, 1, '');
      }
      const waiting = tooLong !== undefined && end + tooLong > st.size;
      const passOver = tooLong !== undefined && !waiting;
      if (passOver) {
        // a record over the cap is skipped without ever being held in memory
        addSkip(batch.skips, 'record too long', 1, '');
        end += tooLong;
        readPos = end;
        pending = Buffer.alloc(0);
      } else pending = Buffer.from(data.subarray(consumed)); // a copy: `buf` is reused by the next read
      batch.progress.offset = end;
      batch.progress.seq = seq;
      batch.progress.lines = results.length + (passOver ? 1 : 0);
      batch.progress.records = batch.metrics.length;
      if (end > offset) this.commit(batch, out, end - offset);
      offset = end;
      if (waiting) break;
      await nextTick();
    }
    return offset;
  }

  /** A table written once per step (TRL's completions parquet): read whole when it changed, its rows upserted. */
  private async readTable(fd: number, st: Stats, row: FileRow, format: TableFormat, out: FileOutcome): Promise<void> {
    if (row.ino === st.ino && row.size === st.size && row.mtime_ms === st.mtimeMs) return;
    const batch = this.emptyBatch(row, st, st.size, row.seq);
    if (st.size > MAX_DOCUMENT_BYTES) {
      addSkip(batch.skips, 'document too large', 1, '');
    } else {
      const buf = Buffer.alloc(st.size);
      const n = readSync(fd, buf, 0, st.size, 0);
      const results = await format.read(buf.subarray(0, n), { relPath: this.runOf(row).relPath });
      let exampleStep: number | undefined;
      for (const r of results) {
        if (r.kind === 'example' && Number.isFinite(r.record.reward)) {
          exampleStep ??= (this.store.runs.byId(row.run_id)?.last_step ?? 0) + 1;
          batch.examples.push({ ...r.record, step: r.record.step ?? exampleStep });
        } else if (r.kind === 'example') addSkip(batch.skips, 'generation without a finite reward', 1, '');
        else if (r.kind === 'bad') addSkip(batch.skips, r.reason, 1, '');
      }
      // Read whole, so what an earlier read could not parse (the file caught mid-write) no longer stands. A
      // writer still writing changes size and mtime: the next change is read again.
      if (row.skipped > 0) this.store.files.clearSkips(row.id);
      batch.examples = keepExtremes(batch.examples, this.opts.examplesPerStep);
      batch.progress.lines = results.length;
    }
    this.commit(batch, out, st.size);
  }

  /**
   * After a rotation (the file last read renamed away, a new file at its path), what the rotations left beside
   * the path is read first (rotation.ts says which files, in which order): the file last read on to its end, so
   * lines appended just before the rename are kept, and whole any file that came and went at the path between
   * two reads (two rotations before rlwatch read again, or while it was stopped). Each is committed under the
   * path's file row with its own identity, so a restart mid-way goes on from where it stopped. Returns the row
   * as that left it.
   */
  private async drainRotated(row: FileRow, current: Stats, read: ReadFrom, root: string): Promise<FileRow> {
    const groups = this.store.groupsRolledBack;
    const { old, newer } = rotatedSince(row, current);
    const files = [...(old ? [{ file: old, from: row.offset }] : []), ...newer.map((file) => ({ file, from: 0 }))];
    for (const { file, from } of files) {
      if (this.store.groupsRolledBack !== groups) break;
      let opened: { fd: number; st: Stats } | null;
      try {
        opened = openInsideRoots(file.path, [root]);
      } catch {
        continue; // removed since it was listed, or no longer inside the root
      }
      if (!opened) continue;
      const { fd, st } = opened;
      try {
        // another file put at that name since it was listed, or nothing past what was read
        if (st.ino !== file.ino || st.dev !== file.dev || st.size <= from) continue;
        await read(fd, st, row, from, from === 0);
      } finally {
        closeSync(fd);
      }
      row = this.store.files.byPath(row.path) ?? row;
    }
    return row;
  }

  /** trainer_state.json is rewritten whole: re-read it when it changed and upsert every entry by step. */
  private readDocument(fd: number, st: Stats, row: FileRow, format: DocumentFormat, out: FileOutcome): void {
    if (row.ino === st.ino && row.size === st.size && row.mtime_ms === st.mtimeMs) return;
    const batch = { ...this.emptyBatch(row, st, st.size, row.seq), rewrite: true };
    if (st.size > MAX_DOCUMENT_BYTES) {
      addSkip(batch.skips, 'document too large', 1, '');
    } else {
      const buf = Buffer.alloc(st.size);
      const n = readSync(fd, buf, 0, st.size, 0);
      const results = format.parse(buf.toString('utf8', 0, n), { relPath: this.runOf(row).relPath });
      for (const r of results) {
        if (r.kind === 'metric' && r.record.step !== undefined) {
          batch.metrics.push({ step: r.record.step, values: withEpoch(r.record.values, r.record.epoch) });
        } else if (r.kind === 'metric') {
          addSkip(batch.skips, 'entry without step', 1, '');
        } else if (r.kind === 'event') {
          batch.events.push({ ...r.record, step: r.record.step ?? this.store.runs.byId(row.run_id)?.last_step ?? 0 });
        } else if (r.kind === 'bad') {
          addSkip(batch.skips, r.reason, 1, '');
        }
      }
      if (results.some(isBad) && batch.metrics.length === 0) {
        // caught mid-write: count it, but leave size/mtime so that the next change reads it again
        batch.progress.size = row.size;
        batch.progress.mtimeMs = row.mtime_ms ?? 0;
      }
    }
    batch.progress.lines = 1;
    batch.progress.records = batch.metrics.length;
    this.commit(batch, out, st.size);
  }

  /** Commits the batch (inside a watcher's group, maybe with the group's others: LiveStore.commitSoon). */
  private commit(batch: Batch, out: FileOutcome, bytes: number): void {
    const inBatch = this.inBatch;
    const within = inBatch && ((r: BatchResult) => void (stored(batch, r) && inBatch(r)));
    batch.maxMetricNames = this.opts.maxMetricNames;
    this.store.commitSoon(batch, this.opts.examplesPerStep, within, (result) => {
      if (stored(batch, result)) this.onEvent({ kind: 'batch', result });
    });
    out.bytes += bytes;
    out.lines += batch.progress.lines;
    out.records += batch.metrics.length;
    for (const [reason, s] of batch.skips) out.skips[reason] = (out.skips[reason] ?? 0) + s.count;
  }

  private runOf(row: FileRow): { name: string; relPath: string } {
    const run = this.store.runs.byId(row.run_id);
    if (!run) throw new Error(`file ${row.path} belongs to no run`);
    return { name: run.name, relPath: relative(run.path, row.path).split(sep).join('/') };
  }

  private emptyBatch(
    row: FileRow,
    st: Stats,
    offset: number,
    seq: number,
  ): Batch & { events: NonNullable<Batch['events']>; metrics: MetricRow[] } {
    return {
      runId: row.run_id,
      fileId: row.id,
      metrics: [],
      examples: [],
      events: [],
      skips: new Map(),
      progress: { dev: st.dev, ino: st.ino, offset, size: st.size, mtimeMs: st.mtimeMs, seq, lines: 0, records: 0 },
    };
  }
}

const isBad = (r: ParseResult): boolean => r.kind === 'bad';

/** Whether a batch stored anything the rules look at. */
const stored = (b: Batch, r: BatchResult): boolean => b.metrics.length > 0 || b.examples.length > 0 || r.events > 0;

/** Why a file that looks like a log is not read (yet), for `rlwatch files` and the backfill summary. */
function unreadOf(loc: RunLocation, path: string, size: number, verdict: null | 'later') {
  const reason =
    verdict === null ? 'no format recognises it' : size === 0 ? 'empty so far' : 'no known format in what is there yet';
  return { path, run: loc.name, run_dir: loc.dir, rel_path: loc.relPath, reason, size };
}

const emptyOutcome = (path: string, root: string, runPrefix?: string): FileOutcome => ({
  path,
  run: locateRun(root, path, runPrefix).name,
  format: '',
  bytes: 0,
  lines: 0,
  records: 0,
  skips: {},
});

function withEpoch(values: Map<string, number>, epoch: number | undefined): Map<string, number> {
  if (epoch !== undefined && !values.has('epoch')) values.set('epoch', epoch);
  return values;
}

function addSkip(skips: Map<string, SkipCount>, reason: string, count: number, line: string): void {
  const s = skips.get(reason);
  const sample = line.slice(0, SAMPLE_CHARS);
  if (s) {
    s.count += count;
    if (sample) s.sample = sample;
  } else skips.set(reason, { count, sample });
}

/** A chunk of a 200 MB completions file holds thousands of generations per step: only the best and
 * worst `keep` of each step (after merging duplicates by key) can survive, so only those go to SQLite. */
function keepExtremes(
  examples: Array<ExampleRecord & { step: number }>,
  keep: number,
): Array<ExampleRecord & { step: number }> {
  if (examples.length === 0 || keep <= 0) return [];
  const byStep = new Map<number, Map<string, ExampleRecord & { step: number }>>();
  for (const e of examples) {
    let m = byStep.get(e.step);
    if (!m) byStep.set(e.step, (m = new Map()));
    const twin = m.get(e.key);
    if (!twin) m.set(e.key, e);
    else {
      if (e.completion.length > twin.completion.length) twin.completion = e.completion;
      twin.prompt ??= e.prompt;
      twin.breakdown = { ...twin.breakdown, ...e.breakdown };
    }
  }
  const out: Array<ExampleRecord & { step: number }> = [];
  const byKey = (a: ExampleRecord, b: ExampleRecord): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  for (const m of byStep.values()) {
    const all = [...m.values()];
    if (all.length <= 2 * keep) {
      out.push(...all);
      continue;
    }
    // the same order as the store's pruning, so that a generation's twin from another file ranks alike
    const best = all.sort((a, b) => b.reward - a.reward || byKey(a, b)).slice(0, keep);
    const worst = all.sort((a, b) => a.reward - b.reward || byKey(a, b)).slice(0, keep);
    out.push(...new Set([...best, ...worst]));
  }
  return out;
}
