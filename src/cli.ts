import { Command, InvalidArgumentError } from 'commander';
import { SingleBar } from 'cli-progress';
import { config as loadDotenv } from 'dotenv';
import { readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backfillPipeline, startApp, terminal } from './app.ts';
import { DEMO_RUN, replayDemo } from './demo.ts';
import { renderReplyText } from './chat/console.ts';
import { ackAlert, alertList, muteAlerts, muteList, unmute } from './commands/alerts.ts';
import { rewardHistory } from './commands/rewardHistory.ts';
import { runList } from './commands/runList.ts';
import { runStatus } from './commands/runStatus.ts';
import type { Reply } from './commands/reply.ts';
import { loadConfig, resolveDbPath, UserError } from './config/load.ts';
import type { Config } from './config/schema.ts';
import { backfill, type BackfillSummary } from './ingest/backfill.ts';
import { stderrLog } from './log.ts';
import { Store } from './store/store.ts';

interface GlobalOpts {
  db?: string;
  config?: string;
}

function setup(cmd: Command): { config: Config; dbPath: string } {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const { config } = loadConfig(opts.config);
  return { config, dbPath: resolveDbPath(opts.db, config) };
}

function withStore<T>(cmd: Command, fn: (store: Store, config: Config) => T): T {
  const { config, dbPath } = setup(cmd);
  const store = Store.open(dbPath);
  try {
    return fn(store, config);
  } finally {
    store.close();
  }
}

function print(reply: Reply, json: boolean | undefined): void {
  if (json) process.stdout.write(`${JSON.stringify(reply.data, null, 2)}\n`);
  else process.stdout.write(`${renderReplyText(reply, process.stdout.isTTY === true)}\n`);
}

const positiveInt = (raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
  return n;
};

/** Ingests `roots`, evaluating the rules over the history; prints the summary, then what still fires. */
async function runBackfill(store: Store, config: Config, roots: string[], report: (s: BackfillSummary) => void): Promise<void> {
  const { ingestor, finish } = backfillPipeline(store, config, stderrLog, [terminal()]);
  const bar = process.stderr.isTTY
    ? new SingleBar({ format: 'backfill [{bar}] {percentage}% {value}/{total} MB', stream: process.stderr })
    : null;
  let started = false;
  try {
    const summary = await backfill(ingestor, roots, config.watch, ({ total, done }) => {
      if (!bar) return;
      const mb = (b: number): number => Math.round(b / 1e5) / 10;
      if (!started) bar.start(mb(total), 0);
      started = true;
      bar.update(mb(done));
    });
    if (started) bar?.stop();
    started = false;
    report(summary);
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
    lines.push(`  skipped ${skipped} line${skipped === 1 ? '' : 's'}: ${skips.map(([r, c]) => `${r} ${c}`).join(', ')}`);
  }
  return lines.join('\n');
}

/** Directories named on the command line, checked so that a typo fails with one clear line. */
function checkDirs(dirs: readonly string[]): string[] {
  return dirs.map((d) => {
    const abs = resolve(d);
    let st;
    try {
      st = statSync(abs);
      readdirSync(abs);
    } catch (err) {
      throw new UserError(`${d}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!st.isDirectory()) throw new UserError(`${d}: not a directory`);
    return abs;
  });
}

const program = new Command('rlwatch')
  .description('Watches GRPO/PPO fine-tuning logs, stores every metric in SQLite, and tells you when a run goes wrong.')
  .option('--db <path>', 'SQLite file (default: $RLWATCH_DB, the config\'s db, or ./rlwatch.db)')
  .option('--config <file>', 'YAML config (default: $RLWATCH_CONFIG or ./rlwatch.yaml)')
  .showHelpAfterError('(rlwatch --help lists the commands)');

program
  .command('start')
  .description('watch the configured roots (or DIRs) and ingest new lines as they are written')
  .argument('[dirs...]', 'directories to watch instead of watch.roots')
  .action(async (dirs: string[], _opts: unknown, cmd: Command) => {
    const { config, dbPath } = setup(cmd);
    const roots = dirs.length > 0 ? checkDirs(dirs) : checkDirs(config.watch.roots);
    if (roots.length === 0) {
      throw new UserError('nothing to watch: pass directories (rlwatch start DIR) or set watch.roots in rlwatch.yaml');
    }
    const app = await startApp({ config, dbPath, roots, log: stderrLog });
    stderrLog.info(`watching ${roots.join(', ')} (${config.watch.poll ? 'polling' : 'fs events'}); database ${dbPath}`);
    stderrLog.info(`${app.store.runs.list().length} runs so far; Ctrl-C stops`);
    await new Promise<void>((done) => {
      const stop = (): void => {
        void app.stop().then(done);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });

program
  .command('backfill')
  .description('ingest what is already in DIRs and exit')
  .argument('<dirs...>', 'directories holding runs')
  .action(async (dirs: string[], _opts: unknown, cmd: Command) => {
    const roots = checkDirs(dirs);
    const { config, dbPath } = setup(cmd);
    const store = Store.open(dbPath);
    try {
      const t0 = performance.now();
      await runBackfill(store, config, roots, (summary) =>
        process.stdout.write(`${describeBackfill(summary, (performance.now() - t0) / 1000)}\n`),
      );
    } finally {
      store.close();
    }
  });

program
  .command('runs')
  .description('list the runs: name, path, first/last step, last epoch, records, last update')
  .option('--json', 'print JSON')
  .action((opts: { json?: boolean }, cmd: Command) => withStore(cmd, (store) => print(runList({ store }), opts.json)));

const run = program.command('run').description('one run');
run
  .command('status')
  .description('latest step, epoch and the latest value of each canonical metric')
  .argument('[run]', 'run name (may be left out when there is only one run)')
  .option('--json', 'print JSON')
  .action((name: string | undefined, opts: { json?: boolean }, cmd: Command) =>
    withStore(cmd, (store) => print(runStatus({ store }, { run: name }), opts.json)),
  );
run
  .command('list')
  .description('the same as `rlwatch runs`')
  .option('--json', 'print JSON')
  .action((opts: { json?: boolean }, cmd: Command) => withStore(cmd, (store) => print(runList({ store }), opts.json)));

program
  .command('reward')
  .description('reward (or any metric) over time')
  .command('history')
  .description('the series of one metric, steps ascending')
  .argument('[run]', 'run name (may be left out when there is only one run)')
  .option('--metric <name>', 'metric to show', 'reward')
  .option('--last <n>', 'only the newest N points', positiveInt)
  .option('--json', 'print JSON')
  .action((name: string | undefined, opts: { metric: string; last?: number; json?: boolean }, cmd: Command) =>
    withStore(cmd, (store) =>
      print(rewardHistory({ store }, { run: name, metric: opts.metric, last: opts.last }), opts.json),
    ),
  );

program
  .command('demo')
  .description('replay the bundled sample GRPO run into a temporary directory while watching it: alerts fire and resolve live')
  .option('--pace <ms>', 'milliseconds between steps', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number of milliseconds');
    return n;
  }, 100)
  .action(async (opts: { pace: number }, cmd: Command) => {
    const { config, dbPath } = setup(cmd);
    const runDir = await replayDemo({ config, dbPath, paceMs: opts.pace, log: stderrLog });
    withStore(cmd, (store) => {
      const color = process.stdout.isTTY === true;
      process.stdout.write(`\n${renderReplyText(runStatus({ store }, { run: DEMO_RUN }), color)}\n\n`);
      process.stdout.write(`${renderReplyText(alertList({ store }, { run: DEMO_RUN, all: true }), color)}\n\n`);
    });
    const db = dbPath === resolve('rlwatch.db') ? '' : ` --db ${dbPath}`;
    process.stdout.write(
      `The replayed run is in ${runDir}; its data is in ${dbPath}.\n` +
        `Try: bin/rlwatch reward history ${DEMO_RUN} --metric frac_zero_std${db}   bin/rlwatch alerts --all${db}\n`,
    );
  });

const user = (): string => process.env.USER ?? process.env.USERNAME ?? 'cli';

program
  .command('alerts')
  .description('firing alerts (all incidents with --all), newest first')
  .argument('[run]', 'only this run')
  .option('--run <run>', 'only this run')
  .option('--all', 'resolved incidents too')
  .option('--json', 'print JSON')
  .action((name: string | undefined, opts: { run?: string; all?: boolean; json?: boolean }, cmd: Command) =>
    withStore(cmd, (store) => print(alertList({ store }, { run: opts.run ?? name, all: opts.all }), opts.json)),
  );

program
  .command('ack')
  .description('acknowledge an alert: no more repeats until it resolves')
  .argument('<id>', 'alert id', positiveInt)
  .option('--comment <text>', 'what you are doing about it')
  .option('--by <name>', 'who acks (default: $USER)')
  .option('--json', 'print JSON')
  .action((id: number, opts: { comment?: string; by?: string; json?: boolean }, cmd: Command) =>
    withStore(cmd, (store) => print(ackAlert({ store }, { id, by: opts.by ?? user(), comment: opts.comment }), opts.json)),
  );

program
  .command('mute')
  .description('record but do not post alerts matching run, rule and severity (any may be left out)')
  .requiredOption('--for <duration>', 'how long, e.g. 30m, 2h, 1d')
  .option('--run <run>', 'run name or glob')
  .option('--rule <id>', 'rule id')
  .option('--severity <s>', 'info, warning or critical')
  .option('--reason <text>', 'why')
  .option('--by <name>', 'who mutes (default: $USER)')
  .option('--json', 'print JSON')
  .action((opts: { for: string; run?: string; rule?: string; severity?: string; reason?: string; by?: string; json?: boolean }, cmd: Command) =>
    withStore(cmd, (store) => print(muteAlerts({ store }, { ...opts, by: opts.by ?? user() }), opts.json)),
  );

program
  .command('mutes')
  .description('the mutes in force')
  .option('--json', 'print JSON')
  .action((opts: { json?: boolean }, cmd: Command) => withStore(cmd, (store) => print(muteList({ store }), opts.json)));

program
  .command('unmute')
  .description('end a mute now')
  .argument('<id>', 'mute id', positiveInt)
  .option('--json', 'print JSON')
  .action((id: number, opts: { json?: boolean }, cmd: Command) => withStore(cmd, (store) => print(unmute({ store }, { id }), opts.json)));

export async function main(argv: string[]): Promise<void> {
  loadDotenv({ quiet: true });
  // `rlwatch alerts | head` closes the pipe early: that is the reader's choice, not an error
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof UserError) {
      process.stderr.write(`rlwatch: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`rlwatch: internal error: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    }
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv);
