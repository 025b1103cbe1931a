import type pg from 'pg';
import { ARRIVALS_KEPT } from '../arrivals.ts';
import { foldAttempts, mayRepeatSibling, QUIET_MS, type AttemptRow, type TrackedFile } from '../attempts.ts';
import type { FileRow } from '../files.ts';
import type { Batch, BatchResult } from '../store.ts';
import { writePoints, type PointColumns } from './points.ts';

/** Metric ids by name, shared by a store's connections: an id never changes once given. */
export class MetricIds {
  private readonly ids = new Map<string, number>();

  get(name: string): number | undefined {
    return this.ids.get(name);
  }

  /** A transaction rolled back: the names it created are gone again, and are looked up anew when next written. */
  clear(): void {
    this.ids.clear();
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
 * Writes one batch inside the caller's transaction: points (by COPY, or upserted where a step is written again:
 * src/store/pg/points.ts), the steps and run metrics it adds, the run's attempts and arrivals (as the SQLite store's
 * `Store.commit`), examples, events, skips, the file's offset and the run's summary.
 */
export async function writeBatch(
  db: pg.ClientBase, ids: MetricIds, b: Batch, keep: number, at: number,
  /** told the run's highest step before the batch, when it has metrics (a caller that keeps its points) */
  onRunLast?: (runLast: number | null) => void,
  /** told the file's row as the batch left it (a caller that keeps file rows) */
  onFile?: (row: FileRow) => void,
): Promise<BatchResult> {
  let minStep = Infinity;
  let maxStep = -Infinity;
  let newSteps = 0;
  let tracked: TrackedFile | null = null;
  if (b.metrics.length > 0) {
    const head = await readHead(db, b);
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
    await writePoints(db, b.runId, p, minStep, maxStep);
    // the new steps and the run's metrics in one statement (one round trip): the steps inserted are the new ones
    const fresh = await db.query<{ n: number }>(
      `WITH fresh AS (
         INSERT INTO steps (run_id, step, at) SELECT $1, unnest($2::bigint[]), $3 ON CONFLICT DO NOTHING RETURNING 1
       ), metrics AS (
         INSERT INTO run_metrics (run_id, metric_id) SELECT $1, unnest($4::integer[]) ON CONFLICT DO NOTHING
       )
       SELECT count(*)::integer AS n FROM fresh`,
      [b.runId, [...rowsOfStep.keys()], at, [...names].map((n) => byName.get(n)!)],
    );
    newSteps = fresh.rows[0]!.n;
    if (!b.rewrite) tracked = await trackAttempts(db, b, head, steps, at);
    await db.query(
      `UPDATE runs SET first_step = least(coalesce(first_step, $2), $2),
         last_step = greatest(coalesce(last_step, $3), $3), records = records + $4, batches = batches + 1,
         updated_at = $5, active_at = CASE WHEN $6 THEN $5 ELSE active_at END,
         started_at = CASE WHEN $6 THEN coalesce(started_at, $5) ELSE started_at END
       WHERE id = $1`,
      [b.runId, minStep, maxStep, newSteps, at, b.progress.lines > 0],
    );
  }
  if (b.examples.length > 0 && keep > 0) await writeExamples(db, b, keep);
  for (const e of b.events ?? []) await writeEvent(db, b, e, at);
  let skipped = 0;
  for (const [reason, s] of b.skips) {
    skipped += s.count;
    await db.query(
      `INSERT INTO file_skips (file_id, reason, count, sample) VALUES ($1, $2, $3, $4)
       ON CONFLICT (file_id, reason) DO UPDATE SET count = file_skips.count + excluded.count, sample = excluded.sample`,
      [b.fileId, reason, s.count, s.sample],
    );
  }
  const p = b.progress;
  const file = await db.query<FileRow>(
    `UPDATE files SET dev = $2, ino = $3, "offset" = $4, size = $5, mtime_ms = $6, seq = $7, lines = lines + $8,
       records = records + $9, skipped = skipped + $10, updated_at = $11,
       grew_at = CASE WHEN $8 > 0 THEN $11 ELSE grew_at END,
       last_step = coalesce($12, last_step), attempt = coalesce($13, attempt)
     WHERE id = $1${onFile ? ' RETURNING *' : ''}`,
    [b.fileId, p.dev, p.ino, p.offset, p.size, p.mtimeMs, p.seq, p.lines, p.records, skipped, at,
      tracked?.last_step ?? null, tracked?.attempt ?? null],
  );
  if (onFile && file.rows[0]) onFile(file.rows[0]);
  if (p.lines > 0 && b.metrics.length === 0) {
    // (with metrics, the run's update above said so)
    await db.query('UPDATE runs SET active_at = $2, started_at = coalesce(started_at, $2) WHERE id = $1', [b.runId, at]);
  }
  const any = b.metrics.length > 0;
  const events = b.events?.length ?? 0;
  return { runId: b.runId, minStep: any ? minStep : null, maxStep: any ? maxStep : null, newSteps, events };
}

/** What attempt tracking reads before a batch: the run's highest step, the file, the run's newest attempt. */
interface Head {
  runLast: number | null;
  file: TrackedFile | undefined;
  latest: AttemptRow | undefined;
}

/** One round trip; the run's row locked first, so that two batches of one run (two files) fold its attempts one
 * after the other. */
async function readHead(db: pg.ClientBase, b: Batch): Promise<Head> {
  type Row = Omit<AttemptRow, 'run_id' | 'attempt'> & {
    run_last: number | null; format: string | null; file_last: number | null; file_attempt: number | null;
    attempt: number | null;
  };
  const r = await db.query<Row>(
    `SELECT r.last_step AS run_last, f.format, f.last_step AS file_last, f.attempt AS file_attempt,
       a.attempt, a.resumed_step, a.at, a.last_step, a.rewound
     FROM runs r
     LEFT JOIN files f ON f.id = $2
     LEFT JOIN LATERAL (SELECT * FROM attempts WHERE run_id = r.id ORDER BY attempt DESC LIMIT 1) a ON true
     WHERE r.id = $1
     FOR UPDATE OF r`,
    [b.runId, b.fileId],
  );
  const h = r.rows[0];
  if (!h) return { runLast: null, file: undefined, latest: undefined };
  const file = h.format === null
    ? undefined
    : { id: b.fileId, format: h.format, last_step: h.file_last, attempt: h.file_attempt! };
  const { attempt, resumed_step, at, last_step, rewound } = h;
  const latest = attempt === null ? undefined : { run_id: b.runId, attempt, resumed_step, at, last_step, rewound };
  return { runLast: h.run_last, file, latest };
}

/** Restarts (a file going back to an earlier step) and the pace of new steps (`foldAttempts`, the rules SQLite
 * follows), before the run's summary moves. Returns the file's new last step and attempt, for its row. */
async function trackAttempts(db: pg.ClientBase, b: Batch, head: Head, steps: number[], at: number) {
  const { runLast, file, latest } = head;
  if (!file) return null;
  const quiet = mayRepeatSibling(file, steps[0]!, runLast) && (await db.query(
    `SELECT 1 FROM files WHERE run_id = $1 AND format = $2 AND id <> $3 AND last_step IS NOT NULL AND grew_at <= $4
     LIMIT 1`,
    [b.runId, file.format, file.id, at - QUIET_MS],
  )).rowCount! > 0;
  const fold = foldAttempts(b.runId, latest, file, steps, at, runLast, quiet);
  if (fold.rows.length > 0) {
    const col = <K extends keyof AttemptRow>(k: K): Array<AttemptRow[K]> => fold.rows.map((r) => r[k]);
    await db.query(
      `INSERT INTO attempts (run_id, attempt, resumed_step, at, last_step, rewound)
       SELECT $1, * FROM unnest($2::integer[], $3::bigint[], $4::bigint[], $5::bigint[], $6::integer[])
       ON CONFLICT (run_id, attempt) DO UPDATE SET last_step = excluded.last_step`,
      [b.runId, col('attempt'), col('resumed_step'), col('at'), col('last_step'), col('rewound')],
    );
  }
  if (fold.advanced > 0) {
    // one statement: its DELETE sees the rows before its INSERT, and keeps ARRIVALS_KEPT - 1 of them beside the new one
    await db.query(
      `WITH noted AS (INSERT INTO arrivals (run_id, at, steps) VALUES ($1, $2, $3))
       DELETE FROM arrivals WHERE run_id = $1
         AND id <= (SELECT id FROM arrivals WHERE run_id = $1 ORDER BY id DESC LIMIT 1 OFFSET ${ARRIVALS_KEPT - 1})`,
      [b.runId, at, fold.advanced],
    );
  }
  return { ...file, last_step: fold.fileLastStep, attempt: fold.fileAttempt };
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
    [b.runId, b.fileId, e.step, e.kind, e.title, e.text, e.fatal ? 1 : 0,
      json(e.context), json(e.values), json(e.config), at],
  );
}
