/**
 * The store contract: the one asynchronous vocabulary of table families the app uses, implemented on SQLite and on
 * PostgreSQL, and the row shapes it hands out.
 */
import type { AlertChange, AlertRow, Alerts, Who } from './alerts.ts';
import type { Arrivals } from './arrivals.ts';
import type { AttemptRow, Attempts } from './attempts.ts';
import type { ChatMessageRow, ChatMessages } from './chatMessages.ts';
import type { EventRow, Events } from './events.ts';
import type { Examples, StoredExample } from './examples.ts';
import type { FileRow, Files, SkipCount } from './files.ts';
import type { OpenOutboxRow, Outbox, OutboxRow } from './outbox.ts';
import type { LatestValue, Points, SeriesPoint } from './points.ts';
import type { RunRow, Runs } from './runs.ts';
import type { Columns } from './seriesCache.ts';
import type { NewSilence, SilenceRow, Silences } from './silences.ts';
import type { ReportMarks } from './sqlite/reportMarks.ts';
import type { Batch, BatchResult } from './sqlite/store.ts';
import type { Unread, UnreadRow } from './unread.ts';

export type { AlertChange, AlertRow, AttemptRow, Batch, BatchResult, ChatMessageRow, Columns, EventRow, FileRow };
export type { LatestValue, UnreadRow };
export type { NewSilence, OpenOutboxRow, OutboxRow, RunRow, SeriesPoint, SilenceRow, SkipCount, StoredExample, Who };

/** A read that took a run to new steps: when (rlwatch's clock), and how many. */
export interface Arrival {
  at: number;
  steps: number;
}

/** One value of a series. */
export interface StepValue {
  step: number;
  value: number;
}

/** Where a rule's evaluation of a run has got to, and what it carries to the next batch. */
export interface RuleCursor {
  step: number;
  state: Record<string, unknown>;
}

/** An outbox row handed to one deliverer until `leaseUntil`: no other claimer gets it before then. */
export interface ClaimedRow extends OutboxRow {
  leaseUntil: number;
  /** the urgency it was handed out with: its run's most severe open row's (a warning card ahead of a critical one
   * in its run is as urgent as that one) */
  urgency: number;
}

export interface ClaimOptions {
  /** who claims (a process and its target lane), recorded on the row */
  owner: string;
  now: number;
  /** how long the claim stands if its owner dies before delivering */
  leaseMs: number;
  limit?: number;
  /** up to this many rows beyond `limit`, of runs holding a critical row only (outbox urgency 2): the deliverer's
   * slot kept for critical alerts, which never wait for a warning's card to end (default 0) */
  criticalExtra?: number;
}

/** A held leader lock: the holder delivers notifications and runs the chat bots. */
export interface Leadership {
  /** called once if the lock is lost without `release` (the connection that held it died) */
  onLost(fn: () => void): void;
  release(): Promise<void>;
}

/** What a chat message shows, recorded when it is posted so that edits find it. */
export interface PostedMessage {
  runId: number;
  alertIds: readonly number[];
  payload: unknown;
  /** outbox row and part it was posted for: a retry never posts it twice */
  delivery: string;
}

/** `T`'s methods as the async stores have them: the same arguments, the result a promise. Each family of the contract
 * is declared through it from its table module, so that a method renamed on one side does not compile on the other. */
export type Async<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never;
};

/**
 * The store as commands, reports, delivery, the bots and the platforms use it, on SQLite or PostgreSQL: asynchronous,
 * and nothing outside `store/` touches SQL or a driver. Its families and their methods are those of the synchronous
 * tables (live.ts, the same names for the same operations), each a promise here; what only this side does is declared
 * beside them. Implemented by `sqlite/sqliteAsync.ts` (over the synchronous Store) and `postgres/pgStore.ts`.
 */
export interface StoreContract {
  readonly kind: 'sqlite' | 'postgres';
  close(): Promise<void>;

  readonly runs: Async<Pick<Runs, 'byId' | 'byName' | 'ensure' | 'list'>>;
  readonly files: Async<Pick<Files, 'add' | 'byPath' | 'ofRun' | 'skipsOf'>>;
  /** `allNames`: every metric name of every run, sorted (chat reads free words against them); `columns`: the whole
   * series as two columns (charts and history of a million points); `digest`: what `reward history` shows of it */
  readonly points: Async<
    Pick<
      Points,
      'after' | 'allNames' | 'columns' | 'digest' | 'epochsAt' | 'latest' | 'metricsOf' | 'series' | 'steps' | 'upTo'
    >
  >;
  readonly examples: Async<Pick<Examples, 'atOrBefore' | 'between' | 'extremes'>>;
  readonly events: Async<Pick<Events, 'after' | 'config' | 'meta'>>;
  readonly attempts: Async<Pick<Attempts, 'list' | 'markRewound' | 'replaying'>>;
  readonly arrivals: Async<Pick<Arrivals, 'recent'>>;
  readonly unread: Async<Pick<Unread, 'list'>>;
  /** the engine opens, updates and resolves; commands and buttons ack. `saveCursor` is durable once it resolves. */
  readonly alerts: Async<
    Pick<
      Alerts,
      | 'ack'
      | 'byId'
      | 'create'
      | 'cursor'
      | 'drop'
      | 'events'
      | 'fire'
      | 'list'
      | 'markNotified'
      | 'open'
      | 'openOf'
      | 'resolve'
      | 'saveCursor'
    >
  >;
  readonly silences: Async<Pick<Silences, 'active' | 'add' | 'byId' | 'end' | 'expired'>>;
  /** the engine adds in its transaction; the one leader delivers */
  readonly outbox: Async<Pick<Outbox, 'add' | 'clearWait' | 'done' | 'failed' | 'open' | 'requeue' | 'setAside'>> &
    OutboxDelivery;
  /** chat message ids, so that a posted message is edited in place */
  readonly chat: Async<Pick<ChatMessages, 'byDelivery' | 'byRef' | 'ofAlert' | 'record' | 'setPayload' | 'showing'>>;
  /** scheduled reports (milestones, the daily digest), each sent once: `mark` is false when it was there already */
  readonly reports: Async<Pick<ReportMarks, 'mark' | 'stepAt'>>;

  /**
   * One read of one file: its points (a step written again replaces its values: batches are idempotent by
   * (run, metric, step)), examples, events, skips and the file's new offset, in one transaction. When it throws,
   * none of it is stored.
   */
  commit(batch: Batch, examplesPerStep: number): Promise<BatchResult>;

  /**
   * Runs `fn` in one transaction (the engine's evaluation of a batch: alert changes, cursors and outbox rows
   * together). Calls on `tx` are inside it; the store's other callers wait until it ends.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;

  /** The leader lock `name`, or null while another process (or connection) holds it. It is released when the
   * holder releases it or its connection or process dies, so a dead leader is taken over. */
  tryLead(name: string): Promise<Leadership | null>;
}

/** What only the async outbox does: hand rows to deliverers under a lease. */
export interface OutboxDelivery {
  /**
   * Up to `limit` rows of the target, each the oldest open row of its run, now leased to `owner` (PostgreSQL: `FOR
   * UPDATE SKIP LOCKED`): two claimers at once never get the same row. A run whose oldest row is leased gives none,
   * so a run's rows go out one at a time, in order (a card before its edit or resolution), however many deliver;
   * rows of different runs are independent. Most urgent first: runs whose open rows include the most severe item
   * (critical, then warning; the `urgency` column of migrations 019 and pg/004), a run's older rows going with it
   * (its info head goes first when a critical row is behind it), then by id; returned in that order. None at or
   * after a row that waits for its next attempt (a failure holds its target back until then, whichever process
   * retries it). Rows set aside are skipped. `criticalExtra` more rows are handed out only if critical.
   */
  claim(target: string, opts: ClaimOptions): Promise<ClaimedRow[]>;
  /**
   * `done(id, at)`, then `claim(target, opts)` for the slot it frees, in one statement (PostgreSQL; one transaction
   * on SQLite): a delivery costs one round trip, not two. The claim sees the row as done (its run's next row may be
   * handed out) and hands out rows as `claim` does, most urgent first.
   */
  doneAndClaim(id: number, at: number, target: string, opts: ClaimOptions): Promise<ClaimedRow[]>;
  /** drops the leases `owner` holds on rows it did not deliver (it stops, or a failure stops its lane) */
  releaseClaims(owner: string): Promise<void>;
  /** drops every lease on rows not delivered; returns how many. Only for the one deliverer, once it holds the bot
   * lock (or SQLite's writer lock): whoever leased them is dead, and their rows need not wait out the lease */
  reclaimLeases(): Promise<number>;
  /**
   * Calls `fn` after another process commits outbox rows to deliver (PostgreSQL: LISTEN/NOTIFY), so that the one
   * deliverer posts them at once rather than on its next sweep; resolves to the way to stop. SQLite has none: the
   * process that writes the file both queues and delivers. `critical`: the rows include a critical one (or may: said
   * after a lost connection, for what was committed meanwhile).
   */
  listen?(fn: (critical: boolean) => void): Promise<() => Promise<void>>;
}

/** What a transaction body may do: everything but closing, nesting and leading. */
export type StoreTx = Omit<StoreContract, 'close' | 'transaction' | 'tryLead'>;

/** What each member of `T` is at run time: a method, a value, an object of them (a table), or optional. */
export type Members<T> = {
  // biome-ignore lint/complexity/noBannedTypes: `{} extends Pick<T, K>` is how a type tells an optional key
  [K in keyof T]-?: {} extends Pick<T, K>
    ? 'optional'
    : T[K] extends (...args: never[]) => unknown
      ? 'method'
      : T[K] extends object
        ? Members<T[K]>
        : 'value';
};

/** The contract's members, at run time, for the test that holds both stores to it (test/store/parity.test.ts): its
 * type lists every member of `StoreContract`, so one added there and not here does not compile. */
export const CONTRACT_MEMBERS: Members<StoreContract> = {
  kind: 'value',
  close: 'method',
  runs: { byId: 'method', byName: 'method', ensure: 'method', list: 'method' },
  files: { add: 'method', byPath: 'method', ofRun: 'method', skipsOf: 'method' },
  points: {
    after: 'method',
    allNames: 'method',
    columns: 'method',
    digest: 'method',
    epochsAt: 'method',
    latest: 'method',
    metricsOf: 'method',
    series: 'method',
    steps: 'method',
    upTo: 'method',
  },
  examples: { atOrBefore: 'method', between: 'method', extremes: 'method' },
  events: { after: 'method', config: 'method', meta: 'method' },
  attempts: { list: 'method', markRewound: 'method', replaying: 'method' },
  arrivals: { recent: 'method' },
  unread: { list: 'method' },
  alerts: {
    ack: 'method',
    byId: 'method',
    create: 'method',
    cursor: 'method',
    drop: 'method',
    events: 'method',
    fire: 'method',
    list: 'method',
    markNotified: 'method',
    open: 'method',
    openOf: 'method',
    resolve: 'method',
    saveCursor: 'method',
  },
  silences: { active: 'method', add: 'method', byId: 'method', end: 'method', expired: 'method' },
  outbox: {
    add: 'method',
    clearWait: 'method',
    done: 'method',
    failed: 'method',
    open: 'method',
    requeue: 'method',
    setAside: 'method',
    claim: 'method',
    doneAndClaim: 'method',
    releaseClaims: 'method',
    reclaimLeases: 'method',
    listen: 'optional',
  },
  chat: {
    byDelivery: 'method',
    byRef: 'method',
    ofAlert: 'method',
    record: 'method',
    setPayload: 'method',
    showing: 'method',
  },
  reports: { mark: 'method', stepAt: 'method' },
  commit: 'method',
  transaction: 'method',
  tryLead: 'method',
};
