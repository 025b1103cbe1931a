/**
 * The asynchronous store contract over the synchronous SQLite `Store`: each call one synchronous call, its answer a
 * promise.
 */
import type { Async, Batch, BatchResult, ClaimedRow, ClaimOptions, Leadership } from '../contract.ts';
import type { StoreContract, StoreTx } from '../contract.ts';
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

  /** The methods `names` of the table `of()` gives, each one synchronous call through the gate. */
  #family<T, K extends keyof T>(of: () => T, names: readonly K[]): Async<Pick<T, K>> {
    const call = (name: K, args: unknown[]): Promise<unknown> =>
      this.#call(() => {
        const table = of();
        return (table[name] as (...a: unknown[]) => unknown).apply(table, args);
      });
    return Object.fromEntries(names.map((name) => [name, (...args: unknown[]) => call(name, args)])) as Async<
      Pick<T, K>
    >;
  }

  close(): Promise<void> {
    return this.gate.run(() => this.store.close());
  }

  readonly runs: StoreContract['runs'] = this.#family(() => this.store.runs, ['byId', 'byName', 'ensure', 'list']);
  readonly files: StoreContract['files'] = this.#family(() => this.store.files, ['add', 'byPath', 'ofRun', 'skipsOf']);
  readonly points: StoreContract['points'] = this.#family(
    () => this.store.points,
    ['after', 'allNames', 'columns', 'digest', 'epochsAt', 'latest', 'metricsOf', 'series', 'steps', 'upTo'],
  );
  readonly examples: StoreContract['examples'] = this.#family(
    () => this.store.examples,
    ['atOrBefore', 'between', 'extremes'],
  );
  readonly events: StoreContract['events'] = this.#family(() => this.store.events, ['after', 'config', 'meta']);
  readonly attempts: StoreContract['attempts'] = this.#family(
    () => this.store.attempts,
    ['list', 'markRewound', 'replaying'],
  );
  readonly arrivals: StoreContract['arrivals'] = this.#family(() => this.store.arrivals, ['recent']);
  readonly unread: StoreContract['unread'] = this.#family(() => this.store.unread, ['list']);

  readonly alerts: StoreContract['alerts'] = {
    ...this.#family(
      () => this.store.alerts,
      [
        'ack',
        'byId',
        'create',
        'cursor',
        'drop',
        'events',
        'fire',
        'list',
        'markNotified',
        'open',
        'openOf',
        'resolve',
      ],
    ),
    // the table holds cursors in memory until the engine's batch ends: written at once here
    saveCursor: (runId, rule, metric, step, state) =>
      this.#call(() => {
        this.store.alerts.saveCursor(runId, rule, metric, step, state);
        this.store.alerts.flushCursors();
      }),
  };

  readonly silences: StoreContract['silences'] = this.#family(
    () => this.store.silences,
    ['active', 'add', 'byId', 'end', 'expired'],
  );

  readonly outbox: StoreContract['outbox'] = {
    ...this.#family(() => this.store.outbox, ['add', 'clearWait', 'done', 'open', 'requeue']),
    failed: (id, error, nextAttemptAt) =>
      this.#call(() => {
        this.store.outbox.failed(id, error, nextAttemptAt);
        this.#releaseClaim(id);
      }),
    setAside: (id, reason, at) =>
      this.#call(() => {
        this.store.outbox.setAside(id, reason, at);
        this.#releaseClaim(id);
      }),
    /** One UPDATE ... RETURNING: SQLite runs one write at a time, so two claimers never get the same row. */
    claim: (target, o) => this.#call(() => this.#claimNow(target, o)),
    /** One transaction: one commit for both. */
    doneAndClaim: (id, at, target, o) =>
      this.#call(() =>
        this.store.db.transaction(() => {
          this.store.outbox.done(id, at);
          return this.#claimNow(target, o);
        })(),
      ),
    releaseClaims: (owner) =>
      this.#call(() => {
        prepared(
          this.store.db,
          'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ? AND done_at IS NULL',
        ).run(owner);
      }),
    reclaimLeases: () =>
      this.#call(
        () =>
          prepared(
            this.store.db,
            'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IS NOT NULL AND done_at IS NULL',
          ).run().changes,
      ),
  };

  readonly chat: StoreContract['chat'] = this.#family(
    () => this.store.chatMessages,
    ['byDelivery', 'byRef', 'ofAlert', 'record', 'setPayload', 'showing'],
  );
  readonly reports: StoreContract['reports'] = this.#family(() => this.marks, ['mark', 'stepAt']);

  commit = (batch: Batch, examplesPerStep: number): Promise<BatchResult> =>
    this.#call(() => this.store.commit(batch, examplesPerStep));

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
