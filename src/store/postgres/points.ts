/** A batch's points into PostgreSQL, inside the caller's transaction: many new ones by COPY, the rest by an upsert. */
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { withoutPipeline } from './connect.ts';

/** Columns of the points one batch writes: metric id, step and value at the same index. */
export interface PointColumns {
  metricIds: number[];
  steps: number[];
  values: number[];
}

const UNIQUE_VIOLATION = '23505';

/** Below this many points (a live line, ~12), the points go in with the batch's one statement (`upsertPoints`)
 * where the look for clashes, a savepoint, the COPY and its release are 4 more round trips. */
export const COPY_MIN_POINTS = 64;

/**
 * A log that grows writes steps none of whose points exist yet: many of them go in by `COPY`, the fastest way in,
 * inside the caller's transaction. Returns whether it took them; if not (a few points, a file read again, a step
 * logged again, or a point written meanwhile by another connection, which rolls the COPY back to its savepoint), the
 * caller upserts them (`upsertPoints`). Each (metric, step) appears once in `p`.
 */
export async function copyPoints(db: pg.ClientBase, runId: number, p: PointColumns, minStep: number, maxStep: number) {
  if (p.steps.length < COPY_MIN_POINTS) return false;
  const clash = await db.query(
    'SELECT 1 FROM points WHERE run_id = $1 AND metric_id = ANY($2::integer[]) AND step BETWEEN $3 AND $4 LIMIT 1',
    [runId, [...new Set(p.metricIds)], minStep, maxStep],
  );
  if (clash.rowCount !== 0) return false;
  await db.query('SAVEPOINT copy_points');
  try {
    await withoutPipeline(db, () => copy(db, runId, p));
    await db.query('RELEASE SAVEPOINT copy_points');
    return true;
  } catch (err) {
    if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    await db.query('ROLLBACK TO SAVEPOINT copy_points');
    return false;
  }
}

/** The multi-row upsert of `p`'s points as a statement of the caller's (`run`: the run id's parameter), which replaces
 * the values of points already there. */
export function upsertPoints(q: Params, run: string, p: PointColumns): string {
  return `INSERT INTO points (run_id, metric_id, step, value)
    SELECT ${run}, * FROM unnest(${q.add(p.metricIds, 'integer[]')}, ${q.add(p.steps, 'bigint[]')},
      ${q.add(p.values, 'double precision[]')})
    ON CONFLICT (run_id, metric_id, step) DO UPDATE SET value = excluded.value`;
}

/** One statement's parameters, numbered as they are added. */
export class Params {
  readonly values: unknown[] = [];

  /** The placeholder of `value`, cast to `type`: one parameter may be used in several places of the statement, and
   * the cast keeps the type PostgreSQL gives it the same in each. */
  add(value: unknown, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }
}

/** COPY's text format; JavaScript spells NaN, Infinity and -Infinity as PostgreSQL reads them. */
async function copy(db: pg.ClientBase, runId: number, p: PointColumns): Promise<void> {
  const lines = new Array<string>(p.steps.length);
  for (let i = 0; i < lines.length; i++) lines[i] = `${runId}\t${p.metricIds[i]}\t${p.steps[i]}\t${p.values[i]}\n`;
  const stream = db.query(copyFrom('COPY points (run_id, metric_id, step, value) FROM STDIN'));
  await pipeline(Readable.from([lines.join('')]), stream);
}
