/**
 * The records a log gives and the store keeps, independent of the file format they came from (ingest/ makes them).
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
