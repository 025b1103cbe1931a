import type Database from 'better-sqlite3';
import type { EventRecord, ExampleRecord } from '../ingest/records.ts';
import { openDb } from './db.ts';
import { Alerts } from './alerts.ts';
import { Arrivals } from './arrivals.ts';
import { Attempts } from './attempts.ts';
import { ChatMessages } from './chatMessages.ts';
import { Events } from './events.ts';
import { Examples } from './examples.ts';
import { Files, type FileProgress, type SkipCount } from './files.ts';
import { Points } from './points.ts';
import { Outbox } from './outbox.ts';
import { Runs } from './runs.ts';
import { Silences } from './silences.ts';
import { Unread } from './unread.ts';

/** What one read of one file produced, committed together with the offset it was read up to. */
export interface Batch {
  runId: number;
  fileId: number;
  metrics: Array<{ step: number; values: Map<string, number> }>;
  examples: Array<ExampleRecord & { step: number }>;
  /** what the logs said about the run (errors, warnings, the end of training), each filed under a step */
  events?: Array<EventRecord & { step: number }>;
  skips: Map<string, SkipCount>;
  progress: FileProgress;
  /** a document read again whole (trainer_state.json): the steps it repeats are not a restarted job */
  rewrite?: boolean;
}

export interface StoreOptions {
  /** rlwatch's clock (tests inject one): when lines were read, steps arrived, runs were first seen */
  now?: () => number;
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
  private readonly commitTx: (b: Batch, keep: number) => BatchResult;

  constructor(
    readonly db: Database.Database,
    opts: StoreOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.runs = new Runs(db, this.now);
    this.files = new Files(db);
    this.points = new Points(db);
    this.examples = new Examples(db);
    this.alerts = new Alerts(db);
    this.silences = new Silences(db);
    this.outbox = new Outbox(db);
    this.chatMessages = new ChatMessages(db);
    this.unread = new Unread(db);
    this.events = new Events(db);
    this.attempts = new Attempts(db);
    this.arrivals = new Arrivals(db);
    this.commitTx = db.transaction((b: Batch, keep: number) => this.writeBatch(b, keep));
  }

  static open(path: string, opts: StoreOptions = {}): Store {
    return new Store(openDb(path), opts);
  }

  /** Records and the file offset in one transaction: a crash never loses or duplicates a line. */
  commit(batch: Batch, examplesPerStep: number): BatchResult {
    return this.commitTx(batch, examplesPerStep);
  }

  close(): void {
    this.db.close();
  }

  private writeBatch(b: Batch, keep: number): BatchResult {
    const at = this.now();
    const seen = new Set<number>();
    let newSteps = 0;
    let minStep = Infinity;
    let maxStep = -Infinity;
    for (const m of b.metrics) {
      if (this.points.write(b.runId, m.step, m.values, at, seen)) newSteps++;
      if (m.step < minStep) minStep = m.step;
      if (m.step > maxStep) maxStep = m.step;
    }
    if (b.examples.length > 0 && keep > 0) this.examples.write(b.runId, b.examples, keep);
    if (b.events && b.events.length > 0) this.events.write(b.runId, b.fileId, b.events, at);
    if (b.metrics.length > 0) {
      if (!b.rewrite) this.trackAttempts(b, at);
      this.runs.noteBatch(b.runId, minStep, maxStep, newSteps, at);
      this.points.written(b.runId, minStep);
    }
    let skipped = 0;
    for (const s of b.skips.values()) skipped += s.count;
    if (skipped > 0) this.files.addSkips(b.fileId, b.skips);
    this.files.advance(b.fileId, b.progress, skipped, at);
    if (b.progress.lines > 0) this.runs.active(b.runId, at);
    return {
      runId: b.runId,
      minStep: b.metrics.length > 0 ? minStep : null,
      maxStep: b.metrics.length > 0 ? maxStep : null,
      newSteps,
      events: b.events?.length ?? 0,
    };
  }

  /** Restarts (a file going back to an earlier step) and the pace of new steps, before the run's summary moves. */
  private trackAttempts(b: Batch, at: number): void {
    const file = this.files.byId(b.fileId);
    if (!file) return;
    const runLast = this.runs.byId(b.runId)?.last_step ?? null;
    const advanced = this.attempts.track(b.runId, file, b.metrics.map((m) => m.step), at, runLast);
    if (advanced > 0) this.arrivals.note(b.runId, at, advanced);
  }
}
