/**
 * The store contract: the one asynchronous vocabulary of table families the app uses, implemented on SQLite and on
 * PostgreSQL, and the row shapes it hands out.
 */
import type { EventRecord } from './records.ts';
import type { AlertChange, AlertRow, Who } from './alerts.ts';
import type { AttemptRow } from './attempts.ts';
import type { ChatMessageRow } from './chatMessages.ts';
import type { EventRow } from './events.ts';
import type { StoredExample } from './examples.ts';
import type { FileRow, SkipCount } from './files.ts';
import type { OpenOutboxRow, OutboxRow } from './outbox.ts';
import type { LatestValue, SeriesPoint } from './points.ts';
import type { RunRow } from './runs.ts';
import type { Columns } from './seriesCache.ts';
import type { SeriesDigest } from './seriesDigest.ts';
import type { NewSilence, SilenceRow } from './silences.ts';
import type { Batch, BatchResult } from './sqlite/store.ts';
import type { UnreadRow } from './unread.ts';

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

/**
 * The store as the app will use it once it can be PostgreSQL as well as SQLite: asynchronous, and
 * nothing outside `store/` touches SQL or a driver. Methods are those the engine, ingestor, dispatcher, commands
 * and bots call on today's synchronous `Store` and its table modules, under one name each; rows have the same
 * shapes. Implemented by `sqliteAsync.ts` (over the synchronous Store) and `pg/pgStore.ts`.
 */
export interface StoreContract {
  readonly kind: 'sqlite' | 'postgres';
  close(): Promise<void>;

  // runs and files (ingestor, commands)
  ensureRun(name: string, path: string): Promise<RunRow>;
  runById(id: number): Promise<RunRow | undefined>;
  runByName(name: string): Promise<RunRow | undefined>;
  listRuns(): Promise<RunRow[]>;
  addFile(runId: number, path: string, format: string): Promise<FileRow>;
  fileByPath(path: string): Promise<FileRow | undefined>;
  filesOfRun(runId: number): Promise<FileRow[]>;
  skipsOf(fileId: number): Promise<Array<{ reason: string; count: number; sample: string }>>;

  /**
   * One read of one file: its points (a step written again replaces its values: batches are idempotent by
   * (run, metric, step)), examples, events, skips and the file's new offset, in one transaction. When it throws,
   * none of it is stored.
   */
  commit(batch: Batch, examplesPerStep: number): Promise<BatchResult>;

  // series (engine, commands, charts)
  metricsOf(runId: number): Promise<string[]>;
  steps(runId: number): Promise<number[]>;
  latest(runId: number): Promise<LatestValue[]>;
  series(runId: number, metric: string, last?: number): Promise<SeriesPoint[]>;
  /** values after `step`, ascending (what the engine has not looked at yet) */
  after(runId: number, metric: string, step: number): Promise<StepValue[]>;
  /** the last `n` values up to and including `step`, ascending; `finite` skips NaN and ±Infinity */
  upTo(runId: number, metric: string, step: number, n: number, finite?: boolean): Promise<StepValue[]>;
  examplesAtOrBefore(runId: number, step: number): Promise<StoredExample[]>;
  eventsAfter(runId: number, kinds: ReadonlyArray<EventRecord['kind']>, afterId: number): Promise<EventRow[]>;

  // what commands and reports read besides (run status, reward history, files, run report)
  /** every metric name of every run, sorted (chat reads free words against them) */
  metricNames(): Promise<string[]>;
  /** the whole series as two columns, steps ascending (charts and history of a million points) */
  columns(runId: number, metric: string): Promise<Columns>;
  /** what `reward history` shows of the series (or of its newest `last` points), from every point of it */
  digest(runId: number, metric: string, last?: number): Promise<SeriesDigest>;
  /** the epoch logged at each of `steps`, null where none was */
  epochsAt(runId: number, steps: readonly number[]): Promise<Array<number | null>>;
  /** every kept generation over steps `from`..`to`, oldest first */
  examplesBetween(runId: number, from: number, to: number): Promise<StoredExample[]>;
  /** the `n` best (or worst) kept generations over steps `from`..`to` */
  examplesExtremes(
    runId: number,
    from: number,
    to: number,
    which: 'best' | 'worst',
    n: number,
  ): Promise<StoredExample[]>;
  /** the latest value of each number the run's `meta` events gave (total_steps, ...) */
  runMeta(runId: number): Promise<Record<string, number>>;
  /** the configuration the run's `meta` events printed, later values over earlier ones */
  runConfig(runId: number): Promise<Record<string, string>>;
  attemptsOf(runId: number): Promise<AttemptRow[]>;
  /** the highest step of the newest attempt while it logs again steps an earlier one logged (below `runLast`) */
  replayingStep(runId: number, runLast: number | null): Promise<number | null>;
  /** the engine has rewound the run's rule cursors and alerts for this attempt (a restart is handled once) */
  markRewound(runId: number, attempt: number): Promise<void>;
  /** the newest reads that took the run to new steps (up to 400), oldest first: its pace, for the stall rule */
  arrivalsOf(runId: number): Promise<Arrival[]>;
  /** files that look like logs but that no format claims, of one run or all */
  unreadFiles(run?: string): Promise<UnreadRow[]>;

  // alerts (engine: open/update/resolve; commands and buttons: ack)
  openAlert(runId: number, rule: string, metric: string): Promise<AlertRow | undefined>;
  alertById(id: number): Promise<AlertRow | undefined>;
  openAlertsOf(runId: number): Promise<AlertRow[]>;
  listAlerts(opts: { runId?: number; all?: boolean }): Promise<AlertRow[]>;
  createAlert(
    runId: number,
    rule: string,
    metric: string,
    state: 'pending' | 'firing',
    c: AlertChange,
  ): Promise<AlertRow>;
  fireAlert(id: number, c: AlertChange): Promise<void>;
  resolveAlert(id: number, c: AlertChange): Promise<void>;
  /** a pending alert whose condition cleared before it fired */
  dropAlert(id: number): Promise<void>;
  ackAlert(id: number, by: Who, comment: string | null, at: number): Promise<void>;
  markNotified(id: number, state: 'firing' | 'resolved', at: number): Promise<void>;
  alertEvents(id: number): Promise<Array<{ at: number; step: number | null; state: string; details: string }>>;
  cursor(runId: number, rule: string, metric: string): Promise<RuleCursor | undefined>;
  saveCursor(runId: number, rule: string, metric: string, step: number, state: Record<string, unknown>): Promise<void>;

  // silences
  addSilence(s: NewSilence): Promise<SilenceRow>;
  endSilence(id: number, at: number): Promise<void>;
  activeSilences(now: number): Promise<SilenceRow[]>;
  silenceById(id: number): Promise<SilenceRow | undefined>;
  /** mutes whose time ran out but that are not marked ended yet */
  expiredSilences(now: number): Promise<SilenceRow[]>;

  // outbox (engine enqueues in its transaction; the one leader delivers)
  enqueue(runId: number, target: string, payload: unknown, at: number): Promise<void>;
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
  delivered(id: number, at: number): Promise<void>;
  /**
   * `delivered(id, at)`, then `claim(target, opts)` for the slot it frees, in one statement (PostgreSQL; one
   * transaction on SQLite): a delivery costs one round trip, not two. The claim sees the row as done (its run's next
   * row may be handed out) and hands out rows as `claim` does, most urgent first.
   */
  deliveredAndClaim(id: number, at: number, target: string, opts: ClaimOptions): Promise<ClaimedRow[]>;
  /** a failed try: counted, the lease dropped, the row due again at `nextAttemptAt` */
  failed(id: number, error: string, nextAttemptAt: number | null): Promise<void>;
  setAside(id: number, reason: string, at: number): Promise<void>;
  requeue(id: number): Promise<boolean>;
  openOutbox(): Promise<OpenOutboxRow[]>;
  /** the target's platform is back: its waiting rows may be claimed now rather than after their backoff */
  clearWait(target: string): Promise<void>;
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
  onOutbox?(fn: (critical: boolean) => void): Promise<() => Promise<void>>;

  // chat message ids (edits in place)
  recordMessage(target: string, ref: string, m: PostedMessage, at: number): Promise<void>;
  messageByDelivery(target: string, delivery: string): Promise<ChatMessageRow | undefined>;
  messageByRef(target: string, ref: string): Promise<ChatMessageRow | undefined>;
  messagesOfAlert(alertId: number, target: string): Promise<ChatMessageRow[]>;
  /** the messages of every target that show this alert, newest first */
  messagesShowing(alertId: number): Promise<ChatMessageRow[]>;
  /** what a posted message shows now (its alerts' latest captured states) */
  setMessagePayload(id: number, payload: unknown): Promise<void>;

  // scheduled reports (milestones, the daily digest): each sent once
  /** records the mark; false when it was there already */
  markReport(runId: number, mark: string, at: number): Promise<boolean>;
  /** the last step the run had logged by `at` (when steps arrived) */
  stepAt(runId: number, at: number): Promise<number | null>;

  /**
   * Runs `fn` in one transaction (the engine's evaluation of a batch: alert changes, cursors and outbox rows
   * together). Calls on `tx` are inside it; the store's other callers wait until it ends.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;

  /** The leader lock `name`, or null while another process (or connection) holds it. It is released when the
   * holder releases it or its connection or process dies, so a dead leader is taken over. */
  tryLead(name: string): Promise<Leadership | null>;
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
  ensureRun: 'method',
  runById: 'method',
  runByName: 'method',
  listRuns: 'method',
  addFile: 'method',
  fileByPath: 'method',
  filesOfRun: 'method',
  skipsOf: 'method',
  commit: 'method',
  metricsOf: 'method',
  steps: 'method',
  latest: 'method',
  series: 'method',
  after: 'method',
  upTo: 'method',
  examplesAtOrBefore: 'method',
  eventsAfter: 'method',
  metricNames: 'method',
  columns: 'method',
  digest: 'method',
  epochsAt: 'method',
  examplesBetween: 'method',
  examplesExtremes: 'method',
  runMeta: 'method',
  runConfig: 'method',
  attemptsOf: 'method',
  replayingStep: 'method',
  markRewound: 'method',
  arrivalsOf: 'method',
  unreadFiles: 'method',
  openAlert: 'method',
  alertById: 'method',
  openAlertsOf: 'method',
  listAlerts: 'method',
  createAlert: 'method',
  fireAlert: 'method',
  resolveAlert: 'method',
  dropAlert: 'method',
  ackAlert: 'method',
  markNotified: 'method',
  alertEvents: 'method',
  cursor: 'method',
  saveCursor: 'method',
  addSilence: 'method',
  endSilence: 'method',
  activeSilences: 'method',
  silenceById: 'method',
  expiredSilences: 'method',
  enqueue: 'method',
  claim: 'method',
  delivered: 'method',
  deliveredAndClaim: 'method',
  failed: 'method',
  setAside: 'method',
  requeue: 'method',
  openOutbox: 'method',
  clearWait: 'method',
  releaseClaims: 'method',
  reclaimLeases: 'method',
  onOutbox: 'optional',
  recordMessage: 'method',
  messageByDelivery: 'method',
  messageByRef: 'method',
  messagesOfAlert: 'method',
  messagesShowing: 'method',
  setMessagePayload: 'method',
  markReport: 'method',
  stepAt: 'method',
  transaction: 'method',
  tryLead: 'method',
};
