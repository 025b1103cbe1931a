/**
 * The store a `--db` names: a `postgres://` (or `postgresql://`) URL opens PostgreSQL, anything else a SQLite file.
 * The PostgreSQL driver is imported only then, so that commands on SQLite start without it.
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Config } from '../config/schema.ts';
import { UserError } from '../lib/errors.ts';
import type { StoreContract } from './contract.ts';
import { isPostgresUrl } from '../config/storeSettings.ts';
import { isConnectionError, redactUrl } from './postgres/url.ts';
import { SqliteAsyncStore } from './sqlite/sqliteAsync.ts';
import { Store } from './sqlite/store.ts';

export { isPostgresUrl };

/** Where `--db`, else RLWATCH_DB, else the config's `db`, else ./rlwatch.db points: a PostgreSQL URL as given,
 * a SQLite file as an absolute path. */
export function dbLocation(flag: string | undefined, config: Pick<Config, 'db'>, env = process.env): string {
  const db = flag ?? env.RLWATCH_DB ?? config.db ?? 'rlwatch.db';
  return isPostgresUrl(db) ? db : resolve(db);
}

/** What the names of runs made from folders start with (`watch.prefix`): as configured; unset, nothing on SQLite
 * (one machine's database) and this host's name on PostgreSQL (`where` a URL), which the watchers of several hosts
 * share: each host's `grpo-7` is a run of its own. */
export function runPrefix(watch: Pick<Config['watch'], 'prefix'>, where: string, host = hostname()): string {
  return watch.prefix ?? (isPostgresUrl(where) ? host : '');
}

export interface OpenOptions {
  /** a command's: the SQLite file must exist, and on a read-only path it still opens (writes then fail) */
  reading?: boolean;
  /** rlwatch's clock (tests inject one) */
  now?: () => number;
}

/** Opens the store at `where` (a `dbLocation`): PostgreSQL is connected and its schema brought up to date; a
 * server that cannot be reached is a UserError naming it (without its password). */
export async function openStore(where: string, opts: OpenOptions = {}): Promise<StoreContract> {
  if (isPostgresUrl(where)) {
    const { PgStore } = await import('./postgres/pgStore.ts');
    try {
      return await PgStore.open(where, { now: opts.now });
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      throw new UserError(`cannot open ${redactUrl(where)}: ${(err as Error).message}`);
    }
  }
  if (!opts.reading) return new SqliteAsyncStore(Store.open(where, { now: opts.now }));
  // a command that queries (or acks, mutes) would otherwise make an empty database, folders and all, where a --db
  // was mistyped, and answer "No runs yet"
  if (!existsSync(where)) {
    throw new UserError(
      `${where}: no database there yet (\`rlwatch start\` or \`rlwatch backfill\` makes it; --db names another)`,
    );
  }
  return new SqliteAsyncStore(Store.openForReading(where));
}
