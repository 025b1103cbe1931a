/**
 * The two stores of each side answer to the same members, read off real instances (a SQLite file, the run's
 * PostgreSQL): the async `SqliteAsyncStore` and `PgStore` have the same public methods, table by table, those of the
 * contract (`CONTRACT_MEMBERS`, which the compiler keeps equal to `StoreContract`); the synchronous `Store` and
 * `PgLiveStore` both have every member of `LiveStore`, table by table (`LIVE_MEMBERS`). A method one side lacks fails
 * here even where the types would let it pass (a cast, an `any`, a worker's forwarded name).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_MEMBERS } from '../../src/store/contract.ts';
import { LIVE_MEMBERS } from '../../src/store/live.ts';
import { PgLiveStore } from '../../src/store/postgres/pgLiveStore.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

/** What PgStore's tables have beyond the contract: the calls a PostgreSQL watcher's worker forwards to it
 * (liveWorker.ts FORWARDED), which the SQLite watcher makes on its `Store`'s tables instead. */
const WATCHER_CALLS = [
  'alerts.announceable',
  'alerts.escalate',
  'alerts.firedByRule',
  'alerts.ids',
  'events.byId',
  'events.finished',
  'files.clearSkips',
  'points.stepSpan',
  'runs.markEvaluated',
  'runs.markLive',
  'runs.unevaluated',
  'unread.forget',
  'unread.note',
];

/** The functions a caller can reach on `o`: methods up its prototype chain and functions held as fields (the async
 * stores' arrow methods). `#` members are out of reach, here as for any caller. */
function functionsOf(o: object): string[] {
  const names = new Set<string>();
  for (let p: object | null = o; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const name of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, name)!;
      if (name !== 'constructor' && typeof d.value === 'function') names.add(name);
    }
  }
  return [...names].sort();
}

/** Every method of `members` as a path (`close`, `alerts.fire`), and whether it is optional. */
function methodPaths(members: Record<string, unknown>, prefix = ''): Array<{ path: string; optional: boolean }> {
  return Object.entries(members).flatMap(([name, kind]) => {
    if (kind === 'method' || kind === 'optional') return [{ path: `${prefix}${name}`, optional: kind === 'optional' }];
    return typeof kind === 'object' ? methodPaths(kind as Record<string, unknown>, `${prefix}${name}.`) : [];
  });
}

/** The functions a caller can reach on `store` and on each of its tables named in `members`, as paths. */
function reachable(store: object, members: Record<string, unknown>): string[] {
  const tables = Object.keys(members).filter((k) => typeof members[k] === 'object');
  const own = functionsOf(store);
  const inTables = tables.flatMap((t) => functionsOf((store as Record<string, object>)[t]!).map((m) => `${t}.${m}`));
  return [...own, ...inTables].sort();
}

/** The members of `shape` that `store` lacks or has as the wrong kind, as `table.method` paths (an optional one may
 * be absent). */
function lacking(store: object, shape: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(shape).flatMap(([name, kind]) => {
    const value = (store as Record<string, unknown>)[name];
    const path = `${prefix}${name}`;
    if (kind === 'optional') return [];
    if (kind === 'method') return typeof value === 'function' ? [] : [path];
    if (kind === 'value') return value === undefined || typeof value === 'function' ? [path] : [];
    if (typeof value !== 'object' || value === null) return [path];
    return lacking(value, kind as Record<string, unknown>, `${path}.`);
  });
}

const dir = mkdtempSync(join(tmpdir(), 'rlwatch-parity-'));
let sqlite: Store;
let url: string;
beforeAll(async () => {
  sqlite = Store.open(join(dir, 'rlwatch.db'));
  url = await freshPgDatabase();
});
afterAll(() => {
  sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the async stores and the contract', () => {
  const paths = methodPaths(CONTRACT_MEMBERS);
  const methods = paths
    .filter((p) => !p.optional)
    .map((p) => p.path)
    .sort();
  const optional = paths.filter((p) => p.optional).map((p) => p.path);

  it('SqliteAsyncStore and PgStore have the same public methods, table by table: the contract, and PostgreSQL its watcher calls', async () => {
    const pg = await PgStore.open(url);
    try {
      const onSqlite = reachable(new SqliteAsyncStore(sqlite), CONTRACT_MEMBERS);
      const onPg = reachable(pg, CONTRACT_MEMBERS);
      const beside = new Set([...optional, ...WATCHER_CALLS]);
      expect(onSqlite.filter((m) => !beside.has(m))).toEqual(methods);
      expect(onPg.filter((m) => !beside.has(m))).toEqual(methods);
      // the optional members are so because SQLite has no way to do them (LISTEN/NOTIFY): PostgreSQL has each
      expect(optional.filter((m) => !onPg.includes(m))).toEqual([]);
      expect(WATCHER_CALLS.filter((m) => !onPg.includes(m))).toEqual([]);
      expect(lacking(pg, CONTRACT_MEMBERS)).toEqual([]);
      expect(lacking(new SqliteAsyncStore(sqlite), CONTRACT_MEMBERS)).toEqual([]);
    } finally {
      await pg.close();
    }
  });
});

describe('the live stores and LiveStore', () => {
  it('Store and PgLiveStore each have every member of LiveStore, table by table', async () => {
    const live = await PgLiveStore.open(url, { scope: '' });
    try {
      expect(lacking(sqlite, LIVE_MEMBERS)).toEqual([]);
      expect(lacking(live, LIVE_MEMBERS)).toEqual([]);
      // PgLiveStore's tables are the live vocabulary and nothing else (Store's also serve SqliteAsyncStore)
      for (const [table, shape] of Object.entries(LIVE_MEMBERS)) {
        if (typeof shape !== 'object') continue;
        const own = functionsOf((live as unknown as Record<string, object>)[table]!);
        expect([table, own]).toEqual([table, Object.keys(shape).sort()]);
      }
    } finally {
      await live.close();
    }
  });
});
