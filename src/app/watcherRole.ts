/**
 * `rlwatch start --role watcher` on PostgreSQL: this host's runs, read and judged here, their points, alerts and
 * notifications written to the database every watcher and the one bot share. It delivers and routes nothing, so it
 * needs no chat settings, only the database URL: the bot process (`--role bot`, or a `--role all` that wins the bot
 * lock) routes what it queues with its own config and posts it, at once (LISTEN/NOTIFY).
 */
import { unreadSummary } from '../commands/files.ts';
import type { Config } from '../config/schema.ts';
import { UserError } from '../lib/errors.ts';
import type { Log } from '../lib/log.ts';
import { isUnreachable } from '../store/dbErrors.ts';
import { openStore, runPrefix } from '../store/open.ts';
import { PgLiveStore } from '../store/postgres/pgLiveStore.ts';
import { isConnectionError } from '../store/postgres/url.ts';
import type { BatchResult } from '../store/sqlite/store.ts';
import { startWatching, type Watching } from './watching.ts';

export interface WatcherApp {
  watching: Watching;
  /** what names of this host's runs start with (`watch.prefix`, else the host name) */
  prefix: string;
  stop(): Promise<void>;
}

export async function startWatcher(opts: {
  config: Config;
  log: Log;
  /** the postgres:// URL */
  db: string;
  roots: readonly string[];
  onBatch?: (r: BatchResult) => void;
}): Promise<WatcherApp> {
  const { config, log } = opts;
  const { store, prefix } = await openWatcherStore(config, opts.db);
  let watching: Watching;
  try {
    watching = await startWatching(store, {
      config,
      log,
      roots: opts.roots,
      prefix,
      onBatch: opts.onBatch,
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  await warnUnread(opts.db, opts.roots, prefix, log);
  return {
    watching,
    prefix,
    async stop() {
      await watching.stop();
      await store.close();
    },
  };
}

/** This host's live store on PostgreSQL (`db` a URL) and what its runs' names start with: a watcher's, and
 * `backfill`'s on PostgreSQL. */
export async function openWatcherStore(config: Config, db: string): Promise<{ store: PgLiveStore; prefix: string }> {
  const prefix = runPrefix(config.watch, db);
  const store = await PgLiveStore.open(db, { scope: prefix }).catch((err: unknown) => {
    // a server that cannot be reached is told in one line (the message names it, without its password)
    throw isConnectionError(err) ? new UserError((err as Error).message) : err;
  });
  return { store, prefix };
}

/** The files under `roots` that no format reads, told once at start: a server out of reach at that moment costs
 * the list, not the watcher. */
async function warnUnread(db: string, roots: readonly string[], scope: string, log: Log): Promise<void> {
  try {
    const reader = await openStore(db);
    try {
      for (const line of await unreadSummary(reader, roots, { scope })) log.warn(line);
    } finally {
      await reader.close();
    }
  } catch (err) {
    if (!isUnreachable(err) && !isConnectionError(err)) throw err;
    log.warn(`cannot list the files no format reads (${(err as Error).message})`);
  }
}
