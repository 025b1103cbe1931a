/**
 * The SQLite store: one per process, owning the connection and the table modules; a batch and its offset committed
 * in one transaction.
 */
import type Database from 'better-sqlite3';
import type { EventRecord, ExampleRecord } from '../records.ts';
import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import { openDb } from './db.ts';
import { DatabaseError, databaseError, isBusy } from '../dbErrors.ts';
import { WriterLock } from './writerLock.ts';
import { Alerts } from '../alerts.ts';
import { Arrivals } from '../arrivals.ts';
import { Attempts } from '../attempts.ts';
import { ChatMessages } from '../chatMessages.ts';
import { Events } from '../events.ts';
import { Examples } from '../examples.ts';
import { guardBatch, PAST_CAP, type RunNames } from '../batchGuard.ts';
import { Files, type FileAttempt, type FileProgress, type SkipCount } from '../files.ts';
import { Points } from '../points.ts';
import { ShapedRows, type MetricRecords } from '../metricRows.ts';
import { Outbox } from '../outbox.ts';
import { Runs } from '../runs.ts';
import { Silences } from '../silences.ts';
import { Unread } from '../unread.ts';
import { prepared } from './prepared.ts';

/** What one read of one file produced, committed together with the offset it was read up to. */
export interface Batch {
  runId: number;
  fileId: number;
  metrics: MetricRecords;
  examples: Array<ExampleRecord & { step: number }>;
  /** what the logs said about the run (errors, warnings, the end of training), each filed under a step */
  events?: Array<EventRecord & { step: number }>;
  skips: Map<string, SkipCount>;
  progress: FileProgress;
  /** a document read again whole (trainer_state.json): the steps it repeats are not a restarted job */
  rewrite?: boolean;
  /** distinct metric names the run may have (`ingest.maxMetricNames`); values of names past it are not stored */
  maxMetricNames?: number;
}

export interface StoreOptions {
  /** rlwatch's clock (tests inject one): when lines were read, steps arrived, runs were first seen */
  now?: () => number;
  /** keep each series read whole in memory and top it up (a long-lived process); false for a command that answers
   * once, which has SQLite sum a cold series up instead (`Points.digest`) */
  keepSeries?: boolean;
}

export interface BatchResult {
  runId: number;
  /** steps (new or updated) that this batch wrote, for the engine to look at */
  minStep: number | null;
  maxStep: number | null;
  newSteps: number;
  /** events written */
  events: number;
}

/** The SQLite store: one object per process, owning the connection and the table modules. */
export class Store {
  readonly runs: Runs;
  readonly files: Files;
  readonly points: Points;
  readonly examples: Examples;
  readonly alerts: Alerts;
  readonly silences: Silences;
  readonly outbox: Outbox;
  readonly chatMessages: ChatMessages;
  readonly unread: Unread;
  readonly events: Events;
  readonly attempts: Attempts;
  readonly arrivals: Arrivals;
  readonly now: () => number;
  private readonly commitTx: (b: Batch, keep: number, within?: (r: BatchResult) => void) => BatchResult;
  /** `fn` in a transaction: one wrapper made once (better-sqlite3 builds four per `db.transaction`, and the engine
   * opens one per batch) */
  private readonly inTx: (fn: () => unknown) => unknown;
  private lock: WriterLock | null = null;
  private groupRollbacks = 0;
  /** per run, the metric names stored (`guardBatch`) */
  private readonly runNames = new Map<number, RunNames>();

  constructor(
    readonly db: Database.Database,
    opts: StoreOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.runs = new Runs(db, this.now, (id) => this.rolledBack(id));
    this.files = new Files(db);
    this.points = new Points(db, opts.keepSeries ?? true);
    this.examples = new Examples(db);
    this.alerts = new Alerts(db);
    this.silences = new Silences(db);
    this.outbox = new Outbox(db);
    this.chatMessages = new ChatMessages(db);
    this.unread = new Unread(db);
    this.events = new Events(db);
    this.attempts = new Attempts(db);
    this.arrivals = new Arrivals(db);
    this.inTx = db.transaction((fn: () => unknown) => fn());
    this.commitTx = db.transaction((b: Batch, keep: number, within?: (r: BatchResult) => void) => {
      const result = this.writeBatch(b, keep);
      within?.(result);
      return result;
    });
  }

  static open(path: string, opts: StoreOptions = {}): Store {
    return new Store(openDb(path), opts);
  }

  /** For commands that only read: read-write when it can be, else read-only (a database on a read-only path,
   * e.g. a colleague's, can still be queried). */
  static openForReading(path: string): Store {
    try {
      return Store.open(path, { keepSeries: false });
    } catch (err) {
      if (!(err instanceof DatabaseError) || err.problem !== 'readonly') throw err;
      return new Store(openDb(path, { readOnly: true }), { keepSeries: false });
    }
  }

  /**
   * The one process that ingests into and alerts from this database (`start`, `backfill`, `demo`): refuses,
   * naming the holder, while another process holds the database's writer lock; the lock dies with its process.
   */
  static openWriter(path: string, command: string): Store {
    let lock: WriterLock | null = null;
    if (path !== ':memory:') {
      try {
        lock = WriterLock.tryAcquire(path);
      } catch (err) {
        throw databaseError(err, path) ?? err;
      }
      if (lock === null) throw new DatabaseError('in use', inUseMessage(path));
    }
    let store: Store;
    try {
      store = Store.open(path);
    } catch (err) {
      lock?.release();
      throw err;
    }
    try {
      checkIntegrity(store.db, path);
      store.db
        .prepare('INSERT OR REPLACE INTO writer (id, pid, host, command, started_at) VALUES (1, ?, ?, ?, ?)')
        .run(process.pid, hostname(), command, Date.now());
    } catch (err) {
      store.db.close();
      lock?.release();
      throw databaseError(err, path) ?? err;
    }
    store.lock = lock;
    return store;
  }

  /** Records and the file offset in one transaction: a crash never loses or duplicates a line. `within` runs
   * inside that transaction after the records are written (the rules: one commit per batch, not two). */
  commit(batch: Batch, examplesPerStep: number, within?: (r: BatchResult) => void): BatchResult {
    try {
      return this.commitTx(batch, examplesPerStep, within);
    } catch (err) {
      this.rolledBack(batch.runId); // `within` evaluated the rules: their cursors and alerts rolled back too
      throw err;
    }
  }

  /** `commit`, then `then`: SQLite answers each batch at once, there is nothing to gather (LiveStore.commitSoon). */
  commitSoon(
    batch: Batch,
    examplesPerStep: number,
    within: ((r: BatchResult) => void) | undefined,
    then: (r: BatchResult) => void,
  ): void {
    then(this.commit(batch, examplesPerStep, within));
  }

  /** `fn` in a transaction (a savepoint inside another): when it throws, what the store holds in memory is dropped
   * with what was rolled back, so callers need not know what the store holds. */
  transaction<T>(fn: () => T): T {
    try {
      return this.inTx(fn) as T;
    } catch (err) {
      this.rolledBack();
      throw err;
    }
  }

  /**
   * Starts several reads (`reads` returns their promises) inside one transaction and commits it before anything
   * else can run: what each read commits before it first awaits (live, an append's one batch and its rules) lands
   * in it, each batch in its own savepoint (`commit` nests), so a batch that fails rolls back alone. Nothing awaits
   * inside, so no other writer on the connection (a chat ack, the tick, a mute) can land in it; what a read commits
   * after it awaits is its own transaction. 100 files appended to at once: 1 commit instead of 100.
   *
   * `failed` says why when the group did not commit (SQLite rolled it back on a full disk or an I/O error, or
   * COMMIT failed): then the reads' files must be read again. Throws only what BEGIN IMMEDIATE throws (the database
   * busy), before any read started.
   */
  group<T>(reads: () => T[]): { reads: T[]; failed: Error | null } {
    this.db.exec('BEGIN IMMEDIATE');
    let started: T[] = [];
    try {
      started = reads();
      if (!this.db.inTransaction) throw new Error('the database rolled it back');
      this.db.exec('COMMIT');
      return { reads: started, failed: null };
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.groupRollbacks++;
      this.rolledBack();
      return {
        reads: started,
        failed: new Error(`a group of ${started.length} reads did not commit: ${(err as Error).message}`),
      };
    }
  }

  /** How many groups have rolled back in this process: a read of several chunks that sees it change stops, since
   * its first chunk may be among what was rolled back (its file is then read again from the offset that did
   * commit, not from past a lost chunk). */
  get groupsRolledBack(): number {
    return this.groupRollbacks;
  }

  /** A transaction rolled back: what is held in memory of what it wrote is dropped (for one run, or all). Called
   * by this store's own transactions, by a caller that ran BEGIN .. ROLLBACK itself (`SqliteAsyncStore`), and once a
   * run is removed. */
  rolledBack(runId?: number): void {
    if (runId === undefined) this.runNames.clear();
    else this.runNames.delete(runId);
    this.runs.forget();
    this.points.forget(runId);
    this.events.forget(runId);
    this.attempts.forget(runId);
    this.files.forget();
    this.alerts.forget();
  }

  close(): void {
    try {
      if (this.lock) prepared(this.db, 'DELETE FROM writer WHERE pid = ? AND host = ?').run(process.pid, hostname());
    } catch {
      // a full disk: the row names a process that has gone, and the lock below is what counts
    }
    this.db.close();
    this.lock?.release();
  }

  /** Who holds the writer lock, as its process wrote it; null before it has. */
  writer(): { pid: number; host: string; command: string; started_at: number } | null {
    const row = prepared(this.db, 'SELECT pid, host, command, started_at FROM writer WHERE id = 1').get();
    return (row as { pid: number; host: string; command: string; started_at: number } | undefined) ?? null;
  }

  private writeBatch(batch: Batch, keep: number): BatchResult {
    let names = this.runNames.get(batch.runId);
    if (!names) this.runNames.set(batch.runId, (names = this.namesOf(batch.runId)));
    const b = guardBatch(batch, names);
    const at = this.now();
    const seen = new Set<number>();
    let minStep = Infinity;
    let maxStep = -Infinity;
    // the run's highest step before this batch (nothing below updates the run's row before noteBatch)
    const runLast = b.metrics.length > 0 ? (this.runs.byId(b.runId)?.last_step ?? null) : null;
    if (b.metrics.length > 0) this.points.beginBatch(b.runId, runLast);
    let steps: ArrayLike<number>;
    if (b.metrics instanceof ShapedRows) {
      this.points.writeShaped(b.runId, b.metrics, seen);
      steps = b.metrics.steps;
    } else {
      this.points.writeRows(b.runId, b.metrics, seen);
      steps = b.metrics.map((m) => m.step);
    }
    for (let i = 0; i < steps.length; i++) {
      if (steps[i]! < minStep) minStep = steps[i]!;
      if (steps[i]! > maxStep) maxStep = steps[i]!;
    }
    const newSteps = this.points.writeSteps(b.runId, steps, at);
    this.events.writing(b.runId);
    if (b.examples.length > 0 && keep > 0) this.examples.write(b.runId, b.examples, keep);
    if (b.events && b.events.length > 0) this.events.write(b.runId, b.fileId, b.events, at);
    let attempt: FileAttempt | null = null; // where the file's steps stand now, for its row
    if (b.metrics.length > 0) {
      if (!b.rewrite) attempt = this.trackAttempts(b, steps, at, runLast);
      this.runs.noteBatch(b.runId, minStep, maxStep, newSteps, at, b.progress.lines > 0);
      this.points.written(b.runId, minStep);
    } else if (b.progress.lines > 0) this.runs.active(b.runId, at);
    let skipped = 0;
    for (const s of b.skips.values()) skipped += s.count;
    if (skipped > 0) this.files.addSkips(b.fileId, b.skips);
    this.files.advance(b.fileId, b.progress, skipped, at, attempt);
    return {
      runId: b.runId,
      minStep: b.metrics.length > 0 ? minStep : null,
      maxStep: b.metrics.length > 0 ? maxStep : null,
      newSteps,
      events: b.events?.length ?? 0,
    };
  }

  /** The metric names the run has stored, and the reason of its values past the cap if it had any. */
  private namesOf(runId: number): RunNames {
    const past = prepared(
      this.db,
      `SELECT reason FROM file_skips s JOIN files f ON f.id = s.file_id WHERE f.run_id = ? AND s.reason LIKE ? || '%'
       LIMIT 1`,
    )
      .pluck()
      .get(runId, PAST_CAP) as string | undefined;
    return { known: new Set(this.points.metricsOf(runId)), past };
  }

  /** Restarts (a file going back to an earlier step) and the pace of new steps, before the run's summary moves:
   * where the file's steps now stand, for its row. */
  private trackAttempts(b: Batch, steps: ArrayLike<number>, at: number, runLast: number | null): FileAttempt | null {
    const file = this.files.byId(b.fileId);
    if (!file) return null;
    const fold = this.attempts.track(b.runId, file, Array.from(steps), at, runLast);
    if (!fold) return null;
    if (fold.advanced > 0) this.arrivals.note(b.runId, at, fold.advanced);
    return { lastStep: fold.fileLastStep, attempt: fold.fileAttempt };
  }
}

/**
 * `PRAGMA quick_check` reads every page: ~8 ms per MB here (2 s for a 244 MB database of 1M steps), so it runs
 * when a writer opens a database of up to this size; beyond, SQLite's own checks as pages are read (and the
 * one-line message for SQLITE_CORRUPT) have to do. A reader never waits for it.
 */
const QUICK_CHECK_MAX_BYTES = 128 * 1024 * 1024;

function checkIntegrity(db: Database.Database, path: string): void {
  if (path === ':memory:' || statSync(path).size > QUICK_CHECK_MAX_BYTES) return;
  const problems = db.pragma('quick_check(3)', { simple: false }) as Array<{ quick_check: string }>;
  if (problems.length === 1 && problems[0]?.quick_check === 'ok') return;
  throw new DatabaseError(
    'damaged',
    `${path} is damaged (${problems.map((p) => p.quick_check.replace(/\s*\n\s*/g, ' ')).join('; ')}): move it aside; \`rlwatch backfill\` of ` +
      'your runs builds a new one from the logs',
  );
}

/** How long to wait before doing again what found the database busy. */
export const BUSY_RETRY_MS = 1000;

/**
 * Runs `fn`; while SQLite says the database is busy (another process, e.g. a CLI `mute`, held its write lock past
 * the busy timeout, or committed between this transaction's read and its write), runs it again `delayMs` later,
 * calling `onBusy` each time. So a batch's rule evaluation is retried, not skipped until more lines arrive.
 * Other errors are thrown.
 */
export function retryWhileBusy(fn: () => void, onBusy: (err: Error) => void, delayMs = BUSY_RETRY_MS): void {
  try {
    fn();
  } catch (err) {
    if (!isBusy(err)) throw err;
    onBusy(err as Error);
    setTimeout(() => retryWhileBusy(fn, onBusy, delayMs), delayMs).unref();
  }
}

function inUseMessage(path: string): string {
  let holder: ReturnType<Store['writer']> = null;
  try {
    const reader = Store.openForReading(path);
    try {
      holder = reader.writer();
    } finally {
      reader.close();
    }
  } catch {
    // the holder is still creating the database: it is named once it has written its row
  }
  const who = holder
    ? `\`rlwatch ${holder.command}\` (pid ${holder.pid} on ${holder.host}, since ${new Date(holder.started_at).toISOString()})`
    : 'another rlwatch process';
  return `${path} is in use by ${who}: one process writes a database; stop that one first, or pass another --db`;
}
