import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoreContract } from '../../src/store/contract.ts';
import { EDIT_ITEMS_MAX } from '../../src/store/outbox.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

const kinds: Array<{ name: string; open: () => Promise<StoreContract> }> = [
  { name: 'sqlite', open: async () => new SqliteAsyncStore(Store.open(join(tempDir(), 'edits.db'))) },
  { name: 'postgres', open: async () => PgStore.open(await freshPgDatabase()) },
];

const opened: StoreContract[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

const item = (alertId: number, kind: string) => ({ alertId, kind, severity: 'warning', rule: 'r', summary: `${kind}` });

describe.each(kinds)('the outbox on $name: the edits waiting for a run are one row', (k) => {
  it("edits join edits, any number up to EDIT_ITEMS_MAX, an alert's later state after its earlier one", async () => {
    const store = await k.open();
    opened.push(store);
    const { id: run } = await store.runs.ensure('exp/r', '/runs/exp/r');
    const put = (items: object[], at: number) => store.outbox.add(run, 'discord:ops', { run: 'exp/r', items }, at);
    const open = async () =>
      (await store.outbox.open()).map((r) =>
        JSON.parse(r.payload).items.map((i: { alertId: number; kind: string }) => `${i.alertId}:${i.kind}`),
      );
    // a storm's card: more than a message's cards, a row of its own that nothing joins
    await put(
      Array.from({ length: 10 }, (_, i) => item(i + 1, 'firing')),
      1,
    );
    await put([item(1, 'update'), item(2, 'update')], 2); // acks
    await put(
      Array.from({ length: 8 }, (_, i) => item(i + 1, 'resolved')),
      3,
    ); // the same alerts resolved: they join
    await put([item(11, 'firing')], 4); // a card never joins edits past a message's cards
    await put([item(11, 'resolved')], 5);
    expect(await open()).toEqual([
      Array.from({ length: 10 }, (_, i) => `${i + 1}:firing`),
      ['1:update', '2:update', ...Array.from({ length: 8 }, (_, i) => `${i + 1}:resolved`)],
      ['11:firing'],
      ['11:resolved'],
    ]);
    // up to EDIT_ITEMS_MAX in a row, then a row of their own
    await put(
      Array.from({ length: EDIT_ITEMS_MAX - 1 }, (_, i) => item(100 + i, 'resolved')),
      6,
    );
    await put([item(50, 'update'), item(51, 'update')], 7);
    expect((await open()).map((items: string[]) => items.length)).toEqual([10, 10, 1, EDIT_ITEMS_MAX, 2]);
  });
});
