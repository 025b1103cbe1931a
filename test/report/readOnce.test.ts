import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { reportOf } from '../../src/commands/runReport.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { readOnce } from '../../src/report/readOnce.ts';
import type { StoreTx } from '../../src/store/contract.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

/** `store`, with every call it is asked of its tables (`table.method` and arguments) written down in `calls`. */
function counting(store: StoreTx): { store: StoreTx; calls: string[] } {
  const calls: string[] = [];
  const table = (t: object, prefix: string): object =>
    new Proxy(t, {
      get(target, name) {
        const value: unknown = Reflect.get(target, name, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(`${prefix}.${String(name)} ${JSON.stringify(args)}`);
          return value.apply(target, args);
        };
      },
    });
  const proxy = new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value === 'function') return value.bind(target);
      return typeof value === 'object' && value !== null ? table(value, String(name)) : value;
    },
  });
  return { store: proxy, calls };
}

async function demo(): Promise<Store> {
  const config = ConfigSchema.parse({});
  const store = Store.open(join(tempDir(), 'r.db'));
  await backfill(new Ingestor(store, config.ingest), [resolve('samples/grpo-demo')], config.watch);
  makeEngine(store, config, { terminal: true }).evaluateBehind();
  return store;
}

describe('readOnce', () => {
  it('asks the store once for a read it was asked before, and hands out copies', async () => {
    const db = await demo();
    const { store, calls } = counting(new SqliteAsyncStore(db));
    const once = readOnce(store);
    const run = (await once.runs.byName('grpo-demo'))!;
    const first = await once.points.series(run.id, 'reward');
    first.reverse(); // a caller's own business
    const again = await once.points.series(run.id, 'reward');
    expect(again).toEqual(await new SqliteAsyncStore(db).points.series(run.id, 'reward'));
    expect(again[0]!.step).toBeLessThan(again.at(-1)!.step);
    await once.points.series(run.id, 'reward', 5); // other arguments: another read
    await once.points.upTo(run.id, 'reward', 100, 3); // not a read a report repeats: asked every time
    await once.points.upTo(run.id, 'reward', 100, 3);
    expect(calls.filter((c) => c.startsWith('points.series '))).toHaveLength(2);
    expect(calls.filter((c) => c.startsWith('points.upTo '))).toHaveLength(2);
    db.close();
  });

  it('a run report asks each of its repeated reads once', async () => {
    const db = await demo();
    const { store, calls } = counting(new SqliteAsyncStore(db));
    const r = await reportOf({ store }, { run: 'grpo-demo' });
    expect(r.window.records).toBe(50);
    const held = calls.filter((c) => /^(points\.(series|metricsOf|latest|steps)|events\.meta|alerts\.list) /.test(c));
    expect(held.length).toBeGreaterThan(0);
    expect(held).toEqual([...new Set(held)]);
    expect(held).toContainEqual(expect.stringMatching(/^points\.series \[\d+,"epoch"\]$/)); // asked from several places
    db.close();
  });
});
