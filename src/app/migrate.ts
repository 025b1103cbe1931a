/** `rlwatch migrate`: copies a SQLite history into PostgreSQL, for a team that outgrows one machine's database. */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { Store } from '../store/sqlite/store.ts';
import { isPostgresUrl } from '../config/storeSettings.ts';
import { isConnectionError, redactUrl } from '../store/postgres/url.ts';

/** `rlwatch migrate --from FILE.db --to postgres://...`: moves a SQLite history into PostgreSQL. */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'copy a SQLite history (runs, points, alerts, mutes, outbox, chat ids) into PostgreSQL; safe to re-run',
    )
    .requiredOption('--from <file>', 'the SQLite database')
    .requiredOption('--to <url>', 'postgres://user:password@host:port/database')
    .action(async (opts: { from: string; to: string }) => migrate(opts.from, opts.to));
}

async function migrate(from: string, to: string): Promise<void> {
  const path = resolve(from);
  if (!existsSync(path)) throw new UserError(`${from}: no such SQLite database`);
  if (!isPostgresUrl(to)) throw new UserError(`--to ${redactUrl(to)}: expected a postgres:// URL`);
  // the driver loads only for this command: every other command starts without it
  const { newPool } = await import('../store/postgres/connect.ts');
  const { copySqliteToPg } = await import('../store/postgres/fromSqlite.ts');
  const store = Store.openForReading(path);
  const pool = newPool(to, 1);
  const t0 = performance.now();
  let last = 0;
  try {
    const counts = await copySqliteToPg(store.db, pool, (table, done, total) => {
      const now = performance.now();
      if (done < total && now - last < 500) return;
      last = now;
      process.stderr.write(`migrate: ${table} ${done.toLocaleString('en')}/${total.toLocaleString('en')}\n`);
    });
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    const col = (v: number): string => String(v).padStart(10);
    const rows = counts.map((c) => `  ${c.table.padEnd(14)} ${col(c.read)} read ${col(c.copied)} copied`);
    process.stdout.write(`migrate: ${path} -> ${redactUrl(to)} in ${seconds} s\n${rows.join('\n')}\n`);
  } catch (err) {
    if (isConnectionError(err)) throw new UserError(`${redactUrl(to)}: ${(err as Error).message}`);
    throw err;
  } finally {
    store.close();
    await pool.end();
  }
}
