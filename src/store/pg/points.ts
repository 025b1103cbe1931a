import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Columns of the points one batch writes: metric id, step and value at the same index. */
export interface PointColumns {
  metricIds: number[];
  steps: number[];
  values: number[];
}

const UNIQUE_VIOLATION = '23505';

/** Below this many points (a live line, ~12), one upsert is 1 round trip where the look for clashes, a savepoint,
 * the COPY and its release are 5. */
export const COPY_MIN_POINTS = 64;

/**
 * Writes a batch's points inside the caller's transaction; each (metric, step) appears once in `p`. A log that
 * grows writes steps none of whose points exist yet: those go in by `COPY`, the fastest way in for many points.
 * Otherwise (a few points, a file read again, a step logged again) a multi-row upsert replaces the values. A `COPY`
 * that meets a point written meanwhile by another connection rolls back to its savepoint and takes the upsert.
 */
export async function writePoints(db: pg.ClientBase, runId: number, p: PointColumns, minStep: number, maxStep: number) {
  const ids = [...new Set(p.metricIds)];
  const clash = p.steps.length < COPY_MIN_POINTS ? null : await db.query(
    'SELECT 1 FROM points WHERE run_id = $1 AND metric_id = ANY($2::integer[]) AND step BETWEEN $3 AND $4 LIMIT 1',
    [runId, ids, minStep, maxStep],
  );
  if (clash?.rowCount === 0) {
    await db.query('SAVEPOINT copy_points');
    try {
      await copy(db, runId, p);
      await db.query('RELEASE SAVEPOINT copy_points');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
      await db.query('ROLLBACK TO SAVEPOINT copy_points');
    }
  }
  await db.query(
    `INSERT INTO points (run_id, metric_id, step, value)
     SELECT $1, * FROM unnest($2::integer[], $3::bigint[], $4::double precision[])
     ON CONFLICT (run_id, metric_id, step) DO UPDATE SET value = excluded.value`,
    [runId, p.metricIds, p.steps, p.values],
  );
}

/** COPY's text format; JavaScript spells NaN, Infinity and -Infinity as PostgreSQL reads them. */
async function copy(db: pg.ClientBase, runId: number, p: PointColumns): Promise<void> {
  const lines = new Array<string>(p.steps.length);
  for (let i = 0; i < lines.length; i++) lines[i] = `${runId}\t${p.metricIds[i]}\t${p.steps[i]}\t${p.values[i]}\n`;
  const stream = db.query(copyFrom('COPY points (run_id, metric_id, step, value) FROM STDIN'));
  await pipeline(Readable.from([lines.join('')]), stream);
}
