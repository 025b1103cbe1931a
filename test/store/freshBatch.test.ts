/**
 * The engine reads a batch's points from the store's memory of that batch (Points.after) instead of the
 * database. The points, alerts, alert events, rule state and outbox after a backfill of the sample runs are the
 * same as when every read goes to the database (the memory dropped before each evaluation).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { CURSOR_ROWS } from './tableRows.ts';
import { freshStore } from '../fixtures/pipeline.ts';

const SAMPLES = join(import.meta.dirname, '../../samples');

type Tables = Record<'points' | 'alerts' | 'alertEvents' | 'ruleCursors' | 'outbox', unknown[]>;

async function backfillSample(fromMemory: boolean): Promise<Tables> {
  const config = ConfigSchema.parse({});
  let clock = 1_700_000_000_000;
  const now = (): number => (clock += 1000);
  const { store } = freshStore({ now });
  const engine = makeEngine(store, config, { terminal: true, now });
  // small reads: many batches, so rule cursors sit inside and before each batch
  const ingestor = new Ingestor(store, { ...config.ingest, chunkBytes: 16384 }, (e) => {
    if (e.kind !== 'batch') return;
    if (!fromMemory) store.points.forget(e.result.runId);
    engine.evaluate(e.result.runId, false);
  });
  await backfill(ingestor, [SAMPLES], { depth: config.watch.depth, ignore: config.watch.ignore });
  engine.evaluateBehind();
  engine.tick();
  const all = (sql: string): unknown[] => store.db.prepare(sql).all();
  const tables = {
    // by name: a read through the database registers the names rules ask for, so ids may be numbered otherwise
    points: all(
      'SELECT p.run_id, m.name, p.step, p.value FROM points p JOIN metrics m ON m.id = p.metric_id ORDER BY 1, 2, 3',
    ),
    alerts: all('SELECT * FROM alerts ORDER BY id'),
    alertEvents: all('SELECT * FROM alert_events ORDER BY rowid'),
    ruleCursors: all(`SELECT * FROM ${CURSOR_ROWS} ORDER BY run_id, rule, metric`),
    outbox: all('SELECT target, payload FROM outbox ORDER BY id'),
  };
  store.close();
  return tables;
}

describe('a batch evaluated from memory', () => {
  it('leaves the same points, alerts and rule state as reading every series from the database', async () => {
    const fromMemory = await backfillSample(true);
    const fromDatabase = await backfillSample(false);
    expect(fromMemory.points.length).toBeGreaterThan(1000);
    expect(fromMemory.alerts.length).toBeGreaterThan(0);
    expect(fromMemory.ruleCursors.length).toBeGreaterThan(0);
    expect(fromMemory).toEqual(fromDatabase);
  }, 120_000);
});
