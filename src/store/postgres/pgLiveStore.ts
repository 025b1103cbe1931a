/**
 * The LiveStore (store/live.ts) of a watcher that writes PostgreSQL (`rlwatch start --role watcher --db postgres://`).
 *
 * Why synchronous: the ingestor and the rule engine are the same for both stores, and they are synchronous by
 * design. A batch, its rules and its outbox rows stay one transaction in which nothing else interleaves (no await
 * inside it: a chat ack or the tick cannot land in the middle), and the watcher thread waits for PostgreSQL as it
 * waits for SQLite. So every method here posts its call to a worker thread (liveWorker.ts) that holds one
 * connection, and sleeps until the answer comes (syncBridge.ts). SQLite's path is untouched.
 *
 * What only this watcher writes is held on its thread, as the SQLite store holds it, and dropped when a transaction
 * rolls back: rule cursors, each run's last batch and newest points, its open alerts, what the rules read of its
 * events, its files' rows. What the rules read first of a run (its row, attempts, metric names) comes back with the
 * batch's write, in one round trip, and answers their first reads unless something was written in between; a tick's
 * list of the runs brings the same of every run (and its arrivals) with it. What other processes write is read
 * again in every transaction: acks with each batch's announceable alerts (heldAnnounceable.ts), mutes once. Inside
 * a watcher's group of files, the batches go out one behind the other and are answered together (`commitSoon`).
 * A lost connection: the call that finds it throws a PostgresError naming the server; the next one connects again.
 *
 * Scope: a watcher's runs are those of its scope (its run prefix, `watch.prefix`: the host name unless configured),
 * so that two hosts with the same /data/runs/grpo-7 keep two runs and two file offsets; `runs.list`, `unevaluated`
 * and `files.byPath` see that scope only, so a watcher evaluates, ticks and reads its own runs and no other's.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../../lib/workerThread.ts';
import { newAlertRow, type AlertChange, type AlertRow, type RuleIncidents } from '../alerts.ts';
import type { AttemptRow } from '../attempts.ts';
import { PostgresError } from '../dbErrors.ts';
import type { EventRow } from '../events.ts';
import type { FileRow } from '../files.ts';
import type { LiveStore } from '../live.ts';
import type { SilenceRow } from '../silences.ts';
import type { Batch, BatchResult } from '../sqlite/store.ts';
import type { UnreadRow } from '../unread.ts';
import type { LiveOps, LiveWorkerData, RunFacts, WorkerStart, WrittenBatch } from './liveWorker.ts';
import { HeldPoints } from './heldPoints.ts';
import { HeldCursors } from '../heldCursors.ts';
import { HeldOpenAlerts } from '../heldOpenAlerts.ts';
import { HeldAnnounceable } from './heldAnnounceable.ts';
import { HeldEvents } from '../heldEvents.ts';
import { syncChannel, type CrossedError, type SyncBridge } from './syncBridge.ts';
import { redactUrl } from './url.ts';

export interface PgLiveOptions {
  /** the watcher's run prefix: its runs and files are told apart from other hosts' by it */
  scope: string;
  /** rlwatch's clock (tests inject one) */
  now?: () => number;
}

const fail = (e: CrossedError): Error => new PostgresError(e.message, e.code);

/** What a round trip read of a run that answers one read (`fresh`); the rest is held longer, each in its own way. */
type OnceFacts = Omit<RunFacts, 'alerts' | 'attempts' | 'examplesFrom'>;

/** Calls after which a batch's answers still hold: reads, and savepoints (they change no row). */
const KEEP_FACTS = new Set<keyof LiveOps>([
  'runs.byId',
  'runsWithFacts',
  'runs.unevaluated',
  'files.byPath',
  'points.after',
  'points.latest',
  'points.metricsOf',
  'points.series',
  'points.stepSpan',
  'points.upTo',
  'examples.atOrBefore',
  'alerts.announceable',
  'alerts.byId',
  'alerts.ids',
  'alerts.firedByRule',
  'alerts.openOf',
  'silences.active',
  'events.after',
  'events.byId',
  'events.finished',
  'events.meta',
  'attempts.list',
  'attempts.replaying',
  'arrivals.recent',
  'runCursors',
  'savepoint',
  'release',
]);

/** Alert ids taken from the sequence at a time: one round trip per this many new alerts. */
const ALERT_IDS_TAKEN = 16;

export class PgLiveStore implements LiveStore {
  readonly scope: string;
  private readonly now: () => number;
  /** open transactions: 0 outside, 1 in a BEGIN, more in savepoints */
  private depth = 0;
  private groupRollbacks = 0;
  /** held between evaluations: this watcher alone writes its runs' cursors */
  private readonly cursors = new HeldCursors(
    (runId) => this.call('runCursors', runId),
    (runId, json) => this.write('saveRunCursors', runId, json),
  );
  /** each run's last batch and each series' newest points: this watcher alone writes its runs' points */
  private readonly held = new HeldPoints();
  /**
   * Each run's open alerts (heldOpenAlerts.ts): this watcher alone makes, fires, escalates, resolves, drops and
   * announces its runs' alerts. Other processes write only their ack columns, which the rules do not read; what is
   * announced, and how, is read from PostgreSQL (`announceable`), acks and mutes included.
   */
  private readonly opened = new HeldOpenAlerts();
  private readonly heldEvents = new HeldEvents();
  /** this scope's file rows by path, as read, added or left by a batch: this watcher alone writes them */
  private readonly heldFiles = new Map<string, FileRow>();
  /** what the last batch's round trip (or a tick's list of the runs) read of its runs, by run, each answer given
   * once (see `fresh`) */
  private readonly facts = new Map<number, Partial<OnceFacts>>();
  /** the alerts the same round trip read for each run's announcement (heldAnnounceable.ts) */
  private readonly announceable = new HeldAnnounceable();
  /** each run's attempts as its last batch (or a tick's list) left them, until the next: this watcher alone writes
   * them, with its batches and `markRewound` */
  private readonly heldAttempts = new Map<number, AttemptRow[]>();
  /** each run's first step with generations (null: none), as its last batch (or a tick's list) left it */
  private readonly examplesFrom = new Map<number, number | null>();
  /** alert ids taken from the sequence and not used yet, in order */
  private alertIds: number[] = [];
  /** the active mutes as read in this transaction (`silences`) */
  private silencesRead: SilenceRow[] | null = null;
  /** inside a group: the batches sent ahead, not answered yet (`commitSoon`), at most one per run */
  private ahead: Array<{ batch: Batch; within?: (r: BatchResult) => void; then: (r: BatchResult) => void }> | null =
    null;

  readonly runs: LiveStore['runs'] = {
    byId: (id) => this.fresh(id, 'run') ?? this.call('runs.byId', id),
    ensure: (name, path) => this.call('runs.ensure', name, path, this.scope),
    list: () => this.hold(this.call('runsWithFacts', this.scope)).map((f) => f.run!),
    markEvaluated: (runId) => this.write('runs.markEvaluated', runId),
    markLive: (runId) => this.write('runs.markLive', runId),
    unevaluated: () => this.call('runs.unevaluated', this.scope),
  };

  readonly files: LiveStore['files'] = {
    add: (runId, path, format) => this.holdFile(this.call('files.add', runId, path, format)),
    byPath: (path) => this.heldFiles.get(path) ?? this.holdFile(this.call('files.byPath', path, this.scope)),
    clearSkips: (fileId) => {
      this.write('files.clearSkips', fileId);
      for (const [path, f] of this.heldFiles) if (f.id === fileId) this.heldFiles.delete(path);
    },
  };

  readonly points: LiveStore['points'] = {
    after: (runId, metric, step) =>
      this.held.after(runId, metric, step) ?? this.call('points.after', runId, metric, step),
    latest: (runId) => this.call('points.latest', runId),
    metricsOf: (runId) => this.fresh(runId, 'metrics') ?? this.call('points.metricsOf', runId),
    series: (runId, metric, last) => this.call('points.series', runId, metric, last),
    stepSpan: (runId) => this.call('points.stepSpan', runId),
    upTo: (runId, metric, step, n, finite = false) =>
      this.held.upTo(runId, metric, step, n, finite) ?? this.call('points.upTo', runId, metric, step, n, finite),
  };

  readonly examples: LiveStore['examples'] = {
    atOrBefore: (runId, step) => {
      const from = this.examplesFrom.get(runId);
      // none kept at or before it: no round trip (a run that logs no generations, a card of an early step)
      if (from === null || (from !== undefined && step < from)) return [];
      return this.call('examples.atOrBefore', runId, step);
    },
  };

  readonly alerts: LiveStore['alerts'] = {
    announceable: (runId: number, firedSince = Infinity): AlertRow[] =>
      this.announceable.take(runId, firedSince) ??
      this.call('alerts.announceable', runId, Number.isFinite(firedSince) ? firedSince : null),
    byId: (id) => this.call('alerts.byId', id),
    // sent without waiting: its id comes from those taken beforehand, and its row is the one the insert makes
    create: (runId: number, rule: string, metric: string, state: 'pending' | 'firing', c: AlertChange) => {
      if (this.alertIds.length === 0) this.alertIds = this.call('alerts.ids', ALERT_IDS_TAKEN);
      const id = this.alertIds.shift()!;
      this.write('alerts.create', runId, rule, metric, state, c, id);
      const row = newAlertRow(id, runId, rule, metric, state, c);
      this.opened.created(row);
      this.announceable.fired(row);
      return row;
    },
    cursor: (runId, rule, metric) => this.cursors.cursor(runId, rule, metric),
    drop: (id) => {
      this.write('alerts.drop', id);
      this.opened.closed(id);
    },
    escalate: (id, c) => {
      this.write('alerts.escalate', id, c);
      const row = this.opened.escalated(id, c);
      // the row as changed, notified_state cleared: the held answer announces it again (one not firing is unchanged)
      if (row?.state === 'firing') this.announceable.fired(row);
      else if (!row) this.announceable.clear(); // its run unknown here: every run's answer is read again
    },
    fire: (id, c) => {
      this.write('alerts.fire', id, c);
      const row = this.opened.fired(id, c);
      if (row) this.announceable.fired(row);
      else this.announceable.clear(); // its run unknown here: every run's answer is read again
    },
    firedByRule: (runId): RuleIncidents[] => this.call('alerts.firedByRule', runId),
    flushCursors: () => this.cursors.flush(),
    markNotified: (id, state, at) => {
      this.write('alerts.markNotified', id, state, at);
      this.opened.notified(id, state, at);
      this.announceable.notified(id, state, at);
    },
    openOf: (runId) => this.opened.of(runId, () => this.call('alerts.openOf', runId)),
    resolve: (id, c) => {
      this.write('alerts.resolve', id, c);
      const runId = this.opened.closed(id);
      if (runId === undefined) this.announceable.clear();
      else this.announceable.resolved(runId, id, c);
    },
    rewindCursors: (runId, step) => this.cursors.rewind(runId, step),
    saveCursor: (runId, rule, metric, step, state) => this.cursors.save(runId, rule, metric, step, state),
  };

  /** read once per transaction: the bot writes mutes, which a transaction of a few milliseconds may miss as it would
   * by reading them a few milliseconds earlier */
  readonly silences: LiveStore['silences'] = {
    active: (now) => {
      if (this.depth === 0) return this.call('silences.active', now);
      return (this.silencesRead ??= this.call('silences.active', now));
    },
  };
  /** pg_notify with the row: the bot's LISTEN hears it when the transaction commits */
  readonly outbox: LiveStore['outbox'] = {
    add: (runId, target, payload, at) => this.write('outbox.add', runId, target, payload, at),
  };
  readonly unread: LiveStore['unread'] = {
    forget: (path) => this.write('unread.forget', path, this.scope),
    note: (row: UnreadRow) => this.write('unread.note', row, this.scope),
  };

  readonly events: LiveStore['events'] = {
    after: (runId, kinds, afterId) => {
      const read = (): EventRow[] => this.call('events.after', runId, kinds, afterId);
      return this.heldEvents.get(runId, `after ${afterId} ${kinds.join()}`, read);
    },
    byId: (id) => this.call('events.byId', id),
    finished: (runId) => this.heldEvents.get(runId, 'finished', () => this.call('events.finished', runId)),
    meta: (runId) => this.heldEvents.get(runId, 'meta', () => this.call('events.meta', runId)),
  };

  readonly attempts: LiveStore['attempts'] = {
    list: (runId) => {
      let held = this.heldAttempts.get(runId);
      if (!held) this.heldAttempts.set(runId, (held = this.call('attempts.list', runId)));
      return [...held];
    },
    markRewound: (runId, attempt) => {
      this.write('markRewound', runId, attempt);
      this.heldAttempts.delete(runId);
    },
    replaying: (runId, runLast) => this.call('attempts.replaying', runId, runLast),
  };

  readonly arrivals: LiveStore['arrivals'] = {
    recent: (runId) => this.fresh(runId, 'arrivals') ?? this.call('arrivals.recent', runId),
  };

  private constructor(
    private readonly worker: Worker,
    private readonly bridge: SyncBridge,
    opts: PgLiveOptions,
  ) {
    this.scope = opts.scope;
    this.now = opts.now ?? Date.now;
  }

  /** Starts the worker, which connects and brings the schema up to date (migrations/pg/). A server that cannot be
   * reached is an error naming it (without its password). */
  static async open(url: string, opts: PgLiveOptions): Promise<PgLiveStore> {
    const { bridge, port, state } = syncChannel();
    const data: LiveWorkerData = { url, name: `rlwatch watcher ${opts.scope}`.slice(0, 63), port, state };
    const worker = spawn(data);
    const start = await new Promise<WorkerStart>((resolve) => {
      worker.once('message', resolve);
      worker.once('error', (err) => resolve({ kind: 'failed', message: err.message }));
      worker.once('exit', (code) => resolve({ kind: 'failed', message: `its worker exited (${code})` }));
    });
    if (start.kind === 'failed') {
      await worker.terminate();
      bridge.close();
      throw new PostgresError(`cannot open ${redactUrl(url)}: ${start.message}`, start.code);
    }
    worker.removeAllListeners();
    worker.on('error', () => {}); // a worker that dies is told by the next call (syncBridge)
    worker.unref(); // an idle store never keeps the process alive; `close` ends it
    return new PgLiveStore(worker, bridge, opts);
  }

  async close(): Promise<void> {
    try {
      this.call('close');
    } catch {
      // its connection or its worker is gone already: there is nothing left to close but the thread
    } finally {
      this.bridge.close();
      await this.worker.terminate();
    }
  }

  /** One read of one file, in one transaction (a savepoint inside a group): the batch written, then `within` (the
   * rules) on this thread, then the commit. */
  commit(batch: Batch, examplesPerStep: number, within?: (r: BatchResult) => void): BatchResult {
    return this.transaction(() =>
      this.afterWrite(batch, this.call('writeBatch', batch, examplesPerStep, within !== undefined), within),
    );
  }

  /**
   * Inside a group, the batch is sent at once and answered with the group's others (`answerAhead`), before the group
   * commits: their statements go out one behind the other, and the watcher waits once for all of them, not once per
   * file. `within` and `then` run when it is answered. Without a savepoint of its own: a batch or its rules that
   * fail roll the group back, and its files are read again one by one (LiveIngest). Outside a group, `commit`.
   */
  commitSoon(
    batch: Batch,
    examplesPerStep: number,
    within: ((r: BatchResult) => void) | undefined,
    then: (r: BatchResult) => void,
  ): void {
    if (!this.ahead || this.depth !== 1) {
      then(this.commit(batch, examplesPerStep, within));
      return;
    }
    // the rules of a run read what its batches wrote: one batch of a run at a time ahead
    if (this.ahead.some((a) => a.batch.runId === batch.runId)) this.answerAhead();
    this.post('writeBatchLater', batch, examplesPerStep, within !== undefined);
    this.ahead.push({ batch, within, then });
  }

  /** The batches sent ahead, answered in one round trip, each with its rules run in the order sent. */
  private answerAhead(): void {
    const ahead = this.ahead!.splice(0);
    if (ahead.length === 0) return;
    const answers = this.call('writtenBatches');
    for (const [k, { batch, within, then }] of ahead.entries()) then(this.afterWrite(batch, answers[k]!, within));
  }

  /** What a batch's write brought back, held; then its rules. */
  private afterWrite(batch: Batch, w: WrittenBatch, within?: (r: BatchResult) => void): BatchResult {
    const { result, runLast, file, facts } = w;
    // what the batch may have changed, unless its round trip read it again
    this.heldAttempts.delete(batch.runId);
    this.examplesFrom.delete(batch.runId);
    if (runLast !== undefined) this.held.note(batch.runId, runLast, batch.metrics);
    if (file) this.heldFiles.set(file.path, file);
    if (facts) this.hold([facts], batch.runId);
    if (result.events > 0) this.heldEvents.wrote(batch.runId);
    within?.(result);
    return result;
  }

  /** `fn` in one transaction: BEGIN .. COMMIT, or a savepoint inside one (the engine's evaluation runs inside a
   * batch's `commit`, and opens its own). Rolled back when it throws. */
  transaction<T>(fn: () => T): T {
    const level = this.depth;
    const savepoint = `rlwatch_${level}`;
    // posted: a BEGIN or a savepoint that fails is thrown by the next call that waits, inside the `try` below
    if (level === 0) this.post('begin');
    else this.post('savepoint', savepoint);
    this.depth++;
    try {
      const out = fn();
      if (level === 0) this.call('commit');
      else this.post('release', savepoint);
      this.depth = level;
      return out;
    } catch (err) {
      this.depth = level;
      this.forgetHeld();
      try {
        if (level === 0) this.call('rollback');
        else this.call('rollbackTo', savepoint);
      } catch {
        // the connection is gone: the transaction went with it, and the outer level's rollback says so
      }
      throw err;
    }
  }

  /**
   * As `Store.group`: what the reads commit before they first await lands in one transaction, each batch in a
   * savepoint of its own (`commit` nests); `failed` says why when the group did not commit, and its files are then
   * read again. Throws only what BEGIN throws (the server not reachable), before any read started.
   */
  group<T>(reads: () => T[]): { reads: T[]; failed: Error | null } {
    this.call('begin');
    this.depth = 1;
    this.ahead = [];
    let started: T[] = [];
    try {
      started = reads();
      this.answerAhead();
      this.ahead = null;
      this.call('commit');
      this.depth = 0;
      return { reads: started, failed: null };
    } catch (err) {
      this.depth = 0;
      this.ahead = null;
      this.forgetHeld();
      try {
        this.call('rollback');
      } catch {
        // the connection is gone, and the transaction with it
      }
      this.groupRollbacks++;
      const why = `a group of ${started.length} reads did not commit: ${(err as Error).message}`;
      return { reads: started, failed: new Error(why) };
    }
  }

  /** A transaction rolled back: what is held of what it may have written is dropped; the next reads go to the
   * database. */
  private forgetHeld(): void {
    this.cursors.forget();
    this.held.forget();
    this.opened.forget();
    this.heldEvents.forget();
    this.heldFiles.clear();
    this.facts.clear();
    this.announceable.clear();
    this.heldAttempts.clear();
    this.examplesFrom.clear();
  }

  /** Holds what a round trip read of runs (`runId`: of the one run whose row may be missing), until it is used or
   * something is written; returns it. */
  private hold(read: RunFacts[], runId?: number): RunFacts[] {
    for (const { alerts, attempts, examplesFrom, ...rest } of read) {
      const id = runId ?? rest.run!.id;
      this.facts.set(id, rest);
      this.announceable.hold(id, alerts);
      this.heldAttempts.set(id, attempts);
      this.examplesFrom.set(id, examplesFrom);
    }
    return read;
  }

  /** A write may change what a round trip read: `markLive` its run's row, anything else all of it. */
  private written<K extends keyof LiveOps>(method: K, args: Parameters<LiveOps[K]>): void {
    if (method === 'commit' || method === 'rollback') {
      this.announceable.clear();
      this.silencesRead = null;
    }
    if (KEEP_FACTS.has(method)) return;
    if (method === 'runs.markLive') delete this.facts.get(args[0] as number)?.run;
    else this.facts.clear();
  }

  private holdFile<T extends FileRow | undefined>(row: T): T {
    if (row) this.heldFiles.set(row.path, row);
    return row;
  }

  /** The batch's answer of `what` for the run, once. */
  private fresh<K extends keyof OnceFacts>(runId: number, what: K): OnceFacts[K] | undefined {
    const facts = this.facts.get(runId);
    if (!facts) return undefined;
    const answer = facts[what];
    delete facts[what];
    return answer;
  }

  get groupsRolledBack(): number {
    return this.groupRollbacks;
  }

  /** Round trips to the worker so far (`waited`), and calls posted without waiting for their answer. */
  get calls(): { waited: number; posted: number } {
    return { ...this.bridge.sent };
  }

  private call<K extends keyof LiveOps>(method: K, ...args: Parameters<LiveOps[K]>): Awaited<ReturnType<LiveOps[K]>> {
    this.written(method, args);
    return this.bridge.call({ method, args, now: this.now() }, fail) as Awaited<ReturnType<LiveOps[K]>>;
  }

  /** A write whose answer nothing needs: inside a transaction it is posted without waiting (its failure comes with
   * the next call that waits, at the latest the COMMIT, which then rolls back: syncBridge.ts); outside one, where no
   * COMMIT follows, it waits. */
  private write<K extends keyof LiveOps>(method: K, ...args: Parameters<LiveOps[K]>): void {
    if (this.depth > 0) this.post(method, ...args);
    else this.call(method, ...args);
  }

  private post<K extends keyof LiveOps>(method: K, ...args: Parameters<LiveOps[K]>): void {
    this.written(method, args);
    this.bridge.post({ method, args, now: this.now() }, fail);
  }
}

/** The live worker (liveWorker.ts), handed its end of the bridge. */
const spawn = (data: LiveWorkerData): Worker =>
  spawnWorker(import.meta.url, 'liveWorker', { workerData: data, transferList: [data.port] });
