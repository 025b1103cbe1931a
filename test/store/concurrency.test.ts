/**
 * Many callers on one SqliteAsyncStore at once, as a bot answering many clicks while it delivers: every write
 * lands, none fails on "cannot start a transaction within a transaction", none is rolled back by another's
 * failure. A real SQLite file; expected counts are the number of calls made.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Log } from '../../src/lib/log.ts';
import { ackAlert, muteAlerts } from '../../src/commands/alerts.ts';
import { interact, type Asker } from '../../src/interact/interaction.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

const NOW = Date.UTC(2026, 0, 1);

/** `alerts` firing alerts on run `grpo-7b`, each shown by one posted card (an ack queues that card's edit). */
function world(alerts: number): { store: Store; async: SqliteAsyncStore; ids: number[] } {
  const store = Store.open(join(tempDir('rlw-conc-'), 'a.db'));
  stores.push(store);
  const run = store.runs.ensure('grpo-7b', '/runs/grpo-7b');
  const ids: number[] = [];
  for (let i = 0; i < alerts; i++) {
    const change = { step: i, at: NOW, severity: 'critical', summary: `rule ${i}`, details: {} };
    const a = store.alerts.create(run.id, `rule_${i}`, 'grad_norm', 'firing', change);
    store.chatMessages.record(
      'discord:ops',
      `m${i}`,
      { runId: run.id, alertIds: [a.id], payload: {}, delivery: `d${i}` },
      NOW,
    );
    ids.push(a.id);
  }
  return { store, async: new SqliteAsyncStore(store), ids };
}

const count = (store: Store, sql: string): number => (store.db.prepare(sql).get() as { n: number }).n;

describe('concurrent writes through the async SQLite store', () => {
  it('50 acks and mutes at once, mixed with plain reads and writes: every one lands', async () => {
    const { store, async, ids } = world(25);
    const by = { id: '@ana', name: 'Ana' };
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 25; i++) {
      calls.push(ackAlert({ store: async }, { id: ids[i]!, by, comment: `ack ${i}` }, NOW + i));
      calls.push(
        muteAlerts(
          { store: async },
          { run: 'grpo-7b', rule: `rule_${i}`, for: '1h', by, reason: `mute ${i}` },
          NOW + i,
        ),
      );
      // plain calls between them: a read, and a write outside any transaction
      calls.push(async.alerts.list({ all: true }));
      calls.push(async.outbox.add(1, 'console', { n: i }, NOW));
    }
    const settled = await Promise.allSettled(calls);
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    expect(count(store, 'SELECT count(*) AS n FROM alerts WHERE acked_by IS NOT NULL')).toBe(25);
    expect(count(store, 'SELECT count(*) AS n FROM silences')).toBe(25);
    expect(count(store, "SELECT count(*) AS n FROM outbox WHERE target = 'console'")).toBe(25);
    expect(store.db.inTransaction).toBe(false);
  });

  it('two async wrappers of one store take turns through one gate', async () => {
    const { store, ids } = world(20);
    const [a, b] = [new SqliteAsyncStore(store), new SqliteAsyncStore(store)];
    const by = { id: '@ana', name: 'Ana' };
    const settled = await Promise.allSettled(
      ids.flatMap((id, i) => [
        ackAlert({ store: a }, { id, by }, NOW + i),
        muteAlerts({ store: b }, { run: 'grpo-7b', rule: `rule_${i}`, for: '1h', by }, NOW + i),
      ]),
    );
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    expect(count(store, 'SELECT count(*) AS n FROM alerts WHERE acked_by IS NOT NULL')).toBe(20);
    expect(count(store, 'SELECT count(*) AS n FROM silences')).toBe(20);
  });

  it('a transaction that fails rolls back its own writes only, never those of one running beside it', async () => {
    const { store, async, ids } = world(2);
    const failing = async.transaction(async (tx) => {
      await tx.alerts.ack(ids[0]!, { id: '@bo', name: 'Bo' }, null, NOW);
      throw new Error('body failed');
    });
    const others = Array.from({ length: 10 }, (_, i) =>
      async.transaction(async (tx) => tx.outbox.add(1, 'console', { n: i }, NOW)),
    );
    await expect(failing).rejects.toThrow('body failed');
    await Promise.all(others);
    expect(store.alerts.byId(ids[0]!)?.acked_by).toBeNull();
    expect(count(store, "SELECT count(*) AS n FROM outbox WHERE target = 'console'")).toBe(10);
  });

  it('through the command path: 50 simultaneous /ack and /mute all answer ok and all are stored', async () => {
    const { store, async, ids } = world(25);
    const warnings: string[] = [];
    const log = { info: () => {}, warn: (m: string) => warnings.push(m) } as Log;
    const asker: Asker = {
      store: async,
      log,
      user: '@ana',
      userName: 'Ana',
      mayWrite: () => true,
      rightsHint: 'x',
      now: NOW,
    };
    const answers = await Promise.all(
      ids.flatMap((id, i) => [
        interact({ words: ['ack', String(id)] }, asker),
        interact({ words: ['mute', 'grpo-7b', `rule_${i}`, '1h'] }, asker),
      ]),
    );
    expect(answers.filter((a) => !a.ok)).toEqual([]);
    expect(warnings).toEqual([]);
    expect(count(store, 'SELECT count(*) AS n FROM alerts WHERE acked_by IS NOT NULL')).toBe(25);
    expect(count(store, 'SELECT count(*) AS n FROM silences')).toBe(25);
  });
});
