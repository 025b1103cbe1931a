/**
 * The worker thread of a PgLiveStore (pgLiveStore.ts): holds its one PostgreSQL connection and runs each call the
 * watcher thread makes on it in the order made (syncBridge.ts; writes come without waiting for their answer, and those
 * of one statement go out behind one another: `OVERLAPS`). The watcher says BEGIN, SAVEPOINT, COMMIT and ROLLBACK
 * itself, so a batch, its rules and its outbox rows are one transaction in which nothing interleaves.
 *
 * A lost connection: the call that finds it throws, naming the server, and the next call connects again; lost inside
 * a transaction, every call until the watcher's ROLLBACK throws, since what the transaction wrote went with it.
 */
import type pg from 'pg';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { endsConnection } from '../dbErrors.ts';
import { ShapedRows } from '../metricRows.ts';
import type { AlertRow } from '../alerts.ts';
import { ARRIVALS_KEPT } from '../arrivals.ts';
import type { AttemptRow } from '../attempts.ts';
import type { Arrival } from '../contract.ts';
import type { FileRow } from '../files.ts';
import type { RunRow } from '../runs.ts';
import type { Batch, BatchResult } from '../sqlite/store.ts';
import { HeldHeads, MetricIds, writeBatch } from './batch.ts';
import { COPY_MIN_POINTS } from './points.ts';
import { migratePg, newClient, newPool, preparing } from './connect.ts';
import { PgStore } from './pgStore.ts';
import { alertColumns, announceableAlerts, attemptColumns, runColumns } from './rows.ts';
import { serveSync, type SyncRequest } from './syncBridge.ts';
import { redactUrl } from './url.ts';

export interface LiveWorkerData {
  url: string;
  /** how the connection shows in `pg_stat_activity` */
  name: string;
  port: MessagePort;
  state: Int32Array;
}

/** What the worker tells its parent once, on start: connected with the schema up to date, or why not. */
export type WorkerStart = { kind: 'ready' } | { kind: 'failed'; message: string; code?: string };

/** `family.method` for each method of PgStore's families (`runs.byId`, ...). */
type StorePath = {
  [F in keyof PgStore & string]: PgStore[F] extends (...args: never[]) => unknown
    ? never
    : PgStore[F] extends object
      ? `${F}.${keyof PgStore[F] & string}`
      : never;
}[keyof PgStore & string];

/** The method of PgStore at `P`. */
type AtPath<P extends StorePath> = P extends `${infer F extends keyof PgStore}.${infer M}`
  ? M extends keyof PgStore[F]
    ? PgStore[F][M]
    : never
  : never;

/** PgStore's methods a watcher calls as they are, by their path. */
const FORWARDED = [
  'runs.byId',
  'runs.ensure',
  'runs.unevaluated',
  'runs.markLive',
  'runs.markEvaluated',
  'files.byPath',
  'files.add',
  'files.clearSkips',
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
  'alerts.create',
  'alerts.drop',
  'alerts.escalate',
  'alerts.fire',
  'alerts.resolve',
  'alerts.markNotified',
  'alerts.firedByRule',
  'alerts.openOf',
  'silences.active',
  'outbox.add',
  'unread.note',
  'unread.forget',
  'events.after',
  'events.byId',
  'events.finished',
  'events.meta',
  'attempts.list',
  'attempts.replaying',
  'arrivals.recent',
] as const satisfies ReadonlyArray<StorePath>;
type Forwarded = (typeof FORWARDED)[number];

/** The worker's own methods: transactions, a batch, the run's rule cursors as its row. */
interface Own {
  begin(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  savepoint(name: string): Promise<void>;
  release(name: string): Promise<void>;
  rollbackTo(name: string): Promise<void>;
  /** the batch written, the run's highest step before it (when it had metrics) and the file's row after it; with
   * `facts`, what the rules read first of the run after it, in the same round trip */
  writeBatch(batch: Batch, keep: number, facts: boolean): Promise<WrittenBatch>;
  /** as `writeBatch`, answered later (`writtenBatches`): resolves once the batch's last statement is sent, so that the
   * next batches go out behind it in the same round trip (a watcher's group of files) */
  writeBatchLater(batch: Batch, keep: number, facts: boolean): Promise<void>;
  /** what the batches written since the last call wrote, in order; throws the first one's error */
  writtenBatches(): Promise<WrittenBatch[]>;
  /** the scope's runs (a watcher's `runs.list`), each with its facts */
  runsWithFacts(scope: string): Promise<RunFacts[]>;
  /** the run's `run_cursors` row as JSON text (null when it has none) */
  runCursors(runId: number): Promise<string | null>;
  saveRunCursors(runId: number, json: string): Promise<void>;
  /** as PgStore's, and the run's held head dropped: its newest attempt changes */
  markRewound(runId: number, attempt: number): Promise<void>;
  close(): Promise<void>;
}

export interface WrittenBatch {
  result: BatchResult;
  runLast?: number | null;
  file?: FileRow;
  facts?: RunFacts;
}

/** A run's row, attempts and metric names as a batch (or a tick's list) left them, and the alerts its announcement
 * may read. */
export interface RunFacts {
  run: RunRow | undefined;
  attempts: AttemptRow[];
  metrics: string[];
  /** those of `PgStore.alerts.announceable` for any `firedSince` (pgLiveStore.ts picks among them) */
  alerts: AlertRow[];
  /** its newest arrivals, oldest first (`PgStore.arrivals.recent`): read with the list a tick starts from */
  arrivals?: Arrival[];
  /** the lowest step it kept generations of (null: none), so that a card of an earlier step knows it has none */
  examplesFrom: number | null;
}

/** Every method a PgLiveStore may call, with its arguments and what it resolves to. */
export type LiveOps = { [P in Forwarded]: AtPath<P> } & Own;

/**
 * The writes a watcher posts that send one statement, from the `run` they make at once, or none (a savepoint, held
 * for the next statement): posted, each goes out behind the one before without waiting for its answer (syncBridge.ts),
 * so that a batch's writes and COMMIT cost one round trip, not one each. A write that sends more, or waits before it
 * sends, must not be here: a later call's statement could go out between its statements.
 */
const OVERLAPS = new Set<keyof LiveOps>([
  'begin',
  'savepoint',
  'release',
  'saveRunCursors',
  'markRewound',
  'runs.markEvaluated',
  'runs.markLive',
  'files.clearSkips',
  'alerts.create',
  'alerts.drop',
  'alerts.escalate',
  'alerts.fire',
  'alerts.resolve',
  'alerts.markNotified',
  'outbox.add',
  'unread.note',
  'unread.forget',
]);

/** The connection and what goes with it. */
class Connection {
  private client: pg.Client | null = null;
  private store: PgStore | null = null;
  /** the client reported its connection gone (an error or its end) */
  private gone = false;
  private inTransaction = false;
  /** the connection was lost inside a transaction: nothing more of it can run, until the watcher rolls it back */
  private broken: Error | null = null;
  /** metric ids seen on this connection, dropped with a rollback (a name first written in it is gone again) */
  readonly ids = new MetricIds();
  /** what the runs' last batches left of what attempt tracking reads, dropped with a rollback */
  readonly heads = new HeldHeads();
  /** the watcher's clock for the call being run */
  now = 0;
  /** BEGIN, SAVEPOINT and RELEASE not sent yet: they go to the server with the next statement, in its round trip
   * (in its query string when it has no parameters, else pipelined just before it) */
  private deferred: string[] = [];
  /** the `sent` of the call being started, for the `run` it makes at once (`starting`) */
  private sending: (() => void) | undefined;

  constructor(
    private readonly url: string,
    private readonly name: string,
  ) {}

  /** The store on a live connection (connecting when there is none). */
  async open(): Promise<{ client: pg.Client; store: PgStore }> {
    if (this.broken) throw this.broken;
    if (this.client && this.gone) {
      this.dropClient();
      // lost while the transaction waited for the watcher's next call: what it wrote went with it
      if (this.inTransaction) {
        throw (this.broken = this.lostError(new Error('the server closed it'), 'lost the connection to'));
      }
    }
    if (!this.client) {
      const client = preparing(newClient(this.url, this.name, true));
      client.on('error', () => void (this.gone = true)); // without a listener, a server gone idle kills the thread
      client.on('end', () => void (this.gone = true));
      try {
        await client.connect();
      } catch (err) {
        void client.end().catch(() => {});
        throw this.lostError(err, 'cannot reach');
      }
      this.client = client;
      this.gone = false;
      this.store = PgStore.onConnection(this.url, client, () => this.now);
    }
    return { client: this.client, store: this.store! };
  }

  /** Runs `fn` on the connection, after the deferred statements unless `fn` sends them (`joined`); an error that
   * came with the connection's loss says so. Called at once by a call that overlaps (`overlaps`), it tells the call's
   * `sent` once `fn` has handed its statement to the driver. */
  async run<T>(fn: (c: { client: pg.Client; store: PgStore }) => Promise<T>, joins = false): Promise<T> {
    const sent = this.sending;
    this.sending = undefined;
    const c = await this.open();
    try {
      if (joins || this.deferred.length === 0) {
        const out = fn(c);
        sent?.();
        return await out;
      }
      // pipelined: `fn`'s first statement goes out behind them, in the same round trip
      const before = c.client.query(this.joined());
      const out = fn(c);
      sent?.();
      try {
        await before;
      } catch (err) {
        out.catch(() => {}); // it failed too, in the aborted transaction: the first error says why
        throw err;
      }
      return await out;
    } catch (err) {
      if (!this.gone && !isLost(err)) throw err;
      const lost = this.lostError(err, 'lost the connection to');
      this.dropClient();
      if (this.inTransaction) this.broken = lost;
      throw lost;
    }
  }

  /** Connects if needed (a server out of reach throws here), and sends BEGIN with the transaction's first
   * statement, in its round trip when that has no parameters (a savepoint), else just before it. */
  begin = (): Promise<void> =>
    this.run(async () => {
      this.defer('BEGIN');
      this.inTransaction = true;
    }, true);

  commit = (): Promise<void> =>
    this.run(async ({ client }) => {
      this.inTransaction = false; // a COMMIT that fails has rolled back
      await client.query(this.joined('COMMIT'));
    }, true);

  /** BEGIN, a savepoint or its release, sent with the next statement. */
  defer(sql: string): void {
    this.deferred.push(sql);
  }

  /** `call()`, whose `run`, if it makes one at once, tells `sent` when its statement is on its way. */
  starting<T>(sent: () => void, call: () => T): T {
    this.sending = sent;
    try {
      return call();
    } finally {
      this.sending = undefined;
    }
  }

  /** The deferred statements and `sql`, as one query string (no parameters: one round trip); none deferred after. */
  private joined(sql?: string): string {
    const all = sql === undefined ? this.deferred : [...this.deferred, sql];
    this.deferred = [];
    return all.join('; ');
  }

  /** Ends the transaction; one whose connection was lost needs no ROLLBACK: the server dropped it. */
  async rollback(): Promise<void> {
    const lost = this.broken !== null || this.client === null || this.gone;
    this.broken = null;
    this.inTransaction = false;
    this.ids.clear();
    this.heads.clear();
    this.deferred = []; // the savepoints of a transaction that is gone
    if (!lost) await this.run(({ client }) => client.query('ROLLBACK'), true);
  }

  rollbackTo = (name: string): Promise<void> =>
    this.run(async ({ client }) => {
      this.ids.clear();
      this.heads.clear();
      await client.query(this.joined(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`));
    }, true);

  async close(): Promise<void> {
    await this.client?.end().catch(() => {});
    this.dropClient();
  }

  private dropClient(): void {
    const client = this.client;
    client?.removeAllListeners();
    client?.on('error', () => {});
    void client?.end().catch(() => {});
    this.client = null;
    this.store = null;
    this.gone = false;
    this.deferred = [];
    this.heads.clear();
  }

  /** The error, naming the server (never its password), with its code kept. */
  private lostError(err: unknown, what: string): Error {
    const e = new Error(`${what} ${redactUrl(this.url)}: ${(err as Error).message}`);
    const code = (err as { code?: unknown }).code;
    return Object.assign(e, { code: typeof code === 'string' ? code : '08006' });
  }
}

/** An error that ends the connection (`endsConnection`), or the driver's word that it ended. */
function isLost(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return endsConnection(code);
  return /Connection terminated|not queryable/.test((err as Error).message ?? '');
}

/** The run's row, attempts and metric names, as PgStore's `runs.byId`, `attempts.list`, `points.metricsOf` read them,
 * and the alerts `alerts.announceable` returns for some `firedSince`, in one statement. */
async function runFacts(client: pg.ClientBase, runId: number): Promise<RunFacts> {
  const r = await client.query<FactsRow>(
    `SELECT ${runColumns('r')}, ${factColumns('$1', false)} FROM (VALUES (1)) AS one (x) LEFT JOIN runs r ON r.id = $1`,
    [runId],
  );
  return factsOfRow(r.rows[0]!);
}

/** The scope's runs (a watcher's `runs.list`), each with its facts and its arrivals (`arrivals.recent`): what a tick
 * reads of every run, in one statement instead of four per run. */
async function runsWithFacts(client: pg.ClientBase, scope: string): Promise<RunFacts[]> {
  const r = await client.query<FactsRow>(
    `SELECT ${runColumns('r')}, ${factColumns('r.id', true)}
     FROM runs r WHERE r.scope = $1 ORDER BY r.name COLLATE "C"`,
    [scope],
  );
  return r.rows.map(factsOfRow);
}

type FactsRow = RunRow & {
  rlwatch_examples_from: number | null;
  rlwatch_attempts: AttemptRow[];
  rlwatch_metrics: string[];
  rlwatch_alerts: AlertRow[];
  rlwatch_arrivals?: Arrival[];
};

/**
 * The columns beside a run's that hold its facts, for the run whose id is `id` (a parameter or a column): its
 * attempts, its metric names (in SQLite's order, bytes), its first step with generations, the alerts `announceable`
 * returns for any `firedSince` (the firing ones, the resolved ones whose firing was announced, and those that fired
 * and resolved unannounced), and with `arrivals` its newest arrivals. The rows turned into JSON are of the listed
 * columns (rows.ts), not whole: a column a newer migration adds stays out of them, as out of PgStore's.
 */
function factColumns(id: string, arrivals: boolean): string {
  const columns = [
    `(SELECT coalesce(json_agg(a ORDER BY a.attempt), '[]')
      FROM (SELECT ${attemptColumns()} FROM attempts WHERE run_id = ${id}) a) AS rlwatch_attempts`,
    `ARRAY(SELECT m.name FROM run_metrics x JOIN metrics m ON m.id = x.metric_id WHERE x.run_id = ${id}
           ORDER BY m.name COLLATE "C") AS rlwatch_metrics`,
    `(SELECT min(step) FROM examples WHERE run_id = ${id}) AS rlwatch_examples_from`,
    `(SELECT coalesce(json_agg(a ORDER BY a.id), '[]')
      FROM (SELECT ${alertColumns()} FROM alerts
            WHERE run_id = ${id} AND ${announceableAlerts('fired_at IS NOT NULL')}) a) AS rlwatch_alerts`,
  ];
  if (arrivals) {
    columns.push(`(SELECT coalesce(json_agg(json_build_object('at', a.at, 'steps', a.steps) ORDER BY a.id), '[]')
      FROM (SELECT id, at, steps FROM arrivals WHERE run_id = ${id} ORDER BY id DESC LIMIT ${ARRIVALS_KEPT}) a)
      AS rlwatch_arrivals`);
  }
  return columns.join(',\n');
}

function factsOfRow(row: FactsRow): RunFacts {
  const {
    rlwatch_attempts: attempts,
    rlwatch_metrics: metrics,
    rlwatch_alerts: alerts,
    rlwatch_arrivals,
    rlwatch_examples_from: examplesFrom,
    ...run
  } = row;
  const facts: RunFacts = { run: run.id === null ? undefined : run, attempts, metrics, alerts, examplesFrom };
  if (rlwatch_arrivals) facts.arrivals = rlwatch_arrivals;
  return facts;
}

/** How many points a batch holds at most (the same step logged twice counts twice). */
function pointsOf(b: Batch): number {
  let n = 0;
  for (const m of b.metrics) n += m.values.size;
  return n;
}

/** A batch as it crossed the thread: its columns lose their class (ShapedRows) in the copy. */
function revived(b: Batch): Batch {
  if (Array.isArray(b.metrics)) return b;
  const m = b.metrics;
  return { ...b, metrics: new ShapedRows(m.shapes, m.steps, m.shapeOf, m.values) };
}

function ops(conn: Connection): Own {
  /** batches whose statements are in flight, not yet answered (`writeBatchLater`) */
  let ahead: Array<Promise<WrittenBatch>> = [];
  /** `batch` revived (`revived`) */
  const write = (batch: Batch, keep: number, facts: boolean, sent?: () => void): Promise<WrittenBatch> =>
    conn.run(async ({ client }) => {
      const out: Partial<WrittenBatch> = {};
      let read: Promise<RunFacts> | undefined;
      out.result = await writeBatch(client, conn.ids, batch, keep, conn.now, {
        onRunLast: (r) => void (out.runLast = r),
        onFile: (f) => void (out.file = f),
        heads: conn.heads,
        // pipelined behind the batch's statement
        sent: () => {
          if (facts) void (read = runFacts(client, batch.runId)).catch(() => {});
          sent?.();
        },
      });
      if (read) out.facts = await read;
      return out as WrittenBatch;
    });
  return {
    begin: conn.begin,
    commit: conn.commit,
    rollback: () => {
      ahead = []; // their errors, if any, went with the transaction
      return conn.rollback();
    },
    savepoint: async (name) => conn.defer(`SAVEPOINT ${name}`),
    release: async (name) => conn.defer(`RELEASE SAVEPOINT ${name}`),
    rollbackTo: conn.rollbackTo,
    writeBatch: (batch, keep, facts) => write(revived(batch), keep, facts),
    async writeBatchLater(crossed, keep, facts) {
      const batch = revived(crossed);
      // a COPY needs the connection to itself: the batches ahead are answered first
      if (pointsOf(batch) >= COPY_MIN_POINTS) await Promise.allSettled(ahead);
      await new Promise<void>((sent) => {
        const written = write(batch, keep, facts, sent);
        written.then(
          () => sent(),
          () => sent(),
        ); // failed before its last statement: the error waits its turn
        written.catch(() => {});
        ahead.push(written);
      });
    },
    async writtenBatches() {
      const settled = await Promise.allSettled(ahead.splice(0));
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      return settled.map((s) => (s as PromiseFulfilledResult<WrittenBatch>).value);
    },
    runsWithFacts: (scope) => conn.run(({ client }) => runsWithFacts(client, scope)),
    runCursors: (runId) =>
      conn.run(async ({ client }) => {
        const r = await client.query<{ c: string }>('SELECT cursors::text AS c FROM run_cursors WHERE run_id = $1', [
          runId,
        ]);
        return r.rows[0]?.c ?? null;
      }),
    saveRunCursors: (runId, json) =>
      conn.run(async ({ client }) => {
        await client.query(
          `INSERT INTO run_cursors (run_id, cursors) VALUES ($1, $2::jsonb)
           ON CONFLICT (run_id) DO UPDATE SET cursors = excluded.cursors`,
          [runId, json],
        );
      }),
    markRewound: (runId, attempt) =>
      conn.run(({ store }) => {
        conn.heads.forgetRun(runId);
        return store.attempts.markRewound(runId, attempt);
      }),
    close: () => conn.close(),
  };
}

async function main(data: LiveWorkerData): Promise<void> {
  const conn = new Connection(data.url, data.name);
  const own = ops(conn);
  const forwarded = new Set<string>(FORWARDED);
  try {
    const pool = newPool(data.url, 1);
    try {
      await migratePg(pool);
    } finally {
      await pool.end();
    }
    await conn.open();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const start: WorkerStart = { kind: 'failed', message: (err as Error).message };
    parentPort!.postMessage(typeof code === 'string' ? { ...start, code } : start);
    return;
  }
  const methodOf = (name: string): Method | null => {
    if (Object.hasOwn(own, name)) return (own as unknown as Record<string, Method>)[name]!;
    if (!forwarded.has(name)) return null;
    const [family, method] = name.split('.') as [string, string];
    return (...args) =>
      conn.run(({ store }) => (store as unknown as Record<string, Record<string, Method>>)[family]![method]!(...args));
  };
  serveSync(
    data.port,
    data.state,
    async (req: SyncRequest, sent) => {
      conn.now = req.now;
      const method = methodOf(req.method);
      if (!method) throw new Error(`no such call: ${req.method}`);
      return conn.starting(sent, () => method(...req.args));
    },
    new Set(['rollback']), // what a posted write that failed was part of is gone with the ROLLBACK
    (req) => OVERLAPS.has(req.method as keyof LiveOps),
  );
  parentPort!.postMessage({ kind: 'ready' } satisfies WorkerStart);
}

type Method = (...args: unknown[]) => Promise<unknown>;

void main(workerData as LiveWorkerData);
