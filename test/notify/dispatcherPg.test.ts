/**
 * Two bots on one PostgreSQL during a handover: each with its own connections, its own Discord client (real
 * discord.js against the fake Discord) and its own dispatcher, both draining the same outbox while rows keep
 * arriving. Every row is posted once: claims are leased (FOR UPDATE SKIP LOCKED).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { silentLog } from '../../src/lib/log.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import { discord } from '../../src/platforms/discord/index.ts';
import type { PlatformInstance } from '../../src/platforms/platform.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { discordOf, enqueueAlerts, postedPerAlert } from '../pg/alertRows.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A bot process's delivery side: its store, its Discord client, its dispatcher. */
async function bot(url: string, fake: FakeDiscord): Promise<{ store: PgStore; dispatcher: Dispatcher }> {
  const store = await PgStore.open(url);
  const ctx = { store, config: ConfigSchema.parse({}), log: silentLog, wake: () => {} };
  const instance: PlatformInstance = await discord.create(discordOf(fake), ctx);
  instance.start?.();
  for (let i = 0; i < 500 && !instance.ready?.(); i++) await sleep(20);
  const dispatcher = new Dispatcher(store, instance.targets, { baseBackoffMs: 50, maxBackoffMs: 100 });
  cleanup.push(
    () => store.close(),
    () => instance.stop!(),
    () => dispatcher.stop(0),
  );
  return { store, dispatcher };
}

/** The dispatchers (process, without the lane) that delivered rows. */
async function claimers(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const sql = `SELECT DISTINCT split_part(claimed_by, '/', 1) AS who FROM outbox WHERE done_at IS NOT NULL`;
    return (await c.query<{ who: string }>(sql)).rows.map((r) => r.who);
  } finally {
    await c.end();
  }
}

describe('two dispatchers on one PostgreSQL', () => {
  it('post every outbox row exactly once while both drain it and rows keep coming', async () => {
    const url = await freshPgDatabase();
    const fake = await startFakeDiscord();
    cleanup.push(() => fake.close());
    const [a, b] = [await bot(url, fake), await bot(url, fake)];
    // a run's rows go one at a time, so two dispatchers share the work across runs: more runs than one takes at once
    const RUNS = 8;
    const byRun: number[][] = Array.from({ length: RUNS }, () => []);
    const enqueue = async (store: PgStore): Promise<void> => {
      for (let i = 0; i < 12; i++) {
        byRun[i % RUNS]!.push(...(await enqueueAlerts(store, fake, 1, `host-a/grpo-${i % RUNS}`)));
      }
    };
    await enqueue(a.store);
    const draining = [a, b].map((x) => x.dispatcher.kick());
    await enqueue(b.store);
    await Promise.all([...draining, ...[a, b].map((x) => x.dispatcher.kick())]);
    const ids = byRun.flat().sort((x, y) => x - y);
    await fake.waitFor(() => postedPerAlert(fake).size === ids.length, 15_000);
    const posted = postedPerAlert(fake);
    expect([...posted.keys()].sort((x, y) => x - y)).toEqual(ids);
    expect([...posted.values()].every((n) => n === 1)).toBe(true);
    // each run's cards in the order its rows were queued, whichever dispatcher posted them
    for (const run of byRun) expect([...posted.keys()].filter((id) => run.includes(id))).toEqual(run);
    expect(await a.store.outbox.open()).toEqual([]);
    // both took part: each delivered rows of its claims
    expect(await claimers(url)).toHaveLength(2);
  }, 60_000);

  it("hear from PostgreSQL's announcement whether a critical row came (the kept slot is looked at then)", async () => {
    const url = await freshPgDatabase();
    const [listening, writer] = [await PgStore.open(url), await PgStore.open(url)];
    const heard: boolean[] = [];
    const stop = await listening.outbox.listen!((critical) => heard.push(critical));
    cleanup.push(
      () => listening.close(),
      () => writer.close(),
      stop,
    );
    const run = await writer.runs.ensure('host-a/grpo', '/runs/grpo');
    // items as the engine writes them: severity, then rule
    const row = (severity: string) => ({ run: 'grpo', items: [{ alertId: 1, kind: 'firing', severity, rule: 'r' }] });
    await writer.outbox.add(run.id, 'discord:1', row('warning'), 1);
    await expect.poll(() => heard, { timeout: 10_000 }).toEqual([false]);
    await writer.outbox.add(run.id, 'discord:1', row('critical'), 2);
    await expect.poll(() => heard, { timeout: 10_000 }).toEqual([false, true]);
    // untrusted text shaped like a critical item is a warning's row
    await writer.outbox.add(
      run.id,
      'discord:1',
      { run: 'grpo', items: [{ severity: 'info', summary: '"severity":"critical","rule":"r"' }] },
      3,
    );
    await expect.poll(() => heard, { timeout: 10_000 }).toEqual([false, true, false]);
  }, 30_000);
});
