/**
 * What ingest produces: records, independent of the file format they came from.
 * The run is not part of a record: the pipeline knows which run a file belongs to.
 */

/** One logging step of one file. `step` is absent for formats that do not number their lines; the
 * pipeline then numbers them 1, 2, 3 ... in file order (persisted, so a restart continues the count). */
export interface MetricRecord {
  step?: number;
  epoch?: number;
  /** canonical metric name -> value (NaN and ±Infinity allowed: a `nan` loss is news) */
  values: Map<string, number>;
}

/** One generation with its reward. Only the best and worst few per step are kept. */
export interface ExampleRecord {
  step?: number;
  /** Identity used to merge the same generation seen in two files (completions + breakdown). */
  key: string;
  prompt?: string;
  completion: string;
  reward: number;
  breakdown: Record<string, number>;
}

/**
 * Something a log says about the run rather than a metric value: a failure, a warning worth a look, the
 * trainer's end-of-training summary, or facts about the run (total steps, configuration).
 */
export interface EventRecord {
  /** error: an exception or fatal signal; warning: a trainer warning; finished: the end-of-training
   * summary (TRL's `train_runtime` dict); meta: facts about the run */
  kind: 'error' | 'warning' | 'finished' | 'meta';
  /** the trainer's step when the log says it; else the pipeline files it under the run's latest step */
  step?: number;
  /** one line for a card title: `CUDA out of memory`, `NCCL watchdog timeout`, `training finished` */
  title: string;
  /** the line that said it, cleaned (no ANSI), untrusted text */
  text: string;
  /** error: the job cannot survive it (OOM, ChildFailedError, Killed): announced at once, no grace */
  fatal?: boolean;
  /** error: the log lines before it (at most 20), oldest first: the evidence on the card */
  context?: string[];
  /** finished: train_runtime, train_loss, ...; meta: total_steps, max_steps, steps_per_epoch, num_epochs */
  values?: Record<string, number>;
  /** meta: configuration as the log prints it (model, learning rate, num_generations ...), for reports */
  config?: Record<string, string>;
}

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
