/**
 * `rlwatch backfill`: ingests what is already in the named directories once, into SQLite or (as this host's
 * watcher) PostgreSQL, runs the rules over the history, and prints a summary and what still fires.
 */
import type { Command } from 'commander';
import type { BackfillStores } from '../app/start.ts';
import { loadConfig } from '../app/loadConfig.ts';
import type { Config } from '../config/schema.ts';
import type { BackfillSummary } from '../ingest/backfill.ts';
import type { ParseThread } from '../ingest/threads/parseThread.ts';
import { stderrLog } from '../lib/log.ts';
import { terminal } from '../platforms/terminal/terminal.ts';
import { dbLocation, isPostgresUrl, openStore } from '../store/open.ts';
import { SqliteAsyncStore } from '../store/sqlite/sqliteAsync.ts';
import { Store } from '../store/sqlite/store.ts';
import { checkDirs, type GlobalOpts } from './common.ts';

/** What `backfill` writes through: a SQLite file's one writer, or on PostgreSQL this host's live store as a watcher
 * opens it (its runs named under the host's prefix) and the contract its outbox is delivered from. */
async function openBackfill(db: string, config: Config) {
  if (!isPostgresUrl(db)) {
    const store = Store.openWriter(db, 'backfill');
    const close = async (): Promise<void> => store.close();
    return { stores: store, contract: new SqliteAsyncStore(store), scope: undefined, close };
  }
  const { store, prefix } = await (await import('../app/watcherRole.ts')).openWatcherStore(config, db);
  const contract = await openStore(db).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  const close = async (): Promise<void> => {
    await contract.close();
    await store.close();
  };
  return { stores: { live: store, contract, prefix }, contract, scope: prefix, close };
}

/** Ingests `roots`, evaluating the rules over the history; prints the summary, then what still fires. */
async function runBackfill(
  store: Store | BackfillStores,
  config: Config,
  roots: string[],
  report: (s: BackfillSummary) => Promise<void>,
  parsing: ParseThread,
): Promise<void> {
  // cli-progress is CommonJS: in the bundle its dynamic import has only a default export
  const [
    { backfillPipeline },
    { backfill },
    {
      default: { SingleBar },
    },
  ] = await Promise.all([import('../app/start.ts'), import('../ingest/backfill.ts'), import('cli-progress')]);
  const { ingestor, finish } = backfillPipeline(store, config, stderrLog, terminal());
  const bar = process.stderr.isTTY
    ? new SingleBar({ format: 'backfill [{bar}] {percentage}% {value}/{total} MB', stream: process.stderr })
    : null;
  let started = false;
  try {
    const summary = await backfill(
      ingestor,
      roots,
      config.watch,
      ({ total, done }) => {
        if (!bar) return;
        const mb = (b: number): number => Math.round(b / 1e5) / 10;
        if (!started) bar.start(mb(total), 0);
        started = true;
        bar.update(mb(done));
      },
      parsing,
    );
    if (started) bar?.stop();
    started = false;
    await report(summary);
    await finish();
  } finally {
    if (started) bar?.stop();
  }
}

function describeBackfill(s: BackfillSummary, seconds: number): string {
  const lines = [
    `backfill: ${s.runs.length} run${s.runs.length === 1 ? '' : 's'}, ${s.files.length} file${s.files.length === 1 ? '' : 's'}, ` +
      `${s.records.toLocaleString('en')} records from ${(s.bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(1)} s`,
  ];
  const skips = Object.entries(s.skips).sort((a, b) => b[1] - a[1]);
  const skipped = skips.reduce((n, [, c]) => n + c, 0);
  if (skipped > 0) {
    lines.push(
      `  skipped ${skipped} line${skipped === 1 ? '' : 's'}: ${skips.map(([r, c]) => `${c} × ${r}`).join('; ')}`,
    );
  }
  return lines.join('\n');
}

export function registerBackfill(program: Command): void {
  program
    .command('backfill')
    .description('ingest what is already in DIRs and exit')
    .argument('<dirs...>', 'directories holding runs')
    .action(async (dirs: string[], _opts: unknown, cmd: Command) => {
      const roots = checkDirs(dirs);
      const global = cmd.optsWithGlobals<GlobalOpts>();
      const { config } = await loadConfig(global.config);
      // the parse worker starts up while this thread opens the database and loads the rules (an idle one never keeps
      // the process alive, should the database be refused)
      const parsing = new (await import('../ingest/threads/parseThread.ts')).ParseThread();
      const target = await openBackfill(dbLocation(global.db, config), config);
      try {
        const t0 = performance.now();
        await runBackfill(
          target.stores,
          config,
          roots,
          async (summary) => {
            const { unreadSummary } = await import('../commands/files.ts');
            const unread = (await unreadSummary(target.contract, roots, { scope: target.scope })).map((l) => `  ${l}`);
            process.stdout.write(
              `${[describeBackfill(summary, (performance.now() - t0) / 1000), ...unread].join('\n')}\n`,
            );
          },
          parsing,
        );
      } finally {
        await target.close();
      }
    });
}
