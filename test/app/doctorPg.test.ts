import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { doctor } from '../../src/app/doctor.ts';
import { migratePg, newPool } from '../../src/store/postgres/connect.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase, pgRows } from '../pg/pgTest.ts';

function config(): string {
  const dir = tempDir();
  mkdirSync(join(dir, 'runs'));
  writeFileSync(join(dir, 'rlwatch.yaml'), 'watch:\n  roots: [./runs]\n');
  return join(dir, 'rlwatch.yaml');
}

const databaseCheck = async (db: string) =>
  (await doctor({ config: config(), db, env: {} })).find((c) => c.check === 'database');

describe('rlwatch doctor: PostgreSQL', () => {
  it('an empty database, a migrated one, and one a newer rlwatch wrote', async () => {
    const url = await freshPgDatabase();
    const shown = url.replace(/:[^:@/]*@/, ':***@');
    expect(await databaseCheck(url)).toMatchObject({
      status: 'ok',
      detail: `${shown}: a new database; start creates its tables`,
    });

    const pool = newPool(url);
    try {
      await migratePg(pool);
    } finally {
      await pool.end();
    }
    const [latest] = await pgRows<{ v: number }>(url, 'SELECT max(version) AS v FROM schema_migrations');
    expect(await databaseCheck(url)).toMatchObject({
      status: 'ok',
      detail: `${shown}: schema current (version ${latest!.v})`,
    });

    await pgRows(url, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_future.sql', 0)");
    expect(await databaseCheck(url)).toMatchObject({
      status: 'fail',
      detail: `${shown} was written by a newer rlwatch (schema changes 999 unknown to this one)`,
    });
  });

  it('a server that does not answer fails, without the password', async () => {
    const url = 'postgres://rl:hunter2@127.0.0.1:1/rlwatch';
    const check = await databaseCheck(url);
    expect(check).toMatchObject({ status: 'fail', fix: expect.stringContaining('check that the server is up') });
    expect(check?.detail).toMatch(
      /^cannot use PostgreSQL at postgres:\/\/rl:\*\*\*@127\.0\.0\.1:1\/rlwatch: .*ECONNREFUSED/,
    );
  });
});
