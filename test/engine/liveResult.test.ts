/**
 * Watched live (each small read one batch, evaluated and announced at once), the sample runs leave the same alerts,
 * alert history, rule cursors and outbox rows by two routes:
 * - the product's: the rules inside each batch's transaction, the run's open alerts, the points and cursors from
 *   the store's memory;
 * - the plain one: each batch committed alone, then evaluated by an engine on a second connection that has no
 *   memory of what was written and reads everything from SQLite.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { rowsOf, ruleQueries } from '../store/tableRows.ts';

const SAMPLES = join(import.meta.dirname, '..', '..', 'samples');
const config = ConfigSchema.parse({});
/** small reads: many batches, each evaluated and announced */
const OPTS = { ...config.ingest, chunkBytes: 2048 };
const NOW = 1_800_000_000_000;

async function productRoute(db: string): Promise<void> {
  const store = Store.open(db, { now: () => NOW });
  const engine = makeEngine(store, config, { terminal: true, now: () => NOW });
  await backfill(
    new Ingestor(
      store,
      OPTS,
      () => {},
      (r) => void engine.evaluate(r.runId),
    ),
    [SAMPLES],
    config.watch,
  );
  engine.tick();
  // the open alerts the store holds between evaluations are the table's
  const table = store.db.prepare(`SELECT * FROM alerts WHERE run_id = ? AND state != 'resolved' ORDER BY id`);
  for (const run of store.runs.list()) expect(store.alerts.openOf(run.id)).toEqual(table.all(run.id));
  store.close();
}

async function plainRoute(db: string): Promise<void> {
  const store = Store.open(db, { now: () => NOW });
  const reader = Store.open(db, { now: () => NOW });
  const engine = makeEngine(reader, config, { terminal: true, now: () => NOW });
  const ingestor = new Ingestor(store, OPTS, (e) => {
    if (e.kind === 'batch') engine.evaluate(e.result.runId);
  });
  await backfill(ingestor, [SAMPLES], config.watch);
  engine.tick();
  reader.close();
  store.close();
}

/** What the rules and announcements wrote, keyed by names (not ids). */
function contents(path: string): Record<string, unknown[]> {
  return rowsOf(path, {
    ...ruleQueries(['notified_state', 'notified_at']),
    // alert ids inside the payloads differ by route only if the alerts were made in another order
    outbox: 'SELECT r.name, o.target, o.payload FROM outbox o JOIN runs r ON r.id = o.run_id ORDER BY o.id',
  });
}

describe('the sample runs watched live', () => {
  let product: Record<string, unknown[]>;
  let plain: Record<string, unknown[]>;
  beforeAll(async () => {
    const dir = tempDir();
    await productRoute(join(dir, 'product.db'));
    await plainRoute(join(dir, 'plain.db'));
    product = contents(join(dir, 'product.db'));
    plain = contents(join(dir, 'plain.db'));
  }, 120_000);

  it('leave the same alerts, alert history, rule cursors and outbox rows by both routes', () => {
    // the demo run fires and resolves while watched: there is something announced to compare
    expect(product.outbox!.length).toBeGreaterThan(3);
    expect(product.alerts!.some((a) => (a as { state: string }).state === 'resolved')).toBe(true);
    expect(product.cursors!.length).toBeGreaterThan(10);
    for (const table of Object.keys(plain)) expect(product[table], table).toEqual(plain[table]);
  });
});
