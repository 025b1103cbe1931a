/**
 * The outbox claim's cost on a young table: an outbox without statistics (a new database, before autovacuum's first
 * look a minute in) must not turn a claim into a look through every open row per waiting run.
 * Counted in buffers read (EXPLAIN ANALYZE), not timed.
 */
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { claimStatement, PgStore } from '../../../src/store/postgres/pgStore.ts';
import { freshPgDatabase } from '../../pg/pgTest.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

it('reads each open row about once, however many runs wait, on an outbox autovacuum has not analysed yet', async () => {
  const url = await freshPgDatabase();
  const store = await PgStore.open(url);
  cleanup.push(() => store.close());
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  cleanup.push(() => client.end());
  const RUNS = 100;
  const PER_RUN = 4;
  for (let r = 0; r < RUNS; r++) {
    const run = await store.runs.ensure(`gpu-a/run${r}`, `/runs/run${r}`, 'gpu-a');
    for (let k = 0; k < PER_RUN; k++) {
      await store.outbox.add(run.id, 'discord', { run: run.name, items: [{ severity: 'warning', rule: 'r' }] }, k);
    }
  }
  // half of them delivered already, as in a bot that keeps up with part of a backlog
  await client.query('UPDATE outbox SET done_at = 1 WHERE id % 2 = 0');
  await client.query('BEGIN');
  const plan = await client.query<{ 'QUERY PLAN': Array<{ Plan: { 'Shared Hit Blocks': number } }> }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claimStatement('')}`,
    ['discord', 1_000, 1, 'bot', 60_000, 0, 1],
  );
  await client.query('ROLLBACK');
  const blocks = plan.rows[0]!['QUERY PLAN'][0]!.Plan['Shared Hit Blocks'];
  // the rows fill ~10 pages and their indexes a few: tens of blocks (39 here), not one look through the open rows per
  // waiting run (685 here, 10,811 in the pg-watchers bench's auto_explain)
  expect(blocks).toBeGreaterThan(0);
  expect(blocks).toBeLessThan(RUNS);
  // and the claim does claim: the oldest row of one run
  expect((await store.outbox.claim('discord', { now: 1_000, limit: 1, owner: 'bot', leaseMs: 60_000 })).length).toBe(1);
}, 60_000);
