import { consoleTarget } from './chat/console.ts';
import type { Config } from './config/schema.ts';
import { parseDuration } from './engine/duration.ts';
import { Engine } from './engine/engine.ts';
import { ruleBookFor } from './engine/presets/index.ts';
import { Ingestor, type IngestEvent } from './ingest/ingestor.ts';
import { LiveIngest } from './ingest/watcher.ts';
import type { Log } from './log.ts';
import { Dispatcher, type Target } from './notify/dispatcher.ts';
import type { BatchResult } from './store/store.ts';
import { Store } from './store/store.ts';

/** How often stalls, repeats and expired mutes are looked at. */
const TICK_MS = 10_000;

export interface App {
  store: Store;
  live: LiveIngest;
  engine: Engine;
  dispatcher: Dispatcher;
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

export function makeEngine(store: Store, config: Config, targets: readonly Target[], now?: () => number): Engine {
  return new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: parseDuration(config.alerts.repeatInterval) as number,
    targets: targets.map((t) => t.name),
    now,
  });
}

/** The terminal notifier on stdout, in colour on a TTY. */
export const terminal = (): Target => consoleTarget((s) => process.stdout.write(s), process.stdout.isTTY === true);

/**
 * ingest → store → engine → outbox → notify, for one pass over what is there (`backfill`): rules are
 * evaluated over the whole history, and only what is still firing at the end is announced.
 */
export function backfillPipeline(store: Store, config: Config, log: Log, targets: readonly Target[]) {
  const engine = makeEngine(store, config, targets);
  const dispatcher = new Dispatcher(store, targets, { onError: (t, err) => log.warn(`cannot notify ${t}: ${err.message}`) });
  const ingestor = new Ingestor(store, config.ingest, ingestEvents(log, (r) => engine.evaluate(r.runId, false)));
  return {
    ingestor,
    async finish(): Promise<void> {
      engine.tick();
      await dispatcher.kick();
      await dispatcher.stop();
    },
  };
}

/** `rlwatch start`: the same pipeline, live. Resolves once the files already present have been read. */
export async function startApp(opts: {
  config: Config;
  dbPath: string;
  roots: readonly string[];
  log: Log;
  targets?: readonly Target[];
  onBatch?: (r: BatchResult) => void;
}): Promise<App> {
  const store = Store.open(opts.dbPath);
  const targets = opts.targets ?? [terminal()];
  const engine = makeEngine(store, opts.config, targets);
  const dispatcher = new Dispatcher(store, targets, { onError: (t, err) => opts.log.warn(`cannot notify ${t}: ${err.message}`) });
  // The backlog found at start-up is history: evaluate it, announce only what still fires afterwards.
  let catchingUp = true;
  const ingestor = new Ingestor(
    store,
    opts.config.ingest,
    ingestEvents(opts.log, (r) => {
      if (engine.evaluate(r.runId, !catchingUp) > 0) void dispatcher.kick();
      opts.onBatch?.(r);
    }),
  );
  const live = new LiveIngest(ingestor, opts.roots, opts.config.watch, (err) => opts.log.warn(err.message));
  await live.start();
  catchingUp = false;
  const tick = (): void => {
    if (engine.tick() > 0) void dispatcher.kick();
  };
  tick();
  await dispatcher.kick(); // also delivers what a previous process left in the outbox
  const timer = setInterval(tick, TICK_MS);
  return {
    store,
    live,
    engine,
    dispatcher,
    async stop() {
      clearInterval(timer);
      await live.stop();
      await dispatcher.kick();
      await dispatcher.stop();
      store.close();
    },
  };
}
