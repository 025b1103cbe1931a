/**
 * The watching half of `rlwatch start`: files → ingestor → store → rules → outbox, live. On SQLite (`startApp`) the
 * same process delivers what it queues; on PostgreSQL a watcher (`--role watcher`) only queues, and the bot process
 * (`--role bot`) delivers what every watcher queued.
 */
import type { Config } from '../config/schema.ts';
import { parseDuration } from '../lib/duration.ts';
import { Engine } from '../engine/engine.ts';
import { ruleBookFor } from '../engine/presets/index.ts';
import { Ingestor, type IngestEvent } from '../ingest/ingestor.ts';
import { LiveIngest, UNREACHABLE_RETRY_MS } from '../ingest/discover/watcher.ts';
import type { Log } from '../lib/log.ts';
import { isUnreachable } from '../store/dbErrors.ts';
import type { LiveStore } from '../store/live.ts';
import { OutageLog } from '../store/postgres/outageLog.ts';
import { retryWhileBusy, type BatchResult } from '../store/sqlite/store.ts';

/** How often stalls, repeats and expired mutes are looked at (and, by the process that delivers, the outbox). */
export const TICK_MS = 10_000;

export interface WatchingOptions {
  config: Config;
  log: Log;
  roots: readonly string[];
  /** what names of runs made from folders start with (`runPrefix`) */
  prefix: string;
  /** notifications were queued and their transaction has ended: deliver them now */
  onQueued?: () => void;
  onBatch?: (r: BatchResult) => void;
  /** after each look at stalls and repeats (the process that delivers looks at the outbox then) */
  afterTick?: () => void;
}

export interface Watching {
  live: LiveIngest;
  engine: Engine;
  stop(): Promise<void>;
}

/** Operational events of ingest, as log lines; batches go to `onBatch`. */
export function ingestEvents(log: Log, onBatch: (r: BatchResult) => void = () => {}): (e: IngestEvent) => void {
  return (e) => {
    if (e.kind === 'batch') onBatch(e.result);
    else if (e.kind === 'restart') log.warn(`${e.path} was ${e.why}: reading it again from the start`);
    else log.warn(`cannot read ${e.path}: ${e.error}`);
  };
}

/** The engine with the configured rules, queueing each notification for `targets` (default: platform-neutral rows,
 * routed by the process that delivers them). */
export function engineFor(store: LiveStore, config: Config, now?: () => number, targets?: readonly string[]): Engine {
  return new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: parseDuration(config.alerts.repeatInterval) as number,
    targets,
    now,
  });
}

/** `fn` (start-up's own reads and writes), done again every UNREACHABLE_RETRY_MS while PostgreSQL is out of reach:
 * an outage while a watcher starts is waited out as one while it watches, not the end of the process. */
async function untilReachable(fn: () => void, log: OutageLog): Promise<void> {
  for (;;) {
    try {
      fn();
      return log.reached();
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      const line = `cannot start watching yet (${(err as Error).message}): trying again in ${UNREACHABLE_RETRY_MS / 1000} s`;
      log.failed(err, line);
      await new Promise((done) => setTimeout(done, UNREACHABLE_RETRY_MS));
    }
  }
}

/** Starts watching `opts.roots` into `store`. Resolves once the files already present have been read: that backlog
 * is history, evaluated without announcing; what still fires afterwards is announced by the first tick. */
export async function startWatching(store: LiveStore, opts: WatchingOptions): Promise<Watching> {
  const { config } = opts;
  // while PostgreSQL is out of reach every read and tick fails: the first is told, then a line a minute
  const log = new OutageLog(opts.log);
  const engine = engineFor(store, config);
  let catchingUp = true;
  // The rules run inside each batch's transaction (one commit per batch). That transaction has written the batch
  // before they run, so it holds the write lock: they cannot find the database busy (a busy batch is read again).
  let queued = 0;
  const ingestor = new Ingestor(
    store,
    { ...config.ingest, runPrefix: opts.prefix },
    ingestEvents(log, (r) => {
      log.reached();
      // after the transaction that wrote its rows (a group of files' is still open here), never inside it
      if (queued > 0 && opts.onQueued) setImmediate(opts.onQueued);
      queued = 0;
      opts.onBatch?.(r);
    }),
    (r) => {
      queued += engine.evaluate(r.runId, !catchingUp);
    },
  );
  const live = new LiveIngest(ingestor, opts.roots, config.watch, (err) => log.failed(err, err.message), store);
  // batches a stopped process committed but never evaluated
  await untilReachable(() => engine.evaluateBehind(), log);
  await live.start();
  catchingUp = false;
  await untilReachable(() => engine.caughtUp(), log);
  const tick = (): void => {
    try {
      retryWhileBusy(
        () => {
          engine.tick();
          log.reached();
        },
        (err) => log.warn(`cannot look at stalls and repeats yet (${err.message}): trying again in 1 s`),
      );
    } catch (err) {
      // the database out of reach (PostgreSQL): nothing was written, and the process goes on
      log.failed(err, `cannot look at stalls and repeats (${(err as Error).message}): trying again on the next tick`);
    }
    opts.afterTick?.();
  };
  tick();
  const timer = setInterval(tick, TICK_MS);
  return {
    live,
    engine,
    async stop() {
      clearInterval(timer);
      await live.stop();
    },
  };
}
