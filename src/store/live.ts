/**
 * The synchronous store the ingestor, the engine and the live watcher write through (SQLite's `Store`, or a
 * PostgreSQL watcher's), one transaction per batch.
 */
import type { Alerts } from './alerts.ts';
import type { Members } from './contract.ts';
import type { Arrivals } from './arrivals.ts';
import type { Attempts } from './attempts.ts';
import type { Events } from './events.ts';
import type { Examples } from './examples.ts';
import type { Files } from './files.ts';
import type { Outbox } from './outbox.ts';
import type { Points } from './points.ts';
import type { Runs } from './runs.ts';
import type { Silences } from './silences.ts';
import type { Batch, BatchResult } from './sqlite/store.ts';
import type { Unread } from './unread.ts';

/**
 * What the ingestor, the rule engine and the live watcher use of a store: the SQLite `Store`'s table modules, as
 * far as they reach, and its transactions. It is synchronous on purpose: a batch, its rules and its outbox rows are
 * one transaction in which nothing else interleaves (no await inside), and SQLite answers from the same thread.
 * `Store` is one implementation; `postgres/pgLiveStore.ts` is the other, for watchers that write PostgreSQL: a worker
 * thread holds the connection and this thread waits for each statement, as it waits for SQLite's.
 */
export interface LiveStore {
  readonly runs: Pick<Runs, 'byId' | 'ensure' | 'list' | 'markEvaluated' | 'markLive' | 'unevaluated'>;
  readonly files: Pick<Files, 'add' | 'byPath' | 'clearSkips'>;
  readonly points: Pick<Points, 'after' | 'latest' | 'metricsOf' | 'series' | 'stepSpan' | 'upTo'>;
  readonly examples: Pick<Examples, 'atOrBefore'>;
  readonly alerts: Pick<
    Alerts,
    | 'announceable'
    | 'byId'
    | 'create'
    | 'cursor'
    | 'drop'
    | 'escalate'
    | 'fire'
    | 'firedByRule'
    | 'flushCursors'
    | 'markNotified'
    | 'openOf'
    | 'resolve'
    | 'rewindCursors'
    | 'saveCursor'
  >;
  readonly silences: Pick<Silences, 'active'>;
  readonly outbox: Pick<Outbox, 'add'>;
  readonly unread: Pick<Unread, 'forget' | 'note'>;
  readonly events: Pick<Events, 'after' | 'byId' | 'finished' | 'meta'>;
  readonly attempts: Pick<Attempts, 'list' | 'markRewound' | 'replaying'>;
  readonly arrivals: Pick<Arrivals, 'recent'>;

  /** One read of one file, in one transaction; `within` runs inside it after the batch is written (the rules). */
  commit(batch: Batch, examplesPerStep: number, within?: (r: BatchResult) => void): BatchResult;
  /** `commit`, then `then` with its result; inside a `group` a store may instead send the batch at once and answer it
   * with the group's other batches before the group commits (PostgreSQL: one round trip for all, not one per file),
   * running `within` and `then` then. */
  commitSoon(
    batch: Batch,
    examplesPerStep: number,
    within: ((r: BatchResult) => void) | undefined,
    then: (r: BatchResult) => void,
  ): void;
  /** `fn` in one transaction (a savepoint when one is open); rolled back when it throws. */
  transaction<T>(fn: () => T): T;
  /** Several files' reads in one transaction, each in a savepoint of its own (see `Store.group`). */
  group<T>(reads: () => T[]): { reads: T[]; failed: Error | null };
  /** How many groups have rolled back: a read that began in one stops once this changes. */
  readonly groupsRolledBack: number;
}

/** LiveStore's members at run time, table by table, for the test that holds `Store` and `PgLiveStore` to them
 * (test/store/parity.test.ts); typed so that a member added to `LiveStore` and not here does not compile. */
export const LIVE_MEMBERS: Members<LiveStore> = {
  runs: {
    byId: 'method',
    ensure: 'method',
    list: 'method',
    markEvaluated: 'method',
    markLive: 'method',
    unevaluated: 'method',
  },
  files: { add: 'method', byPath: 'method', clearSkips: 'method' },
  points: {
    after: 'method',
    latest: 'method',
    metricsOf: 'method',
    series: 'method',
    stepSpan: 'method',
    upTo: 'method',
  },
  examples: { atOrBefore: 'method' },
  alerts: {
    byId: 'method',
    announceable: 'method',
    create: 'method',
    cursor: 'method',
    drop: 'method',
    escalate: 'method',
    fire: 'method',
    firedByRule: 'method',
    flushCursors: 'method',
    markNotified: 'method',
    openOf: 'method',
    resolve: 'method',
    rewindCursors: 'method',
    saveCursor: 'method',
  },
  silences: { active: 'method' },
  outbox: { add: 'method' },
  unread: { forget: 'method', note: 'method' },
  events: { byId: 'method', after: 'method', finished: 'method', meta: 'method' },
  attempts: { list: 'method', markRewound: 'method', replaying: 'method' },
  arrivals: { recent: 'method' },
  commit: 'method',
  commitSoon: 'method',
  transaction: 'method',
  group: 'method',
  groupsRolledBack: 'value',
};
