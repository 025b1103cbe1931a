/**
 * What ingest produces: the formats and parsers that turn a file into records. The records are the store's
 * vocabulary (store/records.ts: the store takes them, and sits below ingest), named here too for the formats.
 */
import type { EventRecord, ExampleRecord, MetricRecord } from '../store/records.ts';

export type { EventRecord, ExampleRecord, MetricRecord };

export type ParseResult =
  | { kind: 'metric'; record: MetricRecord }
  | { kind: 'example'; record: ExampleRecord }
  | { kind: 'event'; record: EventRecord }
  /** Recognised and deliberately ignored: blank lines, tqdm bars, banners, other stdout chatter. */
  | { kind: 'noise' }
  /** Looked like data but could not be read: counted per file under `reason`, never fatal. */
  | { kind: 'bad'; reason: string };

/** Parses the lines of one file. Created per file, so it may keep per-file state (e.g. a header). */
export type LineParser = (line: string) => ParseResult;

/**
 * A LineParser's faster twin, for a chunk of lines stored as columns (lineChunks.ts): the same results, except that a
 * metric line returns null and leaves its values in `values`, in the order of `names` (one array per line shape, the
 * same object for every line of it). Such a record has no step of its own; its epoch, if any, is among its values.
 */
export interface ShapedLineParser {
  read(line: string): ParseResult | null;
  readonly names: readonly string[];
  readonly values: readonly number[];
}

export interface FileInfo {
  /** path relative to the run directory, with `/` separators, e.g. `reward_logs/completions.jsonl` */
  relPath: string;
}

/** A line-oriented format (all but trainer_state.json). */
export interface LineFormat {
  id: string;
  kind: 'lines';
  /** Decide from the name and the first bytes of the file. `head` may be empty for a new file. */
  detect(file: FileInfo, head: string): 'yes' | 'no' | 'later';
  open(file: FileInfo): LineParser;
  /** the same parser without a Map per metric line, where the format has one */
  openShaped?(file: FileInfo): ShapedLineParser;
  /** captured stdout/stderr of the training job: where tracebacks, OOMs and trainer warnings appear */
  textLog?: boolean;
  /** each line's records depend on that line alone: a reader that starts mid-file needs none of the lines before */
  independentLines?: boolean;
}

/** A format whose file is rewritten whole (trainer_state.json): re-read from the start on each change. */
export interface DocumentFormat {
  id: string;
  kind: 'document';
  detect(file: FileInfo, head: string): 'yes' | 'no' | 'later';
  parse(text: string, file: FileInfo): ParseResult[];
}

/** What a binary decoder made of the bytes it was given, from where its last call stopped. */
export interface DecodedRecords {
  results: ParseResult[];
  /** bytes dealt with (complete records, bad ones included): the committed offset moves on by this much */
  consumed: number;
  /** the next record is this many bytes, too many to hold: the pipeline passes over it once the file has them */
  tooLong?: number;
}

/** Decodes the bytes of one file. Created per file and fed in file order, so it may keep state. */
export type RecordDecoder = (bytes: Buffer) => DecodedRecords;

/** A binary format of framed records appended as the run goes (TensorBoard event files). */
export interface RecordFormat {
  id: string;
  kind: 'records';
  detect(file: FileInfo, head: string): 'yes' | 'no' | 'later';
  /** `maxRecordBytes`: a record over this size is passed over, never held in memory */
  open(file: FileInfo, maxRecordBytes: number): Promise<RecordDecoder>;
}

/** A binary table written once (TRL's `completions_<step>.parquet`): read whole, again if it changes. A file
 * caught mid-write gives a `bad` result and no records, and is read again on its next change. */
export interface TableFormat {
  id: string;
  kind: 'table';
  detect(file: FileInfo, head: string): 'yes' | 'no' | 'later';
  read(bytes: Uint8Array, file: FileInfo): Promise<ParseResult[]>;
}

export type Format = LineFormat | DocumentFormat | RecordFormat | TableFormat;
