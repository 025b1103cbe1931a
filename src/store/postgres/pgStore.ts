/**
 * The store contract on PostgreSQL: a pool of connections, a transaction per batch, outbox claims with
 * `FOR UPDATE SKIP LOCKED`.
 */
import type pg from 'pg';
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
import { changeDetails, type RuleIncidents } from '../alerts.ts';
import { digestOfNewest, type SeriesDigest } from '../seriesDigest.ts';
import { ARRIVALS_KEPT } from '../arrivals.ts';
import { CRITICAL_URGENCY, handOutOrder, mergeable, type RankedRow } from '../outbox.ts';
import { replayingStep } from '../attempts.ts';
import { LOCK_CLASS, migratePg, newClient, newPool } from './connect.ts';
import { storable } from '../batchGuard.ts';
import { MetricIds, writeBatch } from './batch.ts';
import { CRITICAL_NOTICE, listenOutbox, OUTBOX_CHANNEL } from './outboxSignal.ts';
import { fromRow as eventFromRow, type Raw as EventDbRow } from '../events.ts';
import {
  alertColumns,
  announceableAlerts,
  attemptColumns,
  chatMessageColumns,
  eventColumns,
  exampleFromRow,
  fileColumns,
  runColumns,
  silenceColumns,
  unreadColumns,
  type ExampleDbRow,
} from './rows.ts';

type Db = pg.Pool | pg.ClientBase;

export interface PgStoreOptions {
  /** rlwatch's clock (tests inject one) */
  now?: () => number;
  /** connections in the pool */
  max?: number;
}

/**
 * The claim (`outbox.claim`): $1 target, $2 now, $3 limit, $4 owner, $5 lease end; row $6 is left out of the
 * target's open rows (0: none); $7 more rows if critical (`criticalExtra`: most urgent first, they come right after the
 * first $3). `before` is a CTE run in the same statement (PostgreSQL runs a data-modifying one whether or not it is
 * read).
 *
 * The target's open rows are read once (`open`, through outbox_pending), each run's head and rank taken from them,
 * and the due heads locked one by one by id, most urgent first, until enough are (a head another claimer holds is
 * skipped, and the next one taken: two deliverers share the work). A plan that joined the heads back to the table
 * trusted the planner's idea of the table's size: while autovacuum had not analysed a young outbox (its first
 * minute) it looked each head up by scanning every open row, 25-30 ms a claim with ~100 runs waiting (auto_explain),
 * most of PostgreSQL's time in the pg-watchers bench.
 */
export const claimStatement = (before: string): string =>
  `WITH ${before} open AS (
     SELECT id, run_id, urgency, claimed_until, next_attempt_at FROM outbox
     WHERE target = $1 AND done_at IS NULL AND dead_at IS NULL AND id <> $6),
   heads AS (
     SELECT DISTINCT ON (run_id) id, claimed_until, next_attempt_at, max(urgency) OVER (PARTITION BY run_id) AS rank
     FROM open ORDER BY run_id, id),
   due AS (
     SELECT id, rank FROM heads
     WHERE (claimed_until IS NULL OR claimed_until <= $2) AND (next_attempt_at IS NULL OR next_attempt_at <= $2)
       AND id < coalesce((SELECT min(id) FROM open WHERE next_attempt_at > $2), ${Number.MAX_SAFE_INTEGER})),
   locked AS (
     SELECT d.id, d.rank FROM (SELECT id, rank FROM due ORDER BY rank DESC, id) d
     CROSS JOIN LATERAL (
       SELECT 1 FROM outbox o WHERE o.id = d.id AND o.done_at IS NULL AND o.dead_at IS NULL
         AND (o.claimed_until IS NULL OR o.claimed_until <= $2)
       FOR UPDATE SKIP LOCKED) l
     ORDER BY d.rank DESC, d.id LIMIT $3::int + $7::int),
   kept AS (
     SELECT id, rank FROM (SELECT id, rank, row_number() OVER (ORDER BY rank DESC, id) AS pos FROM locked) k
     WHERE pos <= $3::int OR rank >= ${CRITICAL_URGENCY})
   UPDATE outbox o SET claimed_by = $4, claimed_until = $5, merge_alerts = NULL FROM kept WHERE o.id = kept.id
   RETURNING o.id, o.created_at, o.run_id, o.target, o.payload, o.attempts, o.next_attempt_at, kept.rank`;

/**
 * As SQLite's (src/store/outbox.ts): `outbox.add`'s $2 run and $3 target; $5 the new items' alert ids, $6 their JSON,
 * $7 the row's room and $8 its room for edits, as `mergeable` gives them. A row a claim takes meanwhile is checked
 * again once its claim commits (READ COMMITTED), and no longer merges.
 */
const MERGE = `UPDATE outbox o SET payload = left(o.payload, -2) || ',' || $6 || ']}',
    merge_alerts = left(o.merge_alerts, -1) || ',' || substr($5::text, 2)
  WHERE o.id = (SELECT max(id) FROM outbox WHERE target = $3 AND run_id = $2 AND done_at IS NULL AND dead_at IS NULL)
    AND o.merge_alerts IS NOT NULL
    AND ((jsonb_array_length(o.merge_alerts::jsonb) <= $7::int
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(o.merge_alerts::jsonb) a,
                            jsonb_array_elements($5::text::jsonb) b WHERE a = b))
      OR (jsonb_array_length(o.merge_alerts::jsonb) <= $8::int
          AND NOT jsonb_path_exists(o.payload::jsonb, '$.items[*] ? (@.kind != "resolved" && @.kind != "update")')))
  RETURNING o.urgency`;

/** The `alert_events` row of an alert's change, in the statement that makes the change (one statement: a watcher
 * sends it without waiting, behind the others: liveWorker.ts); each part is SQL (a parameter, a column). */
const eventOf = (id: string, at: string, step: string, state: string, details: string): string =>
  `INSERT INTO alert_events (alert_id, at, step, state, details) SELECT ${id}, ${at}, ${step}, ${state}, ${details}`;
const eventDetails = (c: AlertChange): string => JSON.stringify(changeDetails(c));

/**
 * The store contract on PostgreSQL (`--db postgres://...`): a pool of connections, every batch one transaction on
 * one of them, outbox claims with `FOR UPDATE SKIP LOCKED`, the leader lock a session advisory lock.
 */
export class PgStore implements StoreContract {
  readonly kind = 'postgres' as const;
  /** the connections holding this store's leader locks: closing the store ends them too */
  private readonly leaders = new Set<Leadership>();
  /** rlwatch's clock: a function, kept out of the store's public members (test/store/parity.test.ts) */
  readonly #now: () => number;

  private constructor(
    private readonly url: string,
    /** null for a store bound to one connection that its owner opened (`onConnection`) */
    private readonly pool: pg.Pool | null,
    private readonly db: Db,
    private readonly ids: MetricIds,
    now: () => number,
  ) {
    this.#now = now;
  }

  /** Connects and brings the schema up to date (migrations/pg/). */
  static async open(url: string, opts: PgStoreOptions = {}): Promise<PgStore> {
    const pool = newPool(url, opts.max);
    try {
      await migratePg(pool);
    } catch (err) {
      await pool.end();
      throw err;
    }
    return new PgStore(url, pool, pool, new MetricIds(), opts.now ?? Date.now);
  }

  /** The store on one connection its caller opened and owns (the PgLiveStore worker's): every call runs on it, and
   * `transaction` does not begin one of its own (the caller says BEGIN and COMMIT). */
  static onConnection(url: string, client: pg.ClientBase, now: () => number): PgStore {
    return new PgStore(url, null, client, new MetricIds(), now);
  }

  async close(): Promise<void> {
    await Promise.all([...this.leaders].map((l) => l.release()));
    await this.pool?.end();
  }

  // every statement of this store but a batch's (writeBatch, guarded as a whole) is sent from here
  async #rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.db.query(sql, params.map(storable))).rows as T[];
  }

  async #one<T>(sql: string, params: unknown[] = []): Promise<T | undefined> {
    return (await this.#rows<T>(sql, params))[0];
  }

  async #run(sql: string, params: unknown[] = []): Promise<number> {
    return (await this.db.query(sql, params.map(storable))).rowCount ?? 0;
  }

  commit(batch: Batch, examplesPerStep: number): Promise<BatchResult> {
    return this.#inTransaction((db) => writeBatch(db, this.ids, batch, examplesPerStep, this.#now()));
  }

  /** `meta` events' JSON (`vals` or `config`) merged, later over earlier */
  async #merged<T>(runId: number, column: 'vals' | 'config'): Promise<Record<string, T>> {
    const rows = await this.#rows<{ v: string }>(
      `SELECT ${column} AS v FROM events WHERE run_id = $1 AND kind = 'meta' AND ${column} IS NOT NULL ORDER BY id`,
      [runId],
    );
    return Object.assign({}, ...rows.map((r) => JSON.parse(r.v) as Record<string, T>)) as Record<string, T>;
  }

  // The contract's tables. Each also has what a watcher's live store (postgres/pgLiveStore.ts) reads and writes besides
  // the contract, under the SQLite table's name (`runs.unevaluated`, `alerts.announceable`, ...).

  readonly runs = {
    /** A run's name is unique: a name taken by another path gets a numeric suffix (as in SQLite). Its path is unique
     * within its `scope` (a watcher's run prefix: two hosts may both have /data/runs/grpo-7; '' for the contract). */
    ensure: async (name: string, path: string, scope = ''): Promise<RunRow> => {
      for (let tries = 0; tries < 10; tries++) {
        const sql = `SELECT ${runColumns()} FROM runs WHERE scope = $1 AND path = $2`;
        const existing = await this.#one<RunRow>(sql, [scope, path]);
        if (existing) return existing;
        let candidate = name;
        for (let i = 2; await this.runs.byName(candidate); i++) candidate = `${name}~${i}`;
        // another process may take the path or the name meanwhile: then look again
        const made = await this.#one<RunRow>(
          `INSERT INTO runs (name, path, created_at, scope) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
         RETURNING ${runColumns()}`,
          [candidate, path, this.#now(), scope],
        );
        if (made) return made;
      }
      throw new Error(`run ${name} (${path}): its name and path keep being taken by other processes`);
    },
    byId: (id: number): Promise<RunRow | undefined> =>
      this.#one(`SELECT ${runColumns()} FROM runs WHERE id = $1`, [id]),
    byName: (name: string): Promise<RunRow | undefined> =>
      this.#one(`SELECT ${runColumns()} FROM runs WHERE name = $1`, [name]),
    list: (): Promise<RunRow[]> => this.#rows(`SELECT ${runColumns()} FROM runs ORDER BY name`),
    /** Runs of the scope with committed batches the engine has not evaluated (`Runs.unevaluated`). */
    unevaluated: (scope: string): Promise<number[]> =>
      this.#rows<{ id: number }>('SELECT id FROM runs WHERE scope = $1 AND evaluated < batches ORDER BY id', [
        scope,
      ]).then((r) => r.map((x) => x.id)),
    markLive: async (runId: number): Promise<void> =>
      void (await this.#run(
        'UPDATE runs SET live_at = active_at WHERE id = $1 AND live_at IS DISTINCT FROM active_at',
        [runId],
      )),
    markEvaluated: async (runId: number): Promise<void> =>
      void (await this.#run('UPDATE runs SET evaluated = batches WHERE id = $1', [runId])),
  };

  readonly files = {
    /** The file, in its run's scope. */
    add: async (runId: number, path: string, format: string): Promise<FileRow> => {
      const sql = `INSERT INTO files (run_id, path, format, scope) SELECT $1, $2, $3, scope FROM runs WHERE id = $1
                 RETURNING ${fileColumns()}`;
      return (await this.#one<FileRow>(sql, [runId, path, format]))!;
    },
    /** The file at `path` of a run of `scope` ('' for the contract). */
    byPath: (path: string, scope = ''): Promise<FileRow | undefined> =>
      this.#one(`SELECT ${fileColumns()} FROM files WHERE scope = $1 AND path = $2`, [scope, path]),
    ofRun: (runId: number): Promise<FileRow[]> =>
      this.#rows(`SELECT ${fileColumns()} FROM files WHERE run_id = $1 ORDER BY path`, [runId]),
    skipsOf: (fileId: number): Promise<Array<{ reason: string; count: number; sample: string }>> =>
      this.#rows('SELECT reason, count, sample FROM file_skips WHERE file_id = $1 ORDER BY count DESC', [fileId]),
    /** A file read whole again: the skips of an earlier read no longer stand. */
    clearSkips: async (fileId: number): Promise<void> =>
      void (await this.#run(
        'WITH gone AS (DELETE FROM file_skips WHERE file_id = $1) UPDATE files SET skipped = 0 WHERE id = $1',
        [fileId],
      )),
  };

  readonly points = {
    metricsOf: (runId: number): Promise<string[]> =>
      this.#rows<{ name: string }>(
        // in SQLite's order (bytes), whatever the database's collation: rules go through metrics in this order
        `SELECT m.name FROM run_metrics r JOIN metrics m ON m.id = r.metric_id WHERE r.run_id = $1
       ORDER BY m.name COLLATE "C"`,
        [runId],
      ).then((r) => r.map((x) => x.name)),
    steps: (runId: number): Promise<number[]> =>
      this.#rows<{ step: number }>('SELECT step FROM steps WHERE run_id = $1 ORDER BY step', [runId]).then((r) =>
        r.map((x) => x.step),
      ),
    latest: (runId: number): Promise<LatestValue[]> =>
      this.#rows(
        `SELECT m.name AS metric, p.step, p.value
       FROM run_metrics r
       JOIN metrics m ON m.id = r.metric_id
       JOIN LATERAL (SELECT step, value FROM points q WHERE q.run_id = r.run_id AND q.metric_id = r.metric_id
                     ORDER BY step DESC LIMIT 1) p ON true
       WHERE r.run_id = $1
       ORDER BY m.name`,
        [runId],
      ),
    series: async (runId: number, metric: string, last?: number): Promise<SeriesPoint[]> => {
      const rows = await this.#rows<SeriesPoint>(
        `SELECT p.step, e.value AS epoch, p.value
       FROM points p
       JOIN metrics m ON m.id = p.metric_id AND m.name = $2
       LEFT JOIN points e ON e.run_id = p.run_id AND e.step = p.step
         AND e.metric_id = (SELECT id FROM metrics WHERE name = 'epoch')
       WHERE p.run_id = $1
       ORDER BY p.step DESC
       LIMIT $3`,
        [runId, metric, last ?? null],
      );
      return rows.reverse();
    },
    after: (runId: number, metric: string, step: number): Promise<StepValue[]> =>
      this.#rows(
        `SELECT p.step, p.value FROM points p JOIN metrics m ON m.id = p.metric_id AND m.name = $2
       WHERE p.run_id = $1 AND p.step > $3 ORDER BY p.step`,
        [runId, metric, step],
      ),
    upTo: async (runId: number, metric: string, step: number, n: number, finite = false): Promise<StepValue[]> => {
      // PostgreSQL's NaN equals itself and sorts above every number
      const where = finite ? `AND p.value <> 'NaN' AND abs(p.value) <> 'Infinity'` : '';
      const rows = await this.#rows<StepValue>(
        `SELECT p.step, p.value FROM points p JOIN metrics m ON m.id = p.metric_id AND m.name = $2
       WHERE p.run_id = $1 AND p.step <= $3 ${where} ORDER BY p.step DESC LIMIT $4`,
        [runId, metric, step, n],
      );
      return rows.reverse();
    },
    allNames: (): Promise<string[]> =>
      this.#rows<{ name: string }>('SELECT name FROM metrics ORDER BY name').then((r) => r.map((x) => x.name)),
    columns: async (runId: number, metric: string): Promise<Columns> => {
      const rows = await this.#rows<StepValue>(
        `SELECT p.step, p.value FROM points p JOIN metrics m ON m.id = p.metric_id AND m.name = $2
       WHERE p.run_id = $1 ORDER BY p.step`,
        [runId, metric],
      );
      const steps = new Float64Array(rows.length);
      const values = new Float64Array(rows.length);
      rows.forEach((r, i) => {
        steps[i] = r.step;
        values[i] = r.value;
      });
      return { steps, values, length: rows.length };
    },
    digest: async (runId: number, metric: string, last?: number): Promise<SeriesDigest> =>
      digestOfNewest(await this.points.columns(runId, metric), last),
    epochsAt: async (runId: number, steps: readonly number[]): Promise<Array<number | null>> => {
      const rows = await this.#rows<StepValue>(
        `SELECT p.step, p.value FROM points p JOIN metrics m ON m.id = p.metric_id AND m.name = 'epoch'
       WHERE p.run_id = $1 AND p.step = ANY($2::bigint[])`,
        [runId, [...steps]],
      );
      const at = new Map(rows.map((r) => [r.step, r.value]));
      return steps.map((s) => at.get(s) ?? null);
    },
    /** How long the run took from its first logged step to its last, by when rlwatch read them (`Points.stepSpan`). */
    stepSpan: (runId: number): Promise<number | null> =>
      this.#one<{ span: number | null }>('SELECT max(at) - min(at) AS span FROM steps WHERE run_id = $1', [runId]).then(
        (r) => r?.span ?? null,
      ),
  };

  readonly examples = {
    atOrBefore: async (runId: number, step: number): Promise<StoredExample[]> => {
      const rows = await this.#rows<ExampleDbRow>(
        `SELECT step, key, reward, prompt, completion, breakdown FROM examples
       WHERE run_id = $1 AND step = (SELECT max(step) FROM examples WHERE run_id = $1 AND step <= $2)
       ORDER BY reward DESC, key`,
        [runId, step],
      );
      return rows.map(exampleFromRow);
    },
    between: (runId: number, from: number, to: number): Promise<StoredExample[]> =>
      this.#rows<ExampleDbRow>(
        `SELECT step, key, reward, prompt, completion, breakdown FROM examples
       WHERE run_id = $1 AND step BETWEEN $2 AND $3 ORDER BY step, key`,
        [runId, from, to],
      ).then((r) => r.map(exampleFromRow)),
    extremes: (runId: number, from: number, to: number, which: 'best' | 'worst', n: number) =>
      this.#rows<ExampleDbRow>(
        `SELECT step, key, reward, prompt, completion, breakdown FROM examples
       WHERE run_id = $1 AND step BETWEEN $2 AND $3 AND reward IS NOT NULL
       ORDER BY reward ${which === 'best' ? 'DESC' : 'ASC'}, step DESC, key LIMIT $4`,
        [runId, from, to, n],
      ).then((r) => r.map(exampleFromRow)),
  };

  readonly events = {
    after: async (runId: number, kinds: ReadonlyArray<EventRecord['kind']>, afterId: number): Promise<EventRow[]> => {
      const rows = await this.#rows<EventDbRow>(
        `SELECT ${eventColumns()} FROM events WHERE run_id = $1 AND id > $2 AND kind = ANY($3) ORDER BY id`,
        [runId, afterId, [...kinds]],
      );
      return rows.map(eventFromRow);
    },
    meta: (runId: number): Promise<Record<string, number>> => this.#merged(runId, 'vals'),
    config: (runId: number): Promise<Record<string, string>> => this.#merged(runId, 'config'),
    byId: (id: number): Promise<EventRow | undefined> =>
      this.#one<EventDbRow>(`SELECT ${eventColumns()} FROM events WHERE id = $1`, [id]).then(
        (r) => r && eventFromRow(r),
      ),
    /** The run's last `finished` event (`Events.finished`). */
    finished: (runId: number): Promise<EventRow | undefined> =>
      this.#one<EventDbRow>(
        `SELECT ${eventColumns()} FROM events WHERE run_id = $1 AND kind = 'finished' ORDER BY id DESC LIMIT 1`,
        [runId],
      ).then((r) => r && eventFromRow(r)),
  };

  readonly attempts = {
    list: (runId: number): Promise<AttemptRow[]> =>
      this.#rows(`SELECT ${attemptColumns()} FROM attempts WHERE run_id = $1 ORDER BY attempt`, [runId]),
    replaying: async (runId: number, runLast: number | null): Promise<number | null> => {
      const latest = await this.#one<AttemptRow>(
        `SELECT ${attemptColumns()} FROM attempts WHERE run_id = $1 ORDER BY attempt DESC LIMIT 1`,
        [runId],
      );
      return replayingStep(latest, runLast);
    },
    markRewound: async (runId: number, attempt: number): Promise<void> =>
      void (await this.#run('UPDATE attempts SET rewound = 1 WHERE run_id = $1 AND attempt = $2', [runId, attempt])),
  };

  readonly arrivals = {
    recent: async (runId: number): Promise<Arrival[]> => {
      const rows = await this.#rows<Arrival>(
        `SELECT at, steps FROM arrivals WHERE run_id = $1 ORDER BY id DESC LIMIT ${ARRIVALS_KEPT}`,
        [runId],
      );
      return rows.reverse();
    },
  };

  readonly unread = {
    list: (run?: string): Promise<UnreadRow[]> =>
      this.#rows(
        `SELECT ${unreadColumns()} FROM unread_files WHERE ($1::text IS NULL OR run = $1) ORDER BY run, rel_path`,
        [run ?? null],
      ),
    /** A file that no format claims (yet), as seen by the watcher of `scope` (`Unread.note`). */
    note: async (row: UnreadRow, scope: string): Promise<void> =>
      void (await this.#run(
        `INSERT INTO unread_files (scope, path, run, run_dir, rel_path, reason, size, seen_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (scope, path) DO UPDATE SET run = excluded.run, run_dir = excluded.run_dir,
         rel_path = excluded.rel_path, reason = excluded.reason, size = excluded.size, seen_at = excluded.seen_at`,
        [scope, row.path, row.run, row.run_dir, row.rel_path, row.reason, row.size, row.seen_at],
      )),
    forget: async (path: string, scope: string): Promise<void> =>
      void (await this.#run('DELETE FROM unread_files WHERE scope = $1 AND path = $2', [scope, path])),
  };

  readonly alerts = {
    open: (runId: number, rule: string, metric: string): Promise<AlertRow | undefined> =>
      this.#one(
        `SELECT ${alertColumns()} FROM alerts WHERE run_id = $1 AND rule = $2 AND metric = $3 AND state != 'resolved'`,
        [runId, rule, metric],
      ),
    byId: (id: number): Promise<AlertRow | undefined> =>
      this.#one(`SELECT ${alertColumns()} FROM alerts WHERE id = $1`, [id]),
    openOf: (runId: number): Promise<AlertRow[]> =>
      this.#rows(`SELECT ${alertColumns()} FROM alerts WHERE run_id = $1 AND state != 'resolved' ORDER BY id`, [runId]),
    list: (opts: { runId?: number; all?: boolean }): Promise<AlertRow[]> =>
      this.#rows(
        `SELECT ${alertColumns()} FROM alerts WHERE ($1::bigint IS NULL OR run_id = $1) AND ($2 OR state = 'firing')
       ORDER BY id DESC`,
        [opts.runId ?? null, opts.all ?? false],
      ),
    /** `id`: one taken from the ids' sequence beforehand (`alerts.ids`), as a watcher that sends it without waiting
     * does. */
    create: async (
      runId: number,
      rule: string,
      metric: string,
      state: 'pending' | 'firing',
      c: AlertChange,
      id: number | null = null,
    ): Promise<AlertRow> => {
      const firing = state === 'firing';
      return (await this.#one<AlertRow>(
        `WITH made AS (
         INSERT INTO alerts (id, run_id, rule, metric, severity, state, summary, details, started_step, started_at,
           fired_step, fired_at)
         VALUES (coalesce($12::bigint, nextval(pg_get_serial_sequence('alerts', 'id'))), $1, $2, $3, $4, $5, $6, $7,
           $8, $9, $10, $11)
         RETURNING ${alertColumns()}),
       event AS (${eventOf('id', '$9', '$8', '$5', '$13')} FROM made)
       SELECT * FROM made`,
        [
          runId,
          rule,
          metric,
          c.severity,
          state,
          c.summary,
          JSON.stringify(c.details),
          c.step,
          c.at,
          firing ? c.step : null,
          firing ? c.at : null,
          id,
          eventDetails(c),
        ],
      ))!;
    },
    /** `n` new alert ids, in order, taken from the sequence (none is given twice, even when the insert that used one
     * rolled back). */
    ids: (n: number): Promise<number[]> =>
      this.#rows<{ id: number }>(
        `SELECT nextval(pg_get_serial_sequence('alerts', 'id')) AS id FROM generate_series(1, $1::int) ORDER BY 1`,
        [n],
      ).then((r) => r.map((x) => x.id)),
    fire: async (id: number, c: AlertChange): Promise<void> => {
      await this.#run(
        `WITH fired AS (
         UPDATE alerts SET state = 'firing', fired_step = $2, fired_at = $3, severity = $4, summary = $5, details = $6
         WHERE id = $1)
       ${eventOf('$1', '$3', '$2', "'firing'", '$7')}`,
        [id, c.step, c.at, c.severity, c.summary, JSON.stringify(c.details), eventDetails(c)],
      );
    },
    /** `Alerts.escalate`: a firing alert's new severity, summary and details, `fired_at`, and its announcement
     * cleared, with its event, in one statement; an alert not firing is left as it is. */
    escalate: async (id: number, c: AlertChange): Promise<void> => {
      await this.#run(
        `WITH escalated AS (
         UPDATE alerts SET severity = $4, summary = $5, details = $6, fired_at = $3, notified_state = NULL,
           notified_at = NULL
         WHERE id = $1 AND state = 'firing' RETURNING id)
       ${eventOf('id', '$3', '$2', "'firing'", '$7')} FROM escalated`,
        [id, c.step, c.at, c.severity, c.summary, JSON.stringify(c.details), eventDetails(c)],
      );
    },
    resolve: async (id: number, c: AlertChange): Promise<void> => {
      const details = eventDetails(c);
      // the same text twice: $4 is read as jsonb, the event keeps $5 as written
      await this.#run(
        `WITH resolved AS (
         UPDATE alerts SET state = 'resolved', resolved_step = $2, resolved_at = $3,
           details = (details::jsonb || jsonb_build_object('resolved', $4::jsonb))::text WHERE id = $1)
       ${eventOf('$1', '$3', '$2', "'resolved'", '$5')}`,
        [id, c.step, c.at, details, details],
      );
    },
    drop: async (id: number): Promise<void> => void (await this.#run('DELETE FROM alerts WHERE id = $1', [id])),
    ack: async (id: number, by: Who, comment: string | null, at: number): Promise<void> =>
      void (await this.#run(
        'UPDATE alerts SET acked_by = $2, acked_by_name = $3, acked_at = $4, ack_comment = $5 WHERE id = $1',
        [id, by.id, by.name, at, comment],
      )),
    markNotified: async (id: number, state: 'firing' | 'resolved', at: number): Promise<void> =>
      void (await this.#run('UPDATE alerts SET notified_state = $2, notified_at = $3 WHERE id = $1', [id, state, at])),
    events: (id: number): Promise<Array<{ at: number; step: number | null; state: string; details: string }>> =>
      this.#rows('SELECT at, step, state, details FROM alert_events WHERE alert_id = $1 ORDER BY id', [id]),
    cursor: async (runId: number, rule: string, metric: string): Promise<RuleCursor | undefined> => {
      const row = await this.#one<{ c: RuleCursor | null }>(
        'SELECT cursors -> $2::text -> $3::text AS c FROM run_cursors WHERE run_id = $1',
        [runId, rule, metric],
      );
      return row?.c ?? undefined;
    },
    /** One cursor merged into the run's row (`run_cursors`: one row per run, as in SQLite). */
    saveCursor: async (
      runId: number,
      rule: string,
      metric: string,
      step: number,
      state: RuleCursor['state'],
    ): Promise<void> =>
      void (await this.#run(
        `INSERT INTO run_cursors AS r (run_id, cursors)
       VALUES ($1, jsonb_build_object($2::text,
         jsonb_build_object($3::text, jsonb_build_object('step', $4::bigint, 'state', $5::jsonb))))
       ON CONFLICT (run_id) DO UPDATE SET cursors = jsonb_set(r.cursors, ARRAY[$2::text],
         coalesce(r.cursors -> $2::text, '{}'::jsonb) || (excluded.cursors -> $2::text))`,
        [runId, rule, metric, step, JSON.stringify(state)],
      )),
    /** `Alerts.announceable` in one query: the firing alerts, the resolved ones whose firing was announced, and the
     * ones that fired at or after `firedSince` and resolved before they could be announced; in id order. */
    announceable: (runId: number, firedSince: number | null): Promise<AlertRow[]> =>
      this.#rows(
        `SELECT ${alertColumns()} FROM alerts WHERE run_id = $1 AND ${announceableAlerts('fired_at >= $2')} ORDER BY id`,
        [runId, firedSince],
      ),
    /** The run's incidents that fired, by rule (`Alerts.firedByRule`). */
    firedByRule: (runId: number): Promise<RuleIncidents[]> =>
      this.#rows(
        `SELECT rule, CASE max(CASE severity WHEN 'critical' THEN 3 WHEN 'warning' THEN 2 ELSE 1 END)
           WHEN 3 THEN 'critical' WHEN 2 THEN 'warning' ELSE 'info' END AS severity,
         count(*) AS incidents, count(*) FILTER (WHERE state = 'firing') AS firing
       FROM alerts WHERE run_id = $1 AND fired_at IS NOT NULL GROUP BY rule ORDER BY rule COLLATE "C"`,
        [runId],
      ),
  };

  readonly silences = {
    add: async (s: NewSilence): Promise<SilenceRow> => {
      return (await this.#one<SilenceRow>(
        `INSERT INTO silences (run, rule, severity, starts_at, ends_at, author, author_name, reason)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${silenceColumns()}`,
        [s.run, s.rule, s.severity, s.starts_at, s.ends_at, s.author, s.author_name ?? s.author, s.reason],
      ))!;
    },
    end: async (id: number, at: number): Promise<void> =>
      void (await this.#run('UPDATE silences SET ended_at = $2 WHERE id = $1', [id, at])),
    /** From its creation until its end whatever the clock reads between (Silences.active) */
    active: (now: number): Promise<SilenceRow[]> =>
      this.#rows(`SELECT ${silenceColumns()} FROM silences WHERE ended_at IS NULL AND ends_at > $1 ORDER BY id`, [now]),
    byId: (id: number): Promise<SilenceRow | undefined> =>
      this.#one(`SELECT ${silenceColumns()} FROM silences WHERE id = $1`, [id]),
    expired: (now: number): Promise<SilenceRow[]> =>
      this.#rows(`SELECT ${silenceColumns()} FROM silences WHERE ended_at IS NULL AND ends_at <= $1 ORDER BY id`, [
        now,
      ]),
  };

  readonly outbox = {
    /** Each change that gives the deliverer work is announced (OUTBOX_CHANNEL): it posts at once, not on its sweep. A
     * critical row says so (CRITICAL_NOTICE): only then does the deliverer look for one for the slot it keeps. */
    add: async (runId: number, target: string, payload: unknown, at: number): Promise<void> => {
      const m = mergeable(payload);
      void (await this.#run(
        `WITH merged AS (${m ? MERGE : 'SELECT NULL::smallint AS urgency WHERE false'}),
       added AS (
         INSERT INTO outbox (created_at, run_id, target, payload, merge_alerts)
         SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM merged) RETURNING urgency)
       SELECT pg_notify('${OUTBOX_CHANNEL}', CASE WHEN urgency >= ${CRITICAL_URGENCY} THEN '${CRITICAL_NOTICE}' ELSE ''
         END) FROM (SELECT urgency FROM merged UNION ALL SELECT urgency FROM added) AS changed`,
        m
          ? [at, runId, target, m.text, m.ids, m.items, m.room, m.editRoom]
          : [at, runId, target, JSON.stringify(payload), null],
      ));
    },
    /**
     * Each run's oldest open row, if not leased, before any row that waits for a retry. A head
     * another claimer locks is skipped; one it changed since this statement's snapshot (leased, delivered, failed)
     * is checked again against `o`'s own conditions (READ COMMITTED re-reads a locked row), so they are all on `o`.
     */
    claim: async (target: string, o: ClaimOptions): Promise<ClaimedRow[]> => {
      const until = o.now + o.leaseMs;
      const rows = await this.#rows<RankedRow>(claimStatement(''), [
        target,
        o.now,
        o.limit ?? 50,
        o.owner,
        until,
        0,
        o.criticalExtra ?? 0,
      ]);
      return handOutOrder(rows, until);
    },
    /** The claim of a statement that marks row `id` done first: the claim leaves that row out (the statement's snapshot
     * still has it open), so its run's next row is that run's head. */
    doneAndClaim: async (id: number, at: number, target: string, o: ClaimOptions): Promise<ClaimedRow[]> => {
      const until = o.now + o.leaseMs;
      const rows = await this.#rows<RankedRow>(
        claimStatement('done AS (UPDATE outbox SET done_at = $8 WHERE id = $6),'),
        [target, o.now, o.limit ?? 50, o.owner, until, id, o.criticalExtra ?? 0, at],
      );
      return handOutOrder(rows, until);
    },
    done: async (id: number, at: number): Promise<void> =>
      void (await this.#run('UPDATE outbox SET done_at = $2 WHERE id = $1', [id, at])),
    failed: async (id: number, error: string, nextAttemptAt: number | null = null): Promise<void> =>
      void (await this.#run(
        `UPDATE outbox SET attempts = attempts + 1, last_error = $2, next_attempt_at = $3,
         claimed_by = NULL, claimed_until = NULL
       WHERE id = $1`,
        [id, error, nextAttemptAt],
      )),
    setAside: async (id: number, reason: string, at: number): Promise<void> =>
      void (await this.#run(
        `UPDATE outbox SET attempts = attempts + 1, last_error = $2, dead_at = $3, dead_reason = $2, claimed_by = NULL,
         claimed_until = NULL WHERE id = $1`,
        [id, reason, at],
      )),
    requeue: async (id: number): Promise<boolean> =>
      (await this.#run(
        `WITH back AS (UPDATE outbox SET dead_at = NULL, dead_reason = NULL, next_attempt_at = NULL
         WHERE id = $1 AND dead_at IS NOT NULL AND done_at IS NULL RETURNING 1)
       SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM back`,
        [id],
      )) === 1,
    open: (): Promise<OpenOutboxRow[]> =>
      this.#rows(
        `SELECT id, created_at, run_id, target, payload, attempts, next_attempt_at, last_error, dead_at, dead_reason
       FROM outbox WHERE done_at IS NULL ORDER BY id`,
      ),
    clearWait: async (target: string): Promise<void> =>
      void (await this.#run(
        'UPDATE outbox SET next_attempt_at = NULL WHERE target = $1 AND done_at IS NULL AND next_attempt_at IS NOT NULL',
        [target],
      )),
    releaseClaims: async (owner: string): Promise<void> =>
      void (await this.#run(
        'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = $1 AND done_at IS NULL',
        [owner],
      )),
    reclaimLeases: (): Promise<number> =>
      this.#run(
        'UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IS NOT NULL AND done_at IS NULL',
      ),
    listen: (fn: (critical: boolean) => void): Promise<() => Promise<void>> => listenOutbox(this.url, fn),
  };

  readonly chat = {
    /** A new message and its alerts' links in one statement (every posted card: one round trip, not five); a message
     * already recorded (a retry after a crash) is linked by its ref in a transaction of its own. */
    record: async (target: string, ref: string, m: PostedMessage, at: number): Promise<void> => {
      const made = await this.#one<{ id: number }>(
        `WITH made AS (
         INSERT INTO chat_messages (target, ref, run_id, alert_ids, payload, delivery, posted_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING id
       ), linked AS (
         INSERT INTO alert_messages (alert_id, message_id) SELECT unnest($8::bigint[]), id FROM made
         ON CONFLICT DO NOTHING
       )
       SELECT id FROM made`,
        [target, ref, m.runId, JSON.stringify(m.alertIds), JSON.stringify(m.payload), m.delivery, at, [...m.alertIds]],
      );
      if (made) return;
      // the row is another statement's (its snapshot is not this one's): read it after that one
      await this.#inTransaction(async (db) => {
        const { id } = (
          await db.query<{ id: number }>('SELECT id FROM chat_messages WHERE target = $1 AND ref = $2', [target, ref])
        ).rows[0]!;
        await db.query(
          'INSERT INTO alert_messages (alert_id, message_id) SELECT unnest($1::bigint[]), $2 ON CONFLICT DO NOTHING',
          [[...m.alertIds], id],
        );
      });
    },
    byDelivery: (target: string, delivery: string): Promise<ChatMessageRow | undefined> =>
      this.#one(`SELECT ${chatMessageColumns()} FROM chat_messages WHERE target = $1 AND delivery = $2`, [
        target,
        delivery,
      ]),
    byRef: (target: string, ref: string): Promise<ChatMessageRow | undefined> =>
      this.#one(`SELECT ${chatMessageColumns()} FROM chat_messages WHERE target = $1 AND ref = $2`, [target, ref]),
    ofAlert: (alertId: number, target: string): Promise<ChatMessageRow[]> =>
      this.#rows(
        `SELECT ${chatMessageColumns('m')} FROM chat_messages m JOIN alert_messages a ON a.message_id = m.id
       WHERE a.alert_id = $1 AND m.target = $2 ORDER BY m.id DESC`,
        [alertId, target],
      ),
    showing: (alertId: number): Promise<ChatMessageRow[]> =>
      this.#rows(
        `SELECT ${chatMessageColumns('m')} FROM chat_messages m JOIN alert_messages a ON a.message_id = m.id
       WHERE a.alert_id = $1 ORDER BY m.id DESC`,
        [alertId],
      ),
    setPayload: async (id: number, payload: unknown): Promise<void> =>
      void (await this.#run('UPDATE chat_messages SET payload = $2 WHERE id = $1', [id, JSON.stringify(payload)])),
  };

  readonly reports = {
    mark: async (runId: number, mark: string, at: number): Promise<boolean> =>
      (await this.#run('INSERT INTO report_marks (run_id, mark, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        runId,
        mark,
        at,
      ])) === 1,
    stepAt: (runId: number, at: number): Promise<number | null> =>
      this.#one<{ step: number | null }>('SELECT max(step) AS step FROM steps WHERE run_id = $1 AND at <= $2', [
        runId,
        at,
      ]).then((r) => r?.step ?? null),
  };

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.#inTransaction((client) => fn(new PgStore(this.url, this.pool, client, this.ids, this.#now)));
  }

  /** BEGIN .. COMMIT on one connection of the pool (or, inside a transaction already, on its connection). */
  async #inTransaction<T>(fn: (db: pg.ClientBase) => Promise<T>): Promise<T> {
    if (this.pool === null || this.db !== this.pool) return fn(this.db as pg.ClientBase);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      this.ids.clear();
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * A session advisory lock on a connection of its own, held while that connection lives: when the holder's
   * process dies, PostgreSQL ends its session and the lock is free for the next `tryLead`.
   */
  async tryLead(name: string): Promise<Leadership | null> {
    const client = newClient(this.url);
    await client.connect();
    const sql = 'SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok';
    const got = await client.query<{ ok: boolean }>(sql, [LOCK_CLASS, name]);
    if (!got.rows[0]!.ok) {
      await client.end();
      return null;
    }
    let held = true;
    const lost: Array<() => void> = [];
    const lead: Leadership = {
      onLost: (fn) => void lost.push(fn),
      release: async () => {
        if (!held) return;
        held = false;
        this.leaders.delete(lead);
        await client.end(); // ending the session frees its advisory locks
      },
    };
    const gone = (): void => {
      if (!held) return;
      held = false;
      this.leaders.delete(lead);
      for (const fn of lost.splice(0)) fn();
    };
    client.on('error', gone);
    client.on('end', gone);
    this.leaders.add(lead);
    return lead;
  }
}
