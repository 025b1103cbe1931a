/**
 * A watcher's connection prepares its statements (src/store/postgres/connect.ts `preparing`): each statement with
 * parameters is parsed once per connection under a name of its own, and then only bound and run; one without
 * parameters keeps the simple protocol (several statements in one string); a name whose first parse failed, in a
 * transaction that had already failed, is parsed again after the rollback.
 */
import { afterEach, expect, it } from 'vitest';
import { newClient, preparing } from '../../../src/store/postgres/connect.ts';
import { freshPgDatabase } from '../../pg/pgTest.ts';

const clients: Array<{ end(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end();
});

async function connected() {
  const client = preparing(newClient(await freshPgDatabase()));
  await client.connect();
  clients.push(client);
  return client;
}

const prepared = async (client: Awaited<ReturnType<typeof connected>>) =>
  (await client.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements')).rows
    .map((r) => `${r.name}: ${r.statement}`)
    .sort();

it('names each statement with parameters once, and leaves those without parameters unnamed', async () => {
  const client = await connected();
  await client.query('CREATE TABLE t (k integer PRIMARY KEY, v text); CREATE TABLE u (k integer)');
  for (let k = 1; k <= 3; k++) await client.query('INSERT INTO t (k, v) VALUES ($1, $2)', [k, `v${k}`]);
  const read = await client.query<{ v: string }>('SELECT v FROM t WHERE k = $1', [2]);
  expect(read.rows).toEqual([{ v: 'v2' }]);
  expect((await client.query('SELECT count(*)::integer AS n FROM t', [])).rows).toEqual([{ n: 3 }]);
  expect(await prepared(client)).toEqual([
    'rlwatch_0: INSERT INTO t (k, v) VALUES ($1, $2)',
    'rlwatch_1: SELECT v FROM t WHERE k = $1',
  ]);
});

it('parses a statement again after its first parse failed in an aborted transaction', async () => {
  const client = await connected();
  await client.query('CREATE TABLE t (k integer PRIMARY KEY)');
  await client.query('BEGIN');
  await expect(client.query('INSERT INTO t (k) VALUES (1), (1)')).rejects.toMatchObject({ code: '23505' });
  await expect(client.query('INSERT INTO t (k) VALUES ($1)', [2])).rejects.toMatchObject({ code: '25P02' });
  await client.query('ROLLBACK');
  await client.query('INSERT INTO t (k) VALUES ($1)', [2]);
  await client.query('INSERT INTO t (k) VALUES ($1)', [3]);
  expect((await client.query<{ k: number }>('SELECT k FROM t ORDER BY k')).rows).toEqual([{ k: 2 }, { k: 3 }]);
  expect(await prepared(client)).toEqual(['rlwatch_0: INSERT INTO t (k) VALUES ($1)']);
});
