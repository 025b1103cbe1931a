/**
 * Writes one batch to PostgreSQL inside the caller's transaction: points, steps, attempts, examples, events, skips
 * and the file's offset.
 */
import type pg from 'pg';
import { ARRIVALS_KEPT, PRUNE_EVERY } from '../arrivals.ts';
import { foldAttempts, mayRepeatSibling, QUIET_MS } from '../attempts.ts';
import type { AttemptRow, AttemptsFold, TrackedFile } from '../attempts.ts';
import type { FileRow } from '../files.ts';
import { guardBatch, PAST_CAP, type RunNames } from '../batchGuard.ts';
import type { Batch, BatchResult } from '../sqlite/store.ts';
import { copyPoints, Params, upsertPoints, type PointColumns } from './points.ts';
import { attemptColumns, fileColumns } from './rows.ts';

/** Metric ids by name, shared by a store's connections: an id never changes once given. */
export class MetricIds {
  private readonly ids = new Map<string, number>();
  /** per run, the metric names stored (`guardBatch`) */
  private readonly runs = new Map<number, RunNames>();

  get(name: string): number | undefined {
    return this.ids.get(name);
  }

  /** A transaction rolled back: the names it created are gone again, and are looked up anew when next written. */
  clear(): void {
    this.ids.clear();
    this.runs.clear();
  }

  /** The metric names `runId` has stored, read once and then held. */
  async namesOf(db: pg.ClientBase, runId: number): Promise<RunNames> {
    let names = this.runs.get(runId);
    if (!names) {
      const sql = 'SELECT m.name FROM run_metrics r JOIN metrics m ON m.id = r.metric_id WHERE r.run_id = $1';
      const rows = await db.query<{ name: string }>(sql, [runId]);
      const past = await db.query<{ reason: string }>(
        `SELECT reason FROM file_skips s JOIN files f ON f.id = s.file_id WHERE f.run_id = $1 AND starts_with(s.reason, $2)
         LIMIT 1`,
        [runId, PAST_CAP],
      );
      names = { known: new Set(rows.rows.map((r) => r.name)), past: past.rows[0]?.reason };
      this.runs.set(runId, names);
    }
    return names;
  }

  /** The ids of `names`, creating the unknown ones. */
  async resolve(db: pg.ClientBase, names: Iterable<string>): Promise<Map<string, number>> {
    // in one order: two batches that create the same names at once never wait for each other in a cycle
    const missing = [...new Set(names)].filter((n) => !this.ids.has(n)).sort();
    if (missing.length > 0) {
      await db.query('INSERT INTO metrics (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING', [missing]);
      const sql = 'SELECT id, name FROM metrics WHERE name = ANY($1)';
      const rows = await db.query<{ id: number; name: string }>(sql, [missing]);
      for (const r of rows.rows) this.ids.set(r.name, r.id);
    }
    return this.ids;
  }
}

/**
 * Writes one batch inside the caller's transaction: points (by COPY for many new ones: points.ts), the
 * steps and run metrics it adds, the run's attempts and arrivals (as the SQLite store's `Store.commit`), examples,
 * events, skips, the file's offset and the run's summary. A live line is 2 statements: what attempt tracking reads
 * (`readHead`), then every write in one statement of data-modifying CTEs (its parts see the tables as they were
 * before it, and none writes what another reads), which returns the file's row.
 */
export async function writeBatch(
  db: pg.ClientBase,
  ids: MetricIds,
  batch: Batch,
  keep: number,
  at: number,
  live: LiveBatch = {},
): Promise<BatchResult> {
  // text PostgreSQL refuses would fail the batch, and the file would never get past it
  const b = guardBatch(batch, await ids.namesOf(db, batch.runId));
  const { onRunLast, onFile, heads } = live;
  let minStep = Infinity;
  let maxStep = -Infinity;
  let tracked: TrackedFile | null = null;
  let counted = '0';
  const q = new Params();
  const run = q.add(b.runId, 'bigint');
  const now = q.add(at, 'bigint');
  const fileId = q.add(b.fileId, 'bigint');
  const writes: string[] = [];
  if (b.metrics.length > 0) {
    const head = heads?.get(b.runId, b.fileId) ?? (await readHead(db, b));
    onRunLast?.(head.runLast);
    const names = new Set<string>();
    const steps: number[] = [];
    for (const m of b.metrics) {
      steps.push(m.step);
      for (const name of m.values.keys()) names.add(name);
    }
    const byName = await ids.resolve(db, names);
    // one row per (metric, step), the last one logged: neither COPY nor an upsert may write a key twice
    const rowsOfStep = new Map<number, number[]>();
    const p: PointColumns = { metricIds: [], steps: [], values: [] };
    for (const m of b.metrics) {
      let mine = rowsOfStep.get(m.step);
      const again = mine !== undefined;
      if (!mine) rowsOfStep.set(m.step, (mine = []));
      if (m.step < minStep) minStep = m.step;
      if (m.step > maxStep) maxStep = m.step;
      for (const [name, value] of m.values) {
        const id = byName.get(name)!;
        const earlier = again ? mine.find((i) => p.metricIds[i] === id) : undefined;
        if (earlier !== undefined) p.values[earlier] = value;
        else {
          mine.push(p.steps.length);
          p.metricIds.push(id);
          p.steps.push(m.step);
          p.values.push(value);
        }
      }
    }
    if (!(await copyPoints(db, b.runId, p, minStep, maxStep))) writes.push(`points_in AS (${upsertPoints(q, run, p)})`);
    // the steps inserted are the new ones
    writes.push(
      `fresh AS (INSERT INTO steps (run_id, step, at)
         SELECT ${run}, unnest(${q.add([...rowsOfStep.keys()], 'bigint[]')}), ${now}
         ON CONFLICT DO NOTHING RETURNING 1)`,
    );
    const metricIds = [...names].map((n) => byName.get(n)!);
    if (heads?.unlisted(b.runId, metricIds) ?? true) {
      writes.push(
        `metrics_in AS (INSERT INTO run_metrics (run_id, metric_id)
           SELECT ${run}, unnest(${q.add(metricIds, 'integer[]')}) ON CONFLICT DO NOTHING)`,
      );
    }
    counted = '(SELECT count(*)::integer FROM fresh)';
    if (b.rewrite) heads?.forgetRun(b.runId);
    else {
      tracked = await trackAttempts(db, b, head, steps, at, { q, run, now, writes, heads, maxStep });
    }
    const active = q.add(b.progress.lines > 0, 'boolean');
    const [lo, hi] = [q.add(minStep, 'bigint'), q.add(maxStep, 'bigint')];
    writes.push(
      `run_in AS (UPDATE runs SET first_step = least(coalesce(first_step, ${lo}), ${lo}),
         last_step = greatest(coalesce(last_step, ${hi}), ${hi}),
         records = records + (SELECT count(*) FROM fresh), batches = batches + 1, updated_at = ${now},
         active_at = CASE WHEN ${active} THEN ${now} ELSE active_at END,
         started_at = CASE WHEN ${active} THEN coalesce(started_at, ${now}) ELSE started_at END
       WHERE id = ${run})`,
    );
  } else if (b.progress.lines > 0) {
    writes.push(
      `run_in AS (UPDATE runs SET active_at = ${now}, started_at = coalesce(started_at, ${now}) WHERE id = ${run})`,
    );
  }
  if (b.examples.length > 0 && keep > 0) await writeExamples(db, b, keep);
  for (const e of b.events ?? []) await writeEvent(db, b, e, at);
  let skipped = 0;
  if (b.skips.size > 0) {
    const reasons = [...b.skips.keys()];
    const skips = [...b.skips.values()];
    for (const s of skips) skipped += s.count;
    writes.push(
      `skips_in AS (INSERT INTO file_skips (file_id, reason, count, sample)
         SELECT ${fileId}, * FROM unnest(${q.add(reasons, 'text[]')},
           ${q.add(
             skips.map((s) => s.count),
             'bigint[]',
           )}, ${q.add(
             skips.map((s) => s.sample),
             'text[]',
           )})
         ON CONFLICT (file_id, reason) DO UPDATE SET count = file_skips.count + excluded.count,
           sample = excluded.sample)`,
    );
  }
  const p = b.progress;
  const lines = q.add(p.lines, 'bigint');
  writes.push(
    `file_in AS (UPDATE files SET dev = ${q.add(p.dev, 'bigint')}, ino = ${q.add(p.ino, 'bigint')},
       "offset" = ${q.add(p.offset, 'bigint')}, size = ${q.add(p.size, 'bigint')},
       mtime_ms = ${q.add(p.mtimeMs, 'double precision')}, seq = ${q.add(p.seq, 'bigint')}, lines = lines + ${lines},
       records = records + ${q.add(p.records, 'bigint')}, skipped = skipped + ${q.add(skipped, 'bigint')},
       updated_at = ${now}, grew_at = CASE WHEN ${lines} > 0 THEN ${now} ELSE grew_at END,
       last_step = coalesce(${q.add(tracked?.last_step ?? null, 'bigint')}, last_step),
       attempt = coalesce(${q.add(tracked?.attempt ?? null, 'integer')}, attempt)
     WHERE id = ${fileId} RETURNING ${fileColumns()})`,
  );
  const writing = db.query<FileRow & { rlwatch_new_steps: number }>(
    `WITH ${writes.join(',\n')}
     SELECT ${counted} AS rlwatch_new_steps, ${fileColumns('f')}
     FROM (VALUES (1)) AS one (x) LEFT JOIN file_in f ON true`,
    q.values,
  );
  live.sent?.();
  const { rlwatch_new_steps: newSteps, ...file } = (await writing).rows[0]!;
  if (onFile && file.id !== null) onFile(file as FileRow);
  const any = b.metrics.length > 0;
  const events = b.events?.length ?? 0;
  return { runId: b.runId, minStep: any ? minStep : null, maxStep: any ? maxStep : null, newSteps, events };
}

/** What a watcher's connection (liveWorker.ts) asks of a batch beside writing it. */
export interface LiveBatch {
  /** told the run's highest step before the batch, when it has metrics (a caller that keeps its points) */
  onRunLast?: (runLast: number | null) => void;
  /** told the file's row as the batch left it (a caller that keeps file rows) */
  onFile?: (row: FileRow) => void;
  /** the runs' heads this connection holds */
  heads?: HeldHeads;
  /** called once the batch's last statement is sent: on a pipelined connection, a statement sent here goes out
   * behind it, in its round trip, and sees what it wrote */
  sent?: () => void;
}

/** What attempt tracking reads before a batch: the run's highest step, the file, the run's newest attempt. */
interface Head {
  runLast: number | null;
  file: TrackedFile | undefined;
  latest: AttemptRow | undefined;
}

/**
 * Each run's head as its last batch on this connection left it, so that the next batch of the run need not read it
 * (`readHead`): a watcher's connection alone writes its runs' steps, files and attempts. Dropped with a rollback, and
 * a run's when something else changes its attempts (`markRewound`); a batch that rewrites steps drops its run's.
 * Beside it, what else this connection's batches wrote of each run: the metrics listed, the arrivals since a prune.
 */
export class HeldHeads {
  private readonly runs = new Map<number, Omit<Head, 'file'>>();
  private readonly files = new Map<number, TrackedFile>();
  /** each run's metrics this connection has listed in run_metrics */
  private readonly listed = new Map<number, Set<number>>();
  /** each run's arrivals noted since this connection last pruned them (as the SQLite store's Arrivals) */
  private readonly unpruned = new Map<number, number>();

  /** Whether some of `metricIds` may be missing from the run's run_metrics rows; they are listed from now on. */
  unlisted(runId: number, metricIds: readonly number[]): boolean {
    let listed = this.listed.get(runId);
    if (!listed) this.listed.set(runId, (listed = new Set()));
    const before = listed.size;
    for (const id of metricIds) listed.add(id);
    return listed.size > before;
  }

  /** Whether this arrival of the run prunes its old ones: the first on this connection, then every PRUNE_EVERY-th
   * (the prune walks ARRIVALS_KEPT rows of the index; reads take the newest ARRIVALS_KEPT alike). */
  pruneDue(runId: number): boolean {
    const n = this.unpruned.get(runId);
    const due = n === undefined || n + 1 >= PRUNE_EVERY;
    this.unpruned.set(runId, due ? 0 : n + 1);
    return due;
  }

  get(runId: number, fileId: number): Head | undefined {
    const run = this.runs.get(runId);
    const file = this.files.get(fileId);
    return run && file && { ...run, file };
  }

  /** The head after a batch of `steps` up to `maxStep` whose attempts `fold` folded (from `before`). */
  wrote(runId: number, before: Head, maxStep: number, fold: AttemptsFold, tracked: TrackedFile): void {
    let latest = before.latest;
    for (const r of fold.rows) if (!latest || r.attempt >= latest.attempt) latest = r;
    const runLast = before.runLast === null ? maxStep : Math.max(before.runLast, maxStep);
    this.runs.set(runId, { runLast, latest: latest && { ...latest } });
    this.files.set(tracked.id, { ...tracked });
  }

  forgetRun(runId: number): void {
    this.runs.delete(runId);
  }

  clear(): void {
    this.runs.clear();
    this.files.clear();
    this.listed.clear();
    this.unpruned.clear();
  }
}

/** One round trip; the run's row locked first, so that two batches of one run (two files) fold its attempts one
 * after the other. */
async function readHead(db: pg.ClientBase, b: Batch): Promise<Head> {
  type Row = Omit<AttemptRow, 'run_id' | 'attempt'> & {
    run_last: number | null;
    format: string | null;
    file_last: number | null;
    file_attempt: number | null;
    attempt: number | null;
  };
  const r = await db.query<Row>(
    `SELECT r.last_step AS run_last, f.format, f.last_step AS file_last, f.attempt AS file_attempt,
       a.attempt, a.resumed_step, a.at, a.last_step, a.rewound
     FROM runs r
     LEFT JOIN files f ON f.id = $2
     LEFT JOIN LATERAL (SELECT ${attemptColumns()} FROM attempts WHERE run_id = r.id ORDER BY attempt DESC LIMIT 1) a
       ON true
     WHERE r.id = $1
     FOR UPDATE OF r`,
    [b.runId, b.fileId],
  );
  const h = r.rows[0];
  if (!h) return { runLast: null, file: undefined, latest: undefined };
  const file =
    h.format === null
      ? undefined
      : { id: b.fileId, format: h.format, last_step: h.file_last, attempt: h.file_attempt! };
  const { attempt, resumed_step, at, last_step, rewound } = h;
  const latest = attempt === null ? undefined : { run_id: b.runId, attempt, resumed_step, at, last_step, rewound };
  return { runLast: h.run_last, file, latest };
}

/** The batch's one statement as it is built: its parameters, those of the run's id and of the time, and its CTEs. */
interface Statement {
  q: Params;
  run: string;
  now: string;
  writes: string[];
  /** told the head the batch leaves */
  heads: HeldHeads | undefined;
  maxStep: number;
}

/** Restarts (a file going back to an earlier step) and the pace of new steps (`foldAttempts`, the rules SQLite
 * follows), before the run's summary moves: the writes go to `writes`, the batch's statement. Returns the file's new
 * last step and attempt, for its row. */
async function trackAttempts(
  db: pg.ClientBase,
  b: Batch,
  head: Head,
  steps: number[],
  at: number,
  s: Statement,
): Promise<TrackedFile | null> {
  const { q, run, now, writes } = s;
  const { runLast, file, latest } = head;
  if (!file) return null;
  const quiet =
    mayRepeatSibling(file, steps[0]!, runLast) &&
    (
      await db.query(
        `SELECT 1 FROM files WHERE run_id = $1 AND format = $2 AND id <> $3 AND last_step IS NOT NULL AND grew_at <= $4
     LIMIT 1`,
        [b.runId, file.format, file.id, at - QUIET_MS],
      )
    ).rowCount! > 0;
  const fold = foldAttempts(b.runId, latest, file, steps, at, runLast, quiet);
  if (fold.rows.length > 0) {
    const col = <K extends keyof AttemptRow>(k: K, type: string): string =>
      q.add(
        fold.rows.map((r) => r[k]),
        type,
      );
    writes.push(
      `attempts_in AS (INSERT INTO attempts (run_id, attempt, resumed_step, at, last_step, rewound)
         SELECT ${run}, * FROM unnest(${col('attempt', 'integer[]')}, ${col('resumed_step', 'bigint[]')},
           ${col('at', 'bigint[]')}, ${col('last_step', 'bigint[]')}, ${col('rewound', 'integer[]')})
         ON CONFLICT (run_id, attempt) DO UPDATE SET last_step = excluded.last_step)`,
    );
  }
  if (fold.advanced > 0) {
    writes.push(
      `arrival_in AS (INSERT INTO arrivals (run_id, at, steps) VALUES (${run}, ${now},
         ${q.add(fold.advanced, 'bigint')}))`,
    );
    // the DELETE sees the rows before the INSERT, and keeps ARRIVALS_KEPT - 1 of them beside the new one
    if (s.heads?.pruneDue(b.runId) ?? true) {
      writes.push(
        `arrivals_out AS (DELETE FROM arrivals WHERE run_id = ${run}
           AND id <= (SELECT id FROM arrivals WHERE run_id = ${run}
                      ORDER BY id DESC LIMIT 1 OFFSET ${ARRIVALS_KEPT - 1}))`,
      );
    }
  }
  const tracked = { ...file, last_step: fold.fileLastStep, attempt: fold.fileAttempt };
  s.heads?.wrote(b.runId, head, s.maxStep, fold, tracked);
  return tracked;
}

/** Keeps, per step, the `keep` best and `keep` worst generations (as the SQLite store's Examples). */
async function writeExamples(db: pg.ClientBase, b: Batch, keep: number): Promise<void> {
  const steps = new Set<number>();
  for (const r of b.examples) {
    await db.query(
      `INSERT INTO examples (run_id, step, key, reward, prompt, completion, breakdown) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (run_id, step, key) DO UPDATE SET
         completion = CASE WHEN length(excluded.completion) > length(examples.completion)
                           THEN excluded.completion ELSE examples.completion END,
         prompt = coalesce(examples.prompt, excluded.prompt),
         breakdown = (examples.breakdown::jsonb || excluded.breakdown::jsonb)::text`,
      [b.runId, r.step, r.key, r.reward, r.prompt ?? null, r.completion, JSON.stringify(r.breakdown)],
    );
    steps.add(r.step);
  }
  await db.query(
    `DELETE FROM examples e WHERE e.run_id = $1 AND e.step = ANY($2::bigint[])
       AND e.key NOT IN (SELECT key FROM examples x WHERE x.run_id = $1 AND x.step = e.step
                         ORDER BY reward DESC, key LIMIT $3)
       AND e.key NOT IN (SELECT key FROM examples x WHERE x.run_id = $1 AND x.step = e.step
                         ORDER BY reward ASC, key LIMIT $3)`,
    [b.runId, [...steps], keep],
  );
}

type BatchEvent = NonNullable<Batch['events']>[number];

/** A `meta` event that repeats the run's last one is not stored again (as the SQLite store's Events). */
async function writeEvent(db: pg.ClientBase, b: Batch, e: BatchEvent, at: number): Promise<void> {
  const json = (v: object | undefined): string | null => (v === undefined ? null : JSON.stringify(v));
  if (e.kind === 'meta') {
    const last = await db.query<{ title: string; vals: string | null; config: string | null }>(
      `SELECT title, vals, config FROM events WHERE run_id = $1 AND kind = 'meta' ORDER BY id DESC LIMIT 1`,
      [b.runId],
    );
    const l = last.rows[0];
    if (l && l.title === e.title && l.vals === json(e.values) && l.config === json(e.config)) return;
  }
  await db.query(
    `INSERT INTO events (run_id, file_id, step, kind, title, text, fatal, context, vals, config, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      b.runId,
      b.fileId,
      e.step,
      e.kind,
      e.title,
      e.text,
      e.fatal ? 1 : 0,
      json(e.context),
      json(e.values),
      json(e.config),
      at,
    ],
  );
}
