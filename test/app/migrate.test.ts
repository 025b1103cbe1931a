/**
 * `rlwatch migrate`: a SQLite history made by a real `rlwatch backfill` of samples/ moves into the test run's
 * PostgreSQL; counts and values are read from the SQLite file with plain SQL and from the logs themselves.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { TABLES } from '../../src/store/postgres/fromSqlite.ts';
import { rlwatch } from '../integration/cli.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

const SAMPLES = join(import.meta.dirname, '../../samples');

let sqlitePath = '';
beforeAll(() => {
  sqlitePath = join(tempDir(), 'history.db');
  const r = rlwatch(['--db', sqlitePath, 'backfill', SAMPLES]);
  expect(r.status, r.stderr).toBe(0);
  // what a backfill does not make: a mute, a posted chat message, a NaN point
  const store = Store.open(sqlitePath);
  const run = store.runs.byName('grpo-demo')!;
  store.silences.add({
    run: 'grpo-*',
    rule: null,
    severity: null,
    starts_at: 1,
    ends_at: 9e12,
    author: 'ana',
    reason: 'sweep',
  });
  const alertId = store.alerts.list({ all: true })[0]!.id;
  store.chatMessages.record(
    'discord:ops',
    '998877',
    { runId: run.id, alertIds: [alertId], payload: {}, delivery: '1:0' },
    5,
  );
  const file = store.files.ofRun(run.id)[0]!;
  store.commit(
    {
      runId: run.id,
      fileId: file.id,
      metrics: [{ step: 100_000, values: new Map([['loss', NaN]]) }],
      examples: [],
      skips: new Map(),
      progress: { ...file, mtimeMs: 0, dev: 0, ino: 0, lines: 0, records: 0 },
    },
    3,
  );
  store.close();
}, 120_000);

function sqliteCounts(): Record<string, number> {
  const db = new Database(sqlitePath, { readonly: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t, db.prepare(`SELECT count(*) FROM ${t}`).pluck().get() as number]));
  } finally {
    db.close();
  }
}

async function pgCounts(url: string): Promise<Record<string, number>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const out: Record<string, number> = {};
    for (const t of TABLES) out[t] = Number((await c.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n);
    return out;
  } finally {
    await c.end();
  }
}

describe('rlwatch migrate', () => {
  it('moves every table of a backfilled history, values intact, and adds nothing when run again', async () => {
    const url = await freshPgDatabase();
    const first = rlwatch(['migrate', '--from', sqlitePath, '--to', url]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/^migrate: points [\d,]+\/[\d,]+$/m);
    const expected = sqliteCounts();
    expect(expected.points).toBeGreaterThan(1000);
    expect(expected.alerts).toBeGreaterThan(0);
    expect(expected.examples).toBeGreaterThan(0);
    expect(await pgCounts(url)).toEqual(expected);
    expect([expected.silences, expected.chat_messages, expected.alert_messages]).toEqual([1, 1, 1]);
    expect(first.stdout).toMatch(new RegExp(`^  points +${expected.points} read +${expected.points} copied$`, 'm'));

    const again = rlwatch(['migrate', '--from', sqlitePath, '--to', url]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`^  points +${expected.points} read +0 copied$`, 'm'));
    expect(again.stdout).not.toMatch(/ [1-9]\d* copied$/m);
    expect(await pgCounts(url)).toEqual(expected);

    const store = await PgStore.open(url);
    try {
      const run = (await store.runs.byName('grpo-demo'))!;
      // samples/grpo-demo/learning.log, lines 1 and 3: reward=0.049±0.058 ... frac_zero_std=0.25 (step 3)
      const reward = await store.points.series(run.id, 'reward', undefined);
      expect(reward[0]).toMatchObject({ step: 1, value: 0.049 });
      expect((await store.points.upTo(run.id, 'frac_zero_std', 3, 1))[0]).toEqual({ step: 3, value: 0.25 });
      expect(await store.points.upTo(run.id, 'loss', 100_000, 1)).toEqual([{ step: 100_000, value: NaN }]);
      expect((await store.silences.active(1000)).map((x) => [x.run, x.author])).toEqual([['grpo-*', 'ana']]);
      expect((await store.chat.byRef('discord:ops', '998877'))?.delivery).toBe('1:0');
      // the alerts as the SQLite file has them
      const db = new Database(sqlitePath, { readonly: true });
      const alerts = db.prepare('SELECT id, rule, state, summary FROM alerts ORDER BY id DESC').all();
      db.close();
      const moved = await store.alerts.list({ all: true });
      expect(moved.map((a) => ({ id: a.id, rule: a.rule, state: a.state, summary: a.summary }))).toEqual(alerts);
      // ids go on after the copied ones
      const copied = Math.max(...(await store.runs.list()).map((r) => r.id));
      expect((await store.runs.ensure('host-b/new', '/elsewhere/new')).id).toBeGreaterThan(copied);
    } finally {
      await store.close();
    }
  }, 120_000);

  it('a database it cannot reach fails with one line, the password hidden', () => {
    const r = rlwatch(['migrate', '--from', sqlitePath, '--to', 'postgres://u:s3cret@127.0.0.1:1/x']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rlwatch: postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x: .*ECONNREFUSED.*\n$/);
    expect(r.stderr).not.toContain('s3cret');
  });

  it('a missing SQLite file is said so, and nothing is created', () => {
    const missing = join(tempDir(), 'nope.db');
    const r = rlwatch(['migrate', '--from', missing, '--to', 'postgres://u@127.0.0.1:1/x']);
    expect(r).toMatchObject({ status: 1, stderr: `rlwatch: ${missing}: no such SQLite database\n` });
    expect(existsSync(missing)).toBe(false);
  });

  it('refuses a database that holds other runs under the same ids, and leaves it as it was', async () => {
    const url = await freshPgDatabase();
    const store = await PgStore.open(url);
    await store.runs.ensure('host-b/exp', '/b/exp');
    await store.close();
    const r = rlwatch(['migrate', '--from', sqlitePath, '--to', url]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rlwatch: the PostgreSQL database already holds other runs \(run 1 there is not .*\): /);
    expect(r.stderr).toMatch(/: migrate into an empty database\n$/);
    expect((await pgCounts(url)).runs).toBe(1);
  });
});
