/**
 * Assembles the pipeline: the engine with the configured rules, each platform's settings from the environment, the
 * router of the process that delivers, and the one pass over existing logs that `backfill` runs.
 */
import type { Config } from '../config/schema.ts';
import { unreadSummary } from '../commands/files.ts';
import type { Engine } from '../engine/engine.ts';
import { ReportSchedule } from '../report/schedule.ts';
import { Ingestor } from '../ingest/ingestor.ts';
import type { LiveIngest } from '../ingest/discover/watcher.ts';
import type { Log } from '../lib/log.ts';
import { endExpiredMutes } from '../notify/cardUpdates.ts';
import { Dispatcher, type DispatcherOptions, type Target } from '../notify/dispatcher.ts';
import { redactingTarget, redactorOf } from '../notify/redact.ts';
import { PLATFORMS } from '../platforms/index.ts';
import { terminal } from '../platforms/terminal/terminal.ts';
import { sectionOf, type PlatformInstance } from '../platforms/platform.ts';
import type { StoreContract } from '../store/contract.ts';
import type { LiveStore } from '../store/live.ts';
import { runPrefix } from '../store/open.ts';
import { SqliteAsyncStore } from '../store/sqlite/sqliteAsync.ts';
import type { BatchResult } from '../store/sqlite/store.ts';
import { Store } from '../store/sqlite/store.ts';
import { walCheckpoints } from '../store/sqlite/walCheckpoints.ts';
import { watchDbIdentity } from '../store/dbIdentity.ts';
import { engineFor, ingestEvents, startWatching, type Watching } from './watching.ts';

/** Each configured platform's settings, by platform id (what its `settings()` returns). */
export type PlatformSettings = Record<string, unknown>;

/** The settings of every platform configured in `config` and the environment; one without its token stays off. */
export function platformsFromEnv(config: Config, env: NodeJS.ProcessEnv = process.env): PlatformSettings {
  const out: PlatformSettings = {};
  for (const p of PLATFORMS) {
    const settings = p.settings(sectionOf(config, p), env);
    if (settings !== null) out[p.id] = settings;
  }
  return out;
}

export interface App {
  store: Store;
  live: LiveIngest;
  engine: Engine;
  dispatcher: Dispatcher;
  /** the running platforms, by id */
  platforms: ReadonlyMap<string, PlatformInstance>;
  /** settles when a platform refused rlwatch for good (a bad token): `start` reports it and exits */
  failure: Promise<Error>;
  /** Stops within about a second and a half, whatever the platforms do; undelivered rows stay pending. */
  stop(): Promise<void>;
}

/** How long `stop` waits for deliveries in flight, and then the bots (half each), before it lets go. */
const STOP_GRACE_MS = 1000;

/** `p`, or nothing once `ms` have passed: a platform that does not answer does not hold the shutdown. */
async function within(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p?.catch(() => {}), new Promise((done) => (timer = setTimeout(done, ms)))]);
  clearTimeout(timer);
}

/** The outbox targets of an alert of a run and severity: the terminal (if any) and each configured platform's
 * routes (scheduled reports go where warnings go). The router of the process that delivers (its dispatcher routes the
 * engine's platform-neutral rows with it): a watcher needs no chat settings. */
export function alertRoute(
  config: Config,
  platforms: PlatformSettings,
  terminal: boolean,
): (run: string, severity: string) => string[] {
  const routes = PLATFORMS.filter((p) => platforms[p.id] !== undefined).map((p) => p.route(platforms[p.id], config));
  return (run, severity) => [...(terminal ? ['console'] : []), ...routes.flatMap((route) => route(run, severity))];
}

/** The engine with the configured rules: `terminal`, every notification for the terminal alone (`backfill`, which
 * delivers nowhere else); else platform-neutral rows, routed where they are delivered. */
export function makeEngine(store: LiveStore, config: Config, opts: { terminal: boolean; now?: () => number }): Engine {
  return engineFor(store, config, opts.now, opts.terminal ? ['console'] : undefined);
}

/** What a backfill writes through when it is not a SQLite `Store` (which is all three): the live store the ingestor
 * and the rules write, the contract its outbox is delivered from, and what its runs' names start with. */
export interface BackfillStores {
  live: LiveStore;
  contract: StoreContract;
  prefix: string;
}

/**
 * ingest → store → engine → outbox → notify, for one pass over what is there (`backfill`): rules are
 * evaluated over the whole history, and only what is still firing at the end is announced.
 */
export function backfillPipeline(store: Store | BackfillStores, config: Config, log: Log, target: Target) {
  const { live, contract, prefix } =
    store instanceof Store
      ? { live: store, contract: new SqliteAsyncStore(store), prefix: runPrefix(config.watch, store.db.name) }
      : store;
  const engine = makeEngine(live, config, { terminal: true });
  const dispatcher = new Dispatcher(contract, [redactingTarget(target, redactorOf(config))], { log });
  // the rules run inside each batch's transaction: one commit per batch
  const ingest = { ...config.ingest, runPrefix: prefix };
  const ingestor = new Ingestor(live, ingest, ingestEvents(log), (r) => engine.evaluate(r.runId, false));
  return {
    ingestor,
    async finish(): Promise<void> {
      engine.evaluateBehind();
      engine.tick();
      await dispatcher.kick();
      await dispatcher.stop();
    },
  };
}

/** The platforms, the dispatcher and the scheduled reports: what delivers and answers, on one store. */
export interface BotSide {
  dispatcher: Dispatcher;
  /** the running platforms, by id */
  platforms: ReadonlyMap<string, PlatformInstance>;
  /** settles when a platform refused rlwatch for good (a bad token) */
  failure: Promise<Error>;
  /** scheduled reports due, mutes run out, the outbox looked at; a failure is logged, the next tick tries again */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

export interface BotOptions {
  config: Config;
  log: Log;
  /** settings by platform id (`platformsFromEnv`); a platform without settings stays off */
  platforms?: PlatformSettings;
  /** the terminal notifier; null for none */
  terminal?: Target | null;
  /** delivery backoff (tests shorten it) */
  delivery?: Pick<DispatcherOptions, 'baseBackoffMs' | 'maxBackoffMs'>;
}

/**
 * Starts the bot side on `store`. The platforms connect in the background: nothing waits on one, and the outbox
 * of a platform is delivered as soon as it is reachable (it calls `wake`).
 */
export async function startBotSide(store: StoreContract, opts: BotOptions): Promise<BotSide> {
  const { config, log } = opts;
  const term = opts.terminal === undefined ? terminal() : opts.terminal;
  // each platform loads its client library (with the chart renderer, ~130 MB) only when configured
  let wake: (prefix: string) => void = () => {};
  let deliverNow: () => void = () => {};
  const platforms = new Map<string, PlatformInstance>();
  for (const p of PLATFORMS) {
    const settings = opts.platforms?.[p.id];
    if (settings === undefined) continue;
    const ctx = { store, config, log, wake: () => wake(`${p.id}:`), deliverNow: () => deliverNow() };
    platforms.set(p.id, await p.create(settings, ctx));
  }
  const running = [...platforms.values()];
  const targets = [...(term ? [term] : []), ...running.flatMap((p) => p.targets)].map((t) =>
    redactingTarget(t, redactorOf(config)),
  );
  // the one router: the engine's neutral rows, the card updates queued for them, and the reports all go through it
  const route = alertRoute(config, opts.platforms ?? {}, term !== null);
  const reports = new ReportSchedule(store, config, route);
  // this process is the one that delivers (the writer lock on SQLite, the bot lock on PostgreSQL): a lease left on a
  // row is a dead process's, and its rows go now rather than once the lease ran out
  const reclaimed = await store.outbox.reclaimLeases();
  if (reclaimed > 0) log.info(`took over ${reclaimed} outbox rows a stopped process had claimed`);
  const dispatcher = new Dispatcher(store, targets, { ...opts.delivery, log, route });
  wake = (prefix) => dispatcher.wake(prefix);
  deliverNow = () => void dispatcher.kick();
  const failure = Promise.race(
    running.flatMap((p) => (p.failure ? [p.failure] : [])).concat(new Promise<Error>(() => {})),
  );
  for (const p of running) p.start?.();
  return {
    dispatcher,
    platforms,
    failure,
    async tick() {
      try {
        await reports.tick();
        await endExpiredMutes(store, Date.now()); // their cards stop saying muted
      } catch (err) {
        log.warn(`cannot look at reports and mutes yet (${(err as Error).message}): trying again on the next tick`);
      }
      void dispatcher.kick();
    },
    async stop() {
      // a last drain; a delivery still in flight after the grace is abandoned and its row stays pending
      void dispatcher.kick();
      await dispatcher.stop(STOP_GRACE_MS);
      await Promise.all(running.map((p) => within(p.stop?.(), STOP_GRACE_MS / 2)));
    },
  };
}

/** `rlwatch start`: the same pipeline, live, with the platforms configured. Resolves once the files
 * already present have been read. On SQLite this process is the one that writes the database (its writer lock)
 * and so the one that delivers: the bot side runs over the same connection as the engine. */
export async function startApp(
  opts: BotOptions & {
    dbPath: string;
    roots: readonly string[];
    onBatch?: (r: BatchResult) => void;
  },
): Promise<App> {
  const store = Store.openWriter(opts.dbPath, 'start');
  const checkpoints = walCheckpoints(store.db); // off this thread: a checkpoint's disk syncs held up the lines
  let dbLost!: (err: Error) => void;
  const lost = new Promise<Error>((done) => (dbLost = done));
  const identity = watchDbIdentity(store.db, (line) => dbLost(new Error(line)));
  const { config, log } = opts;
  const contract = new SqliteAsyncStore(store);
  let bot: BotSide;
  try {
    bot = await startBotSide(contract, opts);
  } catch (err) {
    identity.stop();
    await checkpoints.stop();
    store.close();
    throw err;
  }
  const { dispatcher } = bot;
  let botTick: NodeJS.Immediate | undefined;
  let watching: Watching;
  try {
    watching = await startWatching(store, {
      config,
      log,
      roots: opts.roots,
      prefix: runPrefix(config.watch, opts.dbPath),
      onQueued: () => void dispatcher.kick(),
      onBatch: opts.onBatch,
      // each tick also looks at the outbox: rows a previous process left, or `rlwatch outbox retry` re-queued. In a
      // callback of its own: its transaction, on the engine's connection, never interleaves with what comes next
      afterTick: () => (botTick = setImmediate(() => void bot.tick())),
    });
  } catch (err) {
    await bot.stop();
    identity.stop();
    await checkpoints.stop();
    store.close();
    throw err;
  }
  for (const line of await unreadSummary(contract, opts.roots)) log.warn(line);
  return {
    store,
    live: watching.live,
    engine: watching.engine,
    dispatcher,
    platforms: bot.platforms,
    // a database deleted or replaced under it stops `start` as a refused token does
    failure: Promise.race([bot.failure, lost]),
    async stop() {
      identity.stop();
      await watching.stop();
      clearImmediate(botTick);
      await bot.stop();
      await checkpoints.stop();
      store.close();
    },
  };
}
