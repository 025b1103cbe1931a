import type { Config } from './config/schema.ts';
import { Ingestor, type IngestEvent } from './ingest/ingestor.ts';
import { LiveIngest } from './ingest/watcher.ts';
import type { Log } from './log.ts';
import type { BatchResult } from './store/store.ts';
import { Store } from './store/store.ts';

export interface App {
  store: Store;
  live: LiveIngest;
  stop(): Promise<void>;
}

/** Operational events of ingest, as log lines; batches go to `onBatch` (the engine, in the alert issue). */
export function ingestEvents(log: Log, onBatch: (r: BatchResult) => void = () => {}): (e: IngestEvent) => void {
  return (e) => {
    if (e.kind === 'batch') onBatch(e.result);
    else if (e.kind === 'restart') log.warn(`${e.path} was ${e.why}: reading it again from the start`);
    else log.warn(`cannot read ${e.path}: ${e.error}`);
  };
}

export function makeIngestor(store: Store, config: Config, log: Log, onBatch?: (r: BatchResult) => void): Ingestor {
  return new Ingestor(store, config.ingest, ingestEvents(log, onBatch));
}

/** `rlwatch start`: ingest → store, live. Resolves once the files already present have been read. */
export async function startApp(opts: {
  config: Config;
  dbPath: string;
  roots: readonly string[];
  log: Log;
  onBatch?: (r: BatchResult) => void;
}): Promise<App> {
  const store = Store.open(opts.dbPath);
  const ingestor = makeIngestor(store, opts.config, opts.log, opts.onBatch);
  const live = new LiveIngest(ingestor, opts.roots, opts.config.watch, (err) => opts.log.warn(err.message));
  await live.start();
  return {
    store,
    live,
    async stop() {
      await live.stop();
      store.close();
    },
  };
}
