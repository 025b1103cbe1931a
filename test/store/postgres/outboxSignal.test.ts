/**
 * Outbox rows committed by one process are announced to the deliverer listening in another (LISTEN/NOTIFY):
 * on commit only, and again after its listening connection was cut.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgStore } from '../../../src/store/postgres/pgStore.ts';
import { freshPgDatabase } from '../../pg/pgTest.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function open(url: string): Promise<PgStore> {
  const store = await PgStore.open(url);
  cleanup.push(() => store.close());
  return store;
}

/** Runs `sql` as an administrator would, on a connection of its own. */
async function admin(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(sql);
  await c.end();
}

describe('outbox announcements on PostgreSQL', () => {
  it('reach the listener when the rows commit, never for a transaction rolled back, and for a requeue', async () => {
    const url = await freshPgDatabase();
    const [bot, watcher] = [await open(url), await open(url)];
    let heard = 0;
    const stop = await bot.outbox.listen!(() => heard++);
    cleanup.push(stop);
    const run = await watcher.runs.ensure('gpu-a/grpo', '/runs/grpo');

    // three rows in one transaction: one announcement, after the commit
    await watcher.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) await tx.outbox.add(run.id, 'discord:1', { n: i }, 1);
      await expect.poll(() => heard, { timeout: 300 }).toBe(0);
    });
    await expect.poll(() => heard, { timeout: 10_000 }).toBe(1);

    // rolled back: nothing to deliver, nothing heard; the commit after it is heard once (in commit order)
    await expect(
      watcher.transaction(async (tx) => {
        await tx.outbox.add(run.id, 'discord:1', { n: 'lost' }, 2);
        throw new Error('the batch failed');
      }),
    ).rejects.toThrow('the batch failed');
    await watcher.outbox.add(run.id, 'discord:1', { n: 4 }, 3);
    await expect.poll(() => heard, { timeout: 10_000 }).toBe(2);
    expect((await watcher.outbox.open()).map((r) => JSON.parse(r.payload).n)).toEqual([0, 1, 2, 4]);

    // a dead row put back by `rlwatch outbox retry` is work again; a requeue of a live row is not
    const [row] = await watcher.outbox.open();
    await watcher.outbox.setAside(row!.id, 'bad payload', 4);
    expect(await watcher.outbox.requeue(row!.id)).toBe(true);
    await expect.poll(() => heard, { timeout: 10_000 }).toBe(3);
    expect(await watcher.outbox.requeue(row!.id)).toBe(false);
    await watcher.outbox.add(run.id, 'discord:1', { n: 5 }, 5);
    await expect.poll(() => heard, { timeout: 10_000 }).toBe(4);
  }, 30_000);

  it('listens again after its connection is cut, and calls once on return for what it may have missed', async () => {
    const url = await freshPgDatabase();
    const [bot, watcher] = [await open(url), await open(url)];
    let heard = 0;
    cleanup.push(await bot.outbox.listen!(() => heard++));
    const run = await watcher.runs.ensure('grpo', '/runs/grpo');
    await admin(
      url,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`,
    );
    await watcher.outbox.add(run.id, 'discord:1', { n: 1 }, 1); // committed while nobody listens
    await expect.poll(() => heard, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    const back = heard;
    await watcher.outbox.add(run.id, 'discord:1', { n: 2 }, 2);
    await expect.poll(() => heard, { timeout: 10_000 }).toBe(back + 1);
  }, 40_000);
});
