import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/**
 * A new, empty database on the test run's PostgreSQL (test/pg/globalSetup.ts): each test that asks gets its own,
 * so tests stay independent however they run. Returns its URL.
 */
export async function freshPgDatabase(): Promise<string> {
  const admin = new URL(inject('pgUrl'));
  const name = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin.href });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  admin.pathname = `/${name}`;
  return admin.href;
}

/** `sql`'s rows, read on a connection of its own (what another process sees). */
export async function pgRows<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}
