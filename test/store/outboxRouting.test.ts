/**
 * Routing at delivery, on both stores (SQLite, and the test run's embedded PostgreSQL): the engine's platform-neutral
 * rows (`ROUTED`) are routed by the dispatcher into a row per target, each item where its severity's routes go, once
 * however many dispatchers route at the same time; rows of the old shape (one per target) still deliver; and the one
 * deliverer takes over leases a dead process left. Expected deliveries are derived from the items written and the
 * route below.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import { queueCardUpdates } from '../../src/notify/cardUpdates.ts';
import { Dispatcher, type Target } from '../../src/notify/dispatcher.ts';
import type { StoreContract } from '../../src/store/contract.ts';
import { ROUTED } from '../../src/store/outbox.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

/** `second`: another deliverer's handle on the same database. On SQLite that is the same process (its writer lock):
 * a second connection in one thread would wait on the first's transaction synchronously, holding up both. */
const kinds = [
  {
    name: 'sqlite',
    fresh: async () => join(tempDir(), 'routing.db'),
    open: async (where: string): Promise<StoreContract> => new SqliteAsyncStore(Store.open(where)),
    second: async (_where: string, first: StoreContract): Promise<StoreContract> => first,
  },
  {
    name: 'postgres',
    fresh: freshPgDatabase,
    open: (where: string): Promise<StoreContract> => PgStore.open(where),
    second: (where: string): Promise<StoreContract> => PgStore.open(where),
  },
];

const opened: StoreContract[] = [];
const dispatchers: Dispatcher[] = [];
afterEach(async () => {
  for (const d of dispatchers.splice(0)) await d.stop(0);
  for (const s of opened.splice(0)) await s.close();
});

/** critical and warning alerts go to `chat:pager`, warnings and criticals to `chat:ops` too, everything to `console` */
const route = (_run: string, severity: string): string[] => [
  'console',
  ...(severity === 'info' ? [] : ['chat:ops']),
  ...(severity === 'critical' ? ['chat:pager'] : []),
];

const item = (alertId: number, severity: string): NotificationItem => ({
  alertId,
  kind: 'firing',
  severity,
  rule: `rule_${alertId}`,
  metric: 'm',
  summary: `alert ${alertId}`,
  step: alertId,
  epoch: null,
  recent: [],
  examples: null,
});

/** A target recording what it was given: `target -> alert ids`, one entry per delivery of an item. */
function recording(name: string, got: Map<string, number[]>): Target {
  return {
    name,
    edits: true,
    deliver: async (n: Notification) => {
      got.set(name, [...(got.get(name) ?? []), ...n.items.map((i) => i.alertId)]);
    },
  };
}

describe.each(kinds)('routing at delivery on $name', (kind) => {
  it('routes each neutral row once into a row per target, even with two dispatchers at once; old rows still deliver', async () => {
    const where = await kind.fresh();
    const a = await kind.open(where);
    const b = await kind.second(where, a);
    opened.push(...new Set([a, b]));
    const runs = [await a.runs.ensure('host/grpo', '/r/grpo'), await a.runs.ensure('host/ppo', '/r/ppo')];
    const severities = ['info', 'warning', 'critical'];
    const written: Array<{ run: string; items: NotificationItem[] }> = [];
    let id = 0;
    // ten neutral rows per run, of one to three items each; and a row of the old shape, written for one target
    for (let k = 0; k < 10; k++) {
      for (const r of runs) {
        const items = severities.slice(0, 1 + (k % 3)).map((s) => item(++id, s));
        written.push({ run: r.name, items });
        await a.outbox.add(r.id, ROUTED, { run: r.name, items }, k);
      }
    }
    const old = item(++id, 'critical');
    await a.outbox.add(runs[0]!.id, 'chat:ops', { run: runs[0]!.name, items: [old] }, 100);

    const got = new Map<string, number[]>();
    const names = ['console', 'chat:ops', 'chat:pager'];
    for (const s of [a, b])
      dispatchers.push(
        new Dispatcher(
          s,
          names.map((n) => recording(n, got)),
          { route },
        ),
      );
    await Promise.all(dispatchers.map((d) => d.kick()));
    await Promise.all(dispatchers.map((d) => d.kick())); // rows routed while the other's lanes had looked

    const expected = new Map(names.map((n) => [n, [] as number[]]));
    for (const w of written)
      for (const i of w.items) for (const t of route(w.run, i.severity)) expected.get(t)!.push(i.alertId);
    expected.get('chat:ops')!.push(old.alertId);
    const sorted = (m: Map<string, number[]>) =>
      Object.fromEntries([...m].map(([k, v]) => [k, [...v].sort((x, y) => x - y)]));
    expect(sorted(got)).toEqual(sorted(expected));
    const open = await a.outbox.open();
    expect(open).toEqual([]); // the neutral rows done, every target's row delivered
  });

  it('a neutral row that does not read is set aside, and the rows after it are routed', async () => {
    const where = await kind.fresh();
    const store = await kind.open(where);
    opened.push(store);
    const run = await store.runs.ensure('host/grpo', '/r/grpo');
    await store.outbox.add(run.id, ROUTED, { run: run.name, items: [{ alertId: 'x' }] }, 1);
    await store.outbox.add(run.id, ROUTED, { run: run.name, items: [item(7, 'critical')] }, 2);
    const got = new Map<string, number[]>();
    const d = new Dispatcher(
      store,
      ['console', 'chat:ops', 'chat:pager'].map((n) => recording(n, got)),
      { route },
    );
    dispatchers.push(d);
    await d.kick();
    expect(Object.fromEntries(got)).toEqual({ console: [7], 'chat:ops': [7], 'chat:pager': [7] });
    const open = await store.outbox.open();
    expect(open.map((r) => [r.target, r.dead_at !== null])).toEqual([[ROUTED, true]]);
  });

  it('an ack of an alert whose card still waits unrouted edits it where the card was routed, after its post', async () => {
    const where = await kind.fresh();
    const store = await kind.open(where);
    opened.push(store);
    const run = await store.runs.ensure('host/grpo', '/r/grpo');
    const change = { step: 3, at: 1, severity: 'critical', summary: 'collapse', details: {} };
    const a = await store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', change);
    await store.outbox.add(run.id, ROUTED, { run: run.name, items: [{ ...item(a.id, 'critical'), rule: a.rule }] }, 1);
    await store.alerts.ack(a.id, { id: 'u1', name: 'ana' }, null, 2);
    expect(await store.transaction((tx) => queueCardUpdates(tx, [a.id], 2))).toBe(1);
    const got: Array<[string, string, number]> = []; // target, item kind, alert
    const record = (name: string): Target => ({
      name,
      edits: true,
      deliver: async (n: Notification) =>
        void got.push(...n.items.map((i) => [name, i.kind, i.alertId] as [string, string, number])),
    });
    const d = new Dispatcher(store, ['console', 'chat:ops', 'chat:pager'].map(record), { route });
    dispatchers.push(d);
    await d.kick();
    // each destination a critical goes to: its post, then the edit that shows the ack
    for (const t of route(run.name, 'critical')) {
      expect(got.filter(([name]) => name === t)).toEqual([
        [t, 'firing', a.id],
        [t, 'update', a.id],
      ]);
    }
    expect(got).toHaveLength(2 * route(run.name, 'critical').length);
  });

  it('reclaimLeases frees the rows a dead deliverer leased, at once, and leaves delivered rows alone', async () => {
    const where = await kind.fresh();
    const store = await kind.open(where);
    opened.push(store);
    const run = await store.runs.ensure('host/grpo', '/r/grpo');
    const other = await store.runs.ensure('host/ppo', '/r/ppo');
    for (const r of [run, other])
      await store.outbox.add(r.id, 'chat:ops', { run: r.name, items: [item(r.id, 'critical')] }, 1);
    const now = Date.now();
    const leased = await store.outbox.claim('chat:ops', { owner: 'dead', now, leaseMs: 120_000, limit: 10 });
    expect(leased).toHaveLength(2);
    await store.outbox.done(leased[1]!.id, now);
    // leased for two minutes: nobody else gets the row
    expect(await store.outbox.claim('chat:ops', { owner: 'next', now: now + 1, leaseMs: 120_000, limit: 10 })).toEqual(
      [],
    );
    expect(await store.outbox.reclaimLeases()).toBe(1);
    const taken = await store.outbox.claim('chat:ops', { owner: 'next', now: now + 2, leaseMs: 120_000, limit: 10 });
    expect(taken.map((r) => r.id)).toEqual([leased[0]!.id]);
  });
});
