/**
 * A run's rule cursors in one row (`run_cursors`): the rows of the table before it (`rule_cursors`) migrate to the
 * same cursors, in SQLite and in PostgreSQL; the saves of an evaluation that rolls back are never written, not even
 * by a later flush; and both stores keep each cursor of several rules and metrics apart. Real SQLite files, the
 * real engine, the test run's PostgreSQL.
 */
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { MIGRATIONS_DIR } from '../../src/lib/paths.ts';
import type { StoreContract } from '../../src/store/contract.ts';
import { migrate } from '../../src/store/sqlite/migrate.ts';
import { migratePg, newPool, PG_MIGRATIONS_DIR } from '../../src/store/postgres/connect.ts';
import { copySqliteToPg } from '../../src/store/postgres/fromSqlite.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { CURSOR_ROWS } from './tableRows.ts';

/** Cursors as the table before `run_cursors` held them: one row each. */
const OLD_ROWS = [
  { run: 1, rule: 'mode_collapse', metric: 'frac_reward_zero_std', step: 40, state: '{"streak":3,"recovering":false}' },
  { run: 1, rule: 'mode_collapse', metric: 'reward_std', step: 39, state: '{}' },
  { run: 1, rule: 'nan_loss', metric: 'loss', step: 40, state: '{"lastFinite":0.125,"lastFiniteStep":40}' },
  { run: 1, rule: 'trainer_warning', metric: 'log:NCCL WARN "socket" \\ timeout', step: 12, state: '{"held":[1,2]}' },
  { run: 2, rule: 'mode_collapse', metric: 'frac_reward_zero_std', step: 7, state: '{"streak":0,"note":"é ✓"}' },
];

/** Copies of the migrations before `upTo` (exclusive), into a folder of their own. */
function migrationsBefore(dir: string, upTo: number): string {
  const out = join(tempDir(), 'migrations');
  mkdirSync(out);
  for (const name of readdirSync(dir)) {
    if (/^\d+_.*\.sql$/.test(name) && Number(name.slice(0, 3)) < upTo) copyFileSync(join(dir, name), join(out, name));
  }
  return out;
}

describe('run_cursors', () => {
  it('SQLite: a database with rule_cursors rows migrates to the same cursors', () => {
    const path = join(tempDir(), 'rlwatch.db');
    const old = new Database(path);
    old.pragma('foreign_keys = ON');
    migrate(old, migrationsBefore(MIGRATIONS_DIR, 18));
    for (const id of [1, 2]) {
      old.prepare('INSERT INTO runs (id, name, path, created_at) VALUES (?, ?, ?, 0)').run(id, `job${id}`, `/j${id}`);
    }
    const insert = old.prepare('INSERT INTO rule_cursors (run_id, rule, metric, step, state) VALUES (?, ?, ?, ?, ?)');
    for (const r of OLD_ROWS) insert.run(r.run, r.rule, r.metric, r.step, r.state);
    old.close();

    const store = Store.open(path);
    for (const r of OLD_ROWS) {
      expect(store.alerts.cursor(r.run, r.rule, r.metric)).toEqual({ step: r.step, state: JSON.parse(r.state) });
    }
    expect(store.alerts.cursor(2, 'nan_loss', 'loss')).toBeUndefined();
    const rows = store.db.prepare(`SELECT run_id AS run, rule, metric, step, state
      FROM ${CURSOR_ROWS} ORDER BY 1, 2, 3`);
    expect(rows.all()).toEqual(OLD_ROWS);
    expect(store.db.prepare('SELECT run_id FROM run_cursors ORDER BY 1').pluck().all()).toEqual([1, 2]);
    expect(store.db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'rule_cursors'").pluck().get()).toBe(0);
    store.close();
  });

  it('SQLite: an evaluation that rolls back leaves no cursor written, in the table or by a later flush', () => {
    const config = ConfigSchema.parse({});
    const store = Store.open(join(tempDir(), 'rlwatch.db'));
    const engine = new Engine(store, ruleBookFor(config), { repeatIntervalMs: 3_600_000, targets: ['console'] });
    const run = store.runs.ensure('job', '/logs/job');
    const file = store.files.add(run.id, '/logs/job/metrics.jsonl', 'jsonl');
    const batch = (step: number, offset: number): Parameters<Store['commit']>[0] => ({
      runId: run.id,
      fileId: file.id,
      metrics: [
        {
          step,
          values: new Map([
            ['reward', 0.5],
            ['frac_reward_zero_std', 0.95],
            ['loss', 1],
          ]),
        },
      ],
      examples: [],
      skips: new Map(),
      progress: { dev: 1, ino: 1, offset, size: offset, mtimeMs: 0, seq: 1, lines: 1, records: 1 },
    });
    const written = (): number => store.db.prepare('SELECT count(*) FROM run_cursors').pluck().get() as number;

    // the engine evaluates (and writes its cursors) inside the batch's transaction, which then rolls back
    expect(() =>
      store.commit(batch(1, 10), 0, (r) => {
        engine.evaluate(r.runId);
        expect(store.alerts.cursor(r.runId, 'non_finite', 'loss')?.step).toBe(1);
        expect(written()).toBe(1);
        throw new Error('the group failed');
      }),
    ).toThrow('the group failed');
    expect(written()).toBe(0);
    expect(store.alerts.cursor(run.id, 'non_finite', 'loss')).toBeUndefined();

    // a save not yet flushed when its transaction rolls back is not written by the next flush either
    expect(() =>
      store.transaction(() => {
        store.alerts.saveCursor(run.id, 'non_finite', 'loss', 1, { lastFinite: 9 });
        throw new Error('the rules failed');
      }),
    ).toThrow('the rules failed');
    store.transaction(() => store.alerts.flushCursors());
    expect(written()).toBe(0);

    // the same batch committed: its evaluation's cursors are written with it
    store.commit(batch(1, 10), 0, (r) => engine.evaluate(r.runId));
    expect(written()).toBe(1);
    const rows = store.db.prepare(`SELECT rule, metric, step, state FROM ${CURSOR_ROWS} WHERE metric = 'loss'`);
    // non_finite carries the last finite value of the batch's one line (loss 1 at step 1)
    const lastFinite = expect.stringContaining('"lastFinite":1,');
    expect(rows.all()).toContainEqual({ rule: 'non_finite', metric: 'loss', step: 1, state: lastFinite });
    store.close();
  });

  it('SQLite: a cursor reads back as its state through JSON, whoever changes the objects saved or read', () => {
    const store = Store.open(join(tempDir(), 'rlwatch.db'));
    const run = store.runs.ensure('job', '/logs/job').id;
    const plain: Record<string, unknown> = { streak: 2, gate: 'on', recovering: false, last: null, mean: 0.1 + 0.2 };
    const odd: Record<string, unknown> = { zero: -0, nan: NaN, inf: Infinity, gone: undefined, held: { s: [1, 2] } };
    store.alerts.saveCursor(run, 'r', 'plain', 5, plain);
    store.alerts.saveCursor(run, 'r', 'odd', 5, odd);
    const viaJson = (o: Record<string, unknown>): unknown => JSON.parse(JSON.stringify(o));
    const want = { plain: viaJson(plain), odd: viaJson(odd) };
    plain.streak = 99;
    (odd.held as { s: number[] }).s.push(3);
    const check = (): void => {
      for (const metric of ['plain', 'odd'] as const) {
        const c = store.alerts.cursor(run, 'r', metric)!;
        expect(c).toEqual({ step: 5, state: want[metric] });
        expect(Object.keys(c.state)).toEqual(Object.keys(want[metric] as object));
        c.state.streak = 100; // the reader's copy
        (c.state.held as { s?: number[] } | undefined)?.s?.push(4);
      }
      expect(Object.is(store.alerts.cursor(run, 'r', 'odd')!.state.zero, 0)).toBe(true);
    };
    check();
    check();
    // as written and read back by another process
    store.transaction(() => store.alerts.flushCursors());
    store.close();
    const again = Store.open(store.db.name);
    expect(again.alerts.cursor(run, 'r', 'plain')).toEqual({ step: 5, state: want.plain });
    expect(again.alerts.cursor(run, 'r', 'odd')).toEqual({ step: 5, state: want.odd });
    again.close();
  });

  it('PostgreSQL: a database with rule_cursors rows migrates to the same cursors', async () => {
    const url = await freshPgDatabase();
    const pool = newPool(url);
    try {
      await migratePg(pool, migrationsBefore(PG_MIGRATIONS_DIR, 2));
      for (const id of [1, 2]) {
        const sql = 'INSERT INTO runs (id, name, path, created_at) VALUES ($1, $2, $3, 0)';
        await pool.query(sql, [id, `j${id}`, `/j${id}`]);
      }
      for (const r of OLD_ROWS) {
        await pool.query('INSERT INTO rule_cursors (run_id, rule, metric, step, state) VALUES ($1, $2, $3, $4, $5)', [
          r.run,
          r.rule,
          r.metric,
          r.step,
          r.state,
        ]);
      }
      await migratePg(pool);
      expect((await pool.query("SELECT to_regclass('rule_cursors') AS t")).rows[0].t).toBeNull();
    } finally {
      await pool.end();
    }
    const store = await PgStore.open(url);
    try {
      for (const r of OLD_ROWS) {
        expect(await store.alerts.cursor(r.run, r.rule, r.metric)).toEqual({
          step: r.step,
          state: JSON.parse(r.state),
        });
      }
      expect(await store.alerts.cursor(2, 'nan_loss', 'loss')).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe('rlwatch migrate', () => {
  it('moves the cursors of a SQLite history to PostgreSQL as they were', async () => {
    const sqlite = Store.open(join(tempDir(), 'rlwatch.db'));
    const ids = [0, sqlite.runs.ensure('job1', '/logs/job1').id, sqlite.runs.ensure('job2', '/logs/job2').id];
    type State = Record<string, unknown>;
    const saved = OLD_ROWS.map((r) => ({ ...r, run: ids[r.run]!, state: JSON.parse(r.state) as State }));
    sqlite.transaction(() => {
      for (const r of saved) sqlite.alerts.saveCursor(r.run, r.rule, r.metric, r.step, r.state);
      sqlite.alerts.flushCursors();
    });
    const url = await freshPgDatabase();
    const pool = newPool(url);
    try {
      await copySqliteToPg(sqlite.db, pool);
    } finally {
      await pool.end();
      sqlite.close();
    }
    const store = await PgStore.open(url);
    try {
      for (const r of saved) {
        expect(await store.alerts.cursor(r.run, r.rule, r.metric)).toEqual({ step: r.step, state: r.state });
      }
    } finally {
      await store.close();
    }
  });
});

const kinds = [
  { name: 'sqlite', open: async () => new SqliteAsyncStore(Store.open(join(tempDir(), 'rlwatch.db'))) },
  { name: 'postgres', open: async () => PgStore.open(await freshPgDatabase()) },
];

const opened: StoreContract[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

describe.each(kinds)('run_cursors on $name', (kind) => {
  it('keep each cursor of several rules, metrics and runs apart as they are saved over', async () => {
    const store = await kind.open();
    opened.push(store);
    const a = (await store.runs.ensure('exp/a', '/runs/exp/a')).id;
    const b = (await store.runs.ensure('exp/b', '/runs/exp/b')).id;
    const saves: Array<[number, string, string, number, Record<string, unknown>]> = [
      [a, 'mode_collapse', 'frac_reward_zero_std', 5, { streak: 1 }],
      [a, 'mode_collapse', 'reward_std', 5, { streak: 0 }],
      [a, 'nan_loss', 'loss', 5, { lastFinite: 0.5 }],
      [b, 'mode_collapse', 'frac_reward_zero_std', 3, { streak: 2 }],
      [a, 'mode_collapse', 'frac_reward_zero_std', 6, { streak: 2, recovering: true }],
      [a, 'nan_loss', 'loss', 6, {}],
    ];
    for (const s of saves) await store.alerts.saveCursor(...s);
    // the last save of each cursor, from the list above
    const last = new Map(
      saves.map(([run, rule, metric, step, state]) => [`${run} ${rule} ${metric}`, { step, state }]),
    );
    expect(last.size).toBe(4);
    for (const [key, want] of last) {
      const [run, rule, metric] = key.split(' ') as [string, string, string];
      expect(await store.alerts.cursor(Number(run), rule, metric)).toEqual(want);
    }
    expect(await store.alerts.cursor(b, 'nan_loss', 'loss')).toBeUndefined();
    expect(await store.alerts.cursor(a, 'mode_collapse', 'kl')).toBeUndefined();
  });
});
