/**
 * The asynchronous store contract over the synchronous SQLite `Store`: each call one synchronous call, its answer a
 * promise.
 */
import type { EventRecord } from '../records.ts';
import type {
  AlertChange,
  AlertRow,
  Batch,
  BatchResult,
  ChatMessageRow,
  ClaimedRow,
  ClaimOptions,
} from '../contract.ts';
import type {
  EventRow,
  FileRow,
  LatestValue,
  Leadership,
  OpenOutboxRow,
  PostedMessage,
  RuleCursor,
} from '../contract.ts';
import type {
  NewSilence,
  RunRow,
  SeriesPoint,
  SilenceRow,
  StepValue,
  StoredExample,
  StoreContract,
  StoreTx,
  Who,
} from '../contract.ts';
import type { Arrival, AttemptRow, Columns, UnreadRow } from '../contract.ts';
import type { SeriesDigest } from '../seriesDigest.ts';
import { CRITICAL_URGENCY, handOutOrder, type RankedRow } from '../outbox.ts';
import { prepared } from './prepared.ts';
import { ReportMarks } from './reportMarks.ts';
import type { Store } from './store.ts';
import { WriterLock } from './writerLock.ts';

/** Leader locks held on in-memory databases (no file to lock; one process is all there is), per connection. */
const memoryLeaders = new WeakMap<object, Set<string>>();

/**
 * Who may call the store now: one transaction body at a time, and no plain call while one runs. Taking the gate is
 * one synchronous check-and-set, and a release hands it straight to the next in line (it stays held between), so
 * two waiters woken together never both get in.
 */
class Gate {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  /** `fn` holding the gate: at once when it is free, else when its turn comes. */
  async hold<T>(fn: () => Promise<T>): Promise<T> {
    if (this.held) await new Promise<void>((turn) => this.waiting.push(turn));
    else this.held = true;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.held = false;
    }
  }

  /** A synchronous `fn`: run in this turn when the gate is free (nothing can come between), else in its turn. */
  run<T>(fn: () => T): Promise<T> {
    return this.held ? this.hold(async () => fn()) : settled(fn);
  }
}

/** `fn` called now, its result or its throw as a promise. */
function settled<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** The gate of each Store: every async wrapper of one connection takes turns through the same one. */
const gates = new WeakMap<Store, Gate>();

function gateOf(store: Store): Gate {
  let gate = gates.get(store);
  if (!gate) gates.set(store, (gate = new Gate()));
  return gate;
}

/**
 * The async store contract over the synchronous SQLite `Store`, which keeps its speed: each call is one synchronous
 * call (a batch stays one synchronous transaction); only the answer is a promise.
 */
export class SqliteAsyncStore implements StoreContract {
  readonly kind = 'sqlite' as const;
  private readonly marks: ReportMarks;

  constructor(
    readonly store: Store,
    private readonly gate = gateOf(store),
    /** this object is the body of a transaction: it never waits for the gate it holds */
    private readonly inTx = false,
  ) {
    this.marks = new ReportMarks(store.db);
  }

  /** Runs a synchronous store call once no transaction body holds the store. */
  #call<T>(fn: () => T): Promise<T> {
    return this.inTx ? settled(fn) : this.gate.run(fn);
  }

  close(): Promise<void> {
    return this.gate.run(() => this.store.close());
  }

  ensureRun = (name: string, path: string): Promise<RunRow> => this.#call(() => this.store.runs.ensure(name, path));
  runById = (id: number): Promise<RunRow | undefined> => this.#call(() => this.store.runs.byId(id));
  runByName = (name: string): Promise<RunRow | undefined> => this.#call(() => this.store.runs.byName(name));
  listRuns = (): Promise<RunRow[]> => this.#call(() => this.store.runs.list());
  addFile = (runId: number, path: string, format: string): Promise<FileRow> =>
    this.#call(() => this.store.files.add(runId, path, format));
  fileByPath = (path: string): Promise<FileRow | undefined> => this.#call(() => this.store.files.byPath(path));
  filesOfRun = (runId: number): Promise<FileRow[]> => this.#call(() => this.store.files.ofRun(runId));
  skipsOf = (fileId: number): Promise<Array<{ reason: string; count: number; sample: string }>> =>
    this.#call(() => this.store.files.skipsOf(fileId));

  commit = (batch: Batch, examplesPerStep: number): Promise<BatchResult> =>
    this.#call(() => this.store.commit(batch, examplesPerStep));

  metricsOf = (runId: number): Promise<string[]> => this.#call(() => this.store.points.metricsOf(runId));
  steps = (runId: number): Promise<number[]> => this.#call(() => this.store.points.steps(runId));
  latest = (runId: number): Promise<LatestValue[]> => this.#call(() => this.store.points.latest(runId));
  series = (runId: number, metric: string, last?: number): Promise<SeriesPoint[]> =>
    this.#call(() => this.store.points.series(runId, metric, last));
  after = (runId: number, metric: string, step: number): Promise<StepValue[]> =>
    this.#call(() => this.store.points.after(runId, metric, step));
  upTo = (runId: number, metric: string, step: number, n: number, finite?: boolean): Promise<StepValue[]> =>
    this.#call(() => this.store.points.upTo(runId, metric, step, n, finite));
  examplesAtOrBefore = (runId: number, step: number): Promise<StoredExample[]> =>
    this.#call(() => this.store.examples.atOrBefore(runId, step));
  eventsAfter = (runId: number, kinds: ReadonlyArray<EventRecord['kind']>, afterId: number): Promise<EventRow[]> =>
    this.#call(() => this.store.events.after(runId, kinds, afterId));

  metricNames = (): Promise<string[]> => this.#call(() => this.store.points.allNames());
  columns = (runId: number, metric: string): Promise<Columns> =>
    this.#call(() => this.store.points.columns(runId, metric));
  digest = (runId: number, metric: string, last?: number): Promise<SeriesDigest> =>
    this.#call(() => this.store.points.digest(runId, metric, last));
  epochsAt = (runId: number, steps: readonly number[]): Promise<Array<number | null>> =>
    this.#call(() => this.store.points.epochsAt(runId, steps));
  examplesBetween = (runId: number, from: number, to: number): Promise<StoredExample[]> =>
    this.#call(() => this.store.examples.between(runId, from, to));
  examplesExtremes = (runId: number, from: number, to: number, which: 'best' | 'worst', n: number) =>
    this.#call(() => this.store.examples.extremes(runId, from, to, which, n));
  runMeta = (runId: number): Promise<Record<string, number>> => this.#call(() => this.store.events.meta(runId));
  runConfig = (runId: number): Promise<Record<string, string>> => this.#call(() => this.store.events.config(runId));
  attemptsOf = (runId: number): Promise<AttemptRow[]> => this.#call(() => this.store.attempts.list(runId));
  replayingStep = (runId: number, runLast: number | null): Promise<number | null> =>
    this.#call(() => this.store.attempts.replaying(runId, runLast));
  markRewound = (runId: number, attempt: number): Promise<void> =>
    this.#call(() => this.store.attempts.markRewound(runId, attempt));
  arrivalsOf = (runId: number): Promise<Arrival[]> => this.#call(() => this.store.arrivals.recent(runId));
  unreadFiles = (run?: string): Promise<UnreadRow[]> => this.#call(() => this.store.unread.list(run));

  openAlert = (runId: number, rule: string, metric: string): Promise<AlertRow | undefined> =>
    this.#call(() => this.store.alerts.open(runId, rule, metric));
  alertById = (id: number): Promise<AlertRow | undefined> => this.#call(() => this.store.alerts.byId(id));
  openAlertsOf = (runId: number): Promise<AlertRow[]> => this.#call(() => this.store.alerts.openOf(runId));
  listAlerts = (opts: { runId?: number; all?: boolean }): Promise<AlertRow[]> =>
    this.#call(() => this.store.alerts.list(opts));
  createAlert = (
    runId: number,
    rule: string,
    metric: string,
    state: 'pending' | 'firing',
    c: AlertChange,
  ): Promise<AlertRow> => this.#call(() => this.store.alerts.create(runId, rule, metric, state, c));
  fireAlert = (id: number, c: AlertChange): Promise<void> => this.#call(() => this.store.alerts.fire(id, c));
  resolveAlert = (id: number, c: AlertChange): Promise<void> => this.#call(() => this.store.alerts.resolve(id, c));
  dropAlert = (id: number): Promise<void> => this.#call(() => this.store.alerts.drop(id));
  ackAlert = (id: number, by: Who, comment: string | null, at: number): Promise<void> =>
    this.#call(() => this.store.alerts.ack(id, by, comment, at));
  markNotified = (id: number, state: 'firing' | 'resolved', at: number): Promise<void> =>
    this.#call(() => this.store.alerts.markNotified(id, state, at));
  alertEvents = (id: number): Promise<Array<{ at: number; step: number | null; state: string; details: string }>> =>
    this.#call(() => this.store.alerts.events(id));
  cursor = (runId: number, rule: string, metric: string): Promise<RuleCursor | undefined> =>
    this.#call(() => this.store.alerts.cursor(runId, rule, metric));
  saveCursor = (runId: number, rule: string, metric: string, step: number, state: RuleCursor['state']): Promise<void> =>
    this.#call(() => {
      this.store.alerts.saveCursor(runId, rule, metric, step, state);
      this.store.alerts.flushCursors();
    });

  addSilence = (s: NewSilence): Promise<SilenceRow> => this.#call(() => this.store.silences.add(s));
  endSilence = (id: number, at: number): Promise<void> => this.#call(() => this.store.silences.end(id, at));
  activeSilences = (now: number): Promise<SilenceRow[]> => this.#call(() => this.store.silences.active(now));
  silenceById = (id: number): Promise<SilenceRow | undefined> => this.#call(() => this.store.silences.byId(id));
  expiredSilences = (now: number): Promise<SilenceRow[]> => this.#call(() => this.store.silences.expired(now));

  enqueue = (runId: number, target: string, payload: unknown, at: number): Promise<void> =>
    this.#call(() => this.store.outbox.add(runId, target, payload, at));
  delivered = (id: number, at: number): Promise<void> => this.#call(() => this.store.outbox.done(id, at));
  failed = (id: number, error: string, nextAttemptAt: number | null): Promise<void> =>
    this.#call(() => {
      this.store.outbox.failed(id, error, nextAttemptAt);
      this.#releaseClaim(id);
    });
  setAside = (id: number, reason: string, at: number): Promise<void> =>
    this.#call(() => {
      this.store.outbox.setAside(id, reason, at);
      this.#releaseClaim(id);
    });
  requeue = (id: number): Promise<boolean> => this.#call(() => this.store.outbox.requeue(id));
  openOutbox = (): Promise<OpenOutboxRow[]> => this.#call(() => this.store.outbox.open());
  clearWait = (target: string): Promise<void> => this.#call(() => this.store.outbox.clearWait(target));
  releaseClaims = (owner: string): Promise<void> =>
    this.#call(() => {
      prepared(
        this.store.db,
        'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ? AND done_at IS NULL',
      ).run(owner);
    });

  reclaimLeases = (): Promise<number> =>
    this.#call(
      () =>
        prepared(
          this.store.db,
          'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IS NOT NULL AND done_at IS NULL',
        ).run().changes,
    );

  /** One UPDATE ... RETURNING: SQLite runs one write at a time, so two claimers never get the same row. */
  claim = (target: string, o: ClaimOptions): Promise<ClaimedRow[]> => this.#call(() => this.#claimNow(target, o));

  /** One transaction: one commit for both. */
  deliveredAndClaim = (id: number, at: number, target: string, o: ClaimOptions): Promise<ClaimedRow[]> =>
    this.#call(() =>
      this.store.db.transaction(() => {
        this.store.outbox.done(id, at);
        return this.#claimNow(target, o);
      })(),
    );

  #claimNow(target: string, o: ClaimOptions): ClaimedRow[] {
    const until = o.now + o.leaseMs;
    // each run's oldest open row (index outbox_runs), if not leased, before any row that waits for a retry; the
    // first `limit` of them, and the next `criticalExtra` if critical (most urgent first: those come right after)
    const rows = prepared(
      this.store.db,
      `UPDATE outbox SET claimed_by = :owner, claimed_until = :until, merge_alerts = NULL
         WHERE id IN (SELECT head FROM (
             SELECT h.head, h.urgency, row_number() OVER (ORDER BY h.urgency DESC, h.head) AS pos FROM (
               SELECT min(id) AS head, max(urgency) AS urgency FROM outbox
               WHERE target = :target AND done_at IS NULL AND dead_at IS NULL GROUP BY run_id
             ) h JOIN outbox o ON o.id = h.head
             WHERE (o.claimed_until IS NULL OR o.claimed_until <= :now)
               AND h.head < coalesce((SELECT min(id) FROM outbox WHERE target = :target AND done_at IS NULL
                 AND dead_at IS NULL AND next_attempt_at > :now), ${Number.MAX_SAFE_INTEGER})
             ORDER BY h.urgency DESC, h.head LIMIT :limit + :extra)
           WHERE pos <= :limit OR urgency >= ${CRITICAL_URGENCY})
         RETURNING id, created_at, run_id, target, payload, attempts, next_attempt_at,
           (SELECT max(urgency) FROM outbox r WHERE r.target = outbox.target AND r.run_id = outbox.run_id
             AND r.done_at IS NULL AND r.dead_at IS NULL) AS rank`,
    ).all({
      owner: o.owner,
      until,
      target,
      now: o.now,
      limit: o.limit ?? 50,
      extra: o.criticalExtra ?? 0,
    }) as RankedRow[];
    return handOutOrder(rows, until);
  }

  #releaseClaim(id: number): void {
    prepared(this.store.db, 'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE id = ?').run(id);
  }

  recordMessage = (target: string, ref: string, m: PostedMessage, at: number): Promise<void> =>
    this.#call(() => this.store.chatMessages.record(target, ref, m, at));
  messageByDelivery = (target: string, delivery: string): Promise<ChatMessageRow | undefined> =>
    this.#call(() => this.store.chatMessages.byDelivery(target, delivery));
  messageByRef = (target: string, ref: string): Promise<ChatMessageRow | undefined> =>
    this.#call(() => this.store.chatMessages.byRef(target, ref));
  messagesOfAlert = (alertId: number, target: string): Promise<ChatMessageRow[]> =>
    this.#call(() => this.store.chatMessages.ofAlert(alertId, target));
  messagesShowing = (alertId: number): Promise<ChatMessageRow[]> =>
    this.#call(() => this.store.chatMessages.showing(alertId));
  setMessagePayload = (id: number, payload: unknown): Promise<void> =>
    this.#call(() => this.store.chatMessages.setPayload(id, payload));

  markReport = (runId: number, mark: string, at: number): Promise<boolean> =>
    this.#call(() => this.marks.mark(runId, mark, at));
  stepAt = (runId: number, at: number): Promise<number | null> => this.#call(() => this.marks.stepAt(runId, at));

  /**
   * BEGIN IMMEDIATE .. COMMIT around an async body; the gate keeps the store's other callers out meanwhile. The
   * synchronous Store on the same connection (the engine) does not pass the gate: a body that awaits nothing but
   * this store's calls runs in one callback of the event loop, so that nothing else writes in between.
   */
  async transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.gate.hold(async () => {
      const db = this.store.db;
      // outside the try: a BEGIN that fails began nothing, and what is open then is not this caller's to roll back
      db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn(new SqliteAsyncStore(this.store, this.gate, true));
        db.exec('COMMIT');
        return out;
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK');
        this.store.rolledBack(); // the body may have written what the store holds in memory
        throw err;
      }
    });
  }

  /** An OS lock on `<db>.leader-<name>.lock` (WriterLock): held while this process lives. */
  async tryLead(name: string): Promise<Leadership | null> {
    const path = this.store.db.name;
    if (this.store.db.memory) {
      let held = memoryLeaders.get(this.store.db);
      if (!held) memoryLeaders.set(this.store.db, (held = new Set()));
      if (held.has(name)) return null;
      held.add(name);
      return { onLost: () => {}, release: async () => void held.delete(name) };
    }
    const lock = WriterLock.tryAcquire(`${path}.leader-${name}`);
    if (!lock) return null;
    return { onLost: () => {}, release: async () => lock.release() };
  }
}
