import { Command, InvalidArgumentError } from 'commander';
import { config as loadDotenv } from 'dotenv';
import { readdirSync, readFileSync, type Stats, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderReplyText, terminal } from './platforms/terminal/terminal.ts';
import { INIT_HELP } from './platforms/index.ts';
import { COMMANDS, usage, type Args, type CommandSpec } from './interact/registry.ts';
import type { Reply } from './render/reply.ts';
import { loadConfig, resolveDbPath } from './config/load.ts';
import { UserError } from './lib/errors.ts';
import type { Config } from './config/schema.ts';
import type { BackfillStores, PlatformSettings } from './app/start.ts';
import type { BackfillSummary } from './ingest/backfill.ts';
import type { ParseThread } from './ingest/threads/parseThread.ts';
import { silentLog, stderrLog } from './lib/log.ts';
import { PACKAGE_ROOT } from './lib/paths.ts';
import { interact } from './interact/interaction.ts';
import { databaseError } from './store/dbErrors.ts';
import type { StoreContract } from './store/contract.ts';
import { dbLocation, isPostgresUrl, openStore } from './store/open.ts';
import { redactUrl } from './store/postgres/url.ts';
import { SqliteAsyncStore } from './store/sqlite/sqliteAsync.ts';
import { Store } from './store/sqlite/store.ts';
import { registerMigrate } from './app/migrate.ts';

// The pipeline (app, ingest, engine, watcher), the demo and the progress bar are imported where `start`,
// `backfill` and `demo` use them: the reading commands (`runs`, `run status`, ...) start without them.

interface GlobalOpts {
  db?: string;
  config?: string;
}

async function setup(cmd: Command): Promise<{ config: Config; dbPath: string }> {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const { config } = await loadConfig(opts.config);
  return { config, dbPath: resolveDbPath(opts.db, config) };
}

/** The store `--db` names (SQLite or PostgreSQL), for a command that reads it or changes an alert or a mute. */
async function withStore<T>(cmd: Command, fn: (store: StoreContract, config: Config) => Promise<T>): Promise<T> {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const { config } = await loadConfig(opts.config);
  const store = await openStore(dbLocation(opts.db, config), { reading: true });
  try {
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

async function print(reply: Reply, json: boolean | undefined): Promise<void> {
  if (json) process.stdout.write(`${JSON.stringify(await reply.data, null, 2)}\n`);
  else process.stdout.write(`${renderReplyText(reply, process.stdout.isTTY === true)}\n`);
}

/** What `backfill` writes through: a SQLite file's one writer, or on PostgreSQL this host's live store as a watcher
 * opens it (its runs named under the host's prefix) and the contract its outbox is delivered from. */
async function openBackfill(db: string, config: Config) {
  if (!isPostgresUrl(db)) {
    const store = Store.openWriter(db, 'backfill');
    const close = async (): Promise<void> => store.close();
    return { stores: store, contract: new SqliteAsyncStore(store), scope: undefined, close };
  }
  const { store, prefix } = await (await import('./app/watcherRole.ts')).openWatcherStore(config, db);
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
  ] = await Promise.all([import('./app/start.ts'), import('./ingest/backfill.ts'), import('cli-progress')]);
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

/** Directories named on the command line, checked so that a typo fails with one clear line. */
function checkDirs(dirs: readonly string[]): string[] {
  return dirs.map((d) => {
    const abs = resolve(d);
    let st: Stats;
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

type Role = 'all' | 'bot' | 'watcher';

/** `--role`, checked against the store `--db` names: on SQLite one process watches and delivers. */
function checkRole(role: string, onPg: boolean): Role {
  if (role !== 'all' && role !== 'bot' && role !== 'watcher') {
    throw new UserError(`--role ${role}: expected all, bot or watcher`);
  }
  if (!onPg && role !== 'all') {
    throw new UserError(`--role ${role} needs a PostgreSQL --db: on SQLite one \`rlwatch start\` watches and delivers`);
  }
  return role;
}

/** The directories `start` watches: those named, else `watch.roots`. */
function rootsOf(dirs: readonly string[], config: Config): string[] {
  const roots = dirs.length > 0 ? checkDirs(dirs) : checkDirs(config.watch.roots);
  if (roots.length === 0) {
    throw new UserError('nothing to watch: pass directories (rlwatch start DIR) or set watch.roots in rlwatch.yaml');
  }
  return roots;
}

/** The chat platforms configured in `config` and the environment (settings by id); `delivering`: this process posts
 * alerts, so none configured is worth a line. */
async function configuredPlatforms(config: Config, delivering: boolean): Promise<PlatformSettings> {
  const platforms = (await import('./app/start.ts')).platformsFromEnv(config);
  if (delivering && Object.keys(platforms).length === 0) {
    stderrLog.info('no chat platform configured (see README): alerts go to the terminal only');
  }
  return platforms;
}

/** Resolves when the process is told to stop (null), or when a chat platform refuses its token for good. */
function untilStopped(failure: Promise<Error>): Promise<Error | null> {
  return new Promise<Error | null>((done) => {
    process.once('SIGINT', () => done(null));
    process.once('SIGTERM', () => done(null));
    void failure.then(done);
  });
}

/**
 * `start` on PostgreSQL. `--role bot` delivers the outbox and answers chat while it holds the bot lock; `--role
 * watcher` watches this host's runs into the database; `--role all` does both in one process (it delivers while it
 * wins the bot lock, and stands by otherwise).
 */
async function startOnPg(role: Role, dirs: readonly string[], config: Config, db: string): Promise<void> {
  const roots = role === 'bot' ? [] : rootsOf(dirs, config);
  const [{ startBot }, { startWatcher }] = await Promise.all([import('./app/bot.ts'), import('./app/watcherRole.ts')]);
  const watcher = role === 'bot' ? null : await startWatcher({ config, db, roots, log: stderrLog });
  if (watcher) stderrLog.info(`watching ${roots.join(', ')} as ${watcher.prefix}/...; database ${redactUrl(db)}`);
  // only the bot reads the chat settings: it routes what every watcher queues
  const bot =
    role === 'watcher'
      ? null
      : await startBot({ config, db, log: stderrLog, platforms: await configuredPlatforms(config, true) });
  const refused = await untilStopped(bot?.failure ?? new Promise<Error>(() => {}));
  if (refused) process.stderr.write(`rlwatch: ${refused.message}\n`);
  await Promise.all([bot?.stop(), watcher?.stop()]);
  process.exit(refused ? 1 : 0);
}

/** The version in package.json: what a bug report quotes. */
function version(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

const program = new Command('rlwatch')
  .description('Watches GRPO/PPO fine-tuning logs, stores every metric in SQLite, and tells you when a run goes wrong.')
  .version(version(), '-V, --version', 'print the version')
  .option('--db <path>', "SQLite file or postgres:// URL (default: $RLWATCH_DB, the config's db, or ./rlwatch.db)")
  .option('--config <file>', 'YAML config (default: $RLWATCH_CONFIG or ./rlwatch.yaml)')
  .showHelpAfterError('(rlwatch --help lists the commands)');

program
  .command('start')
  .description('watch the configured roots (or DIRs) and ingest new lines as they are written')
  .argument('[dirs...]', 'directories to watch instead of watch.roots')
  .option(
    '--role <role>',
    "all: watch and deliver; bot: only deliver and answer chat, on PostgreSQL; watcher: only watch this host's " +
      'runs, on PostgreSQL',
    'all',
  )
  .action(async (dirs: string[], opts: { role: string }, cmd: Command) => {
    const global = cmd.optsWithGlobals<GlobalOpts>();
    const { config } = await loadConfig(global.config);
    const db = dbLocation(global.db, config);
    const role = checkRole(opts.role, isPostgresUrl(db));
    if (isPostgresUrl(db)) return startOnPg(role, dirs, config, db);
    const roots = rootsOf(dirs, config);
    const { startApp } = await import('./app/start.ts');
    const platforms = await configuredPlatforms(config, true);
    const app = await startApp({ config, dbPath: db, roots, log: stderrLog, platforms });
    stderrLog.info(`watching ${roots.join(', ')} (${config.watch.poll ? 'polling' : 'fs events'}); database ${db}`);
    stderrLog.info(`${app.store.runs.list().length} runs so far; Ctrl-C stops`);
    // Runs until a signal, or until a chat platform refuses the token: then it stops at once, with one line
    // saying why (an alerting tool that cannot alert should not look as if it were watching).
    const refused = await untilStopped(app.failure);
    if (refused) process.stderr.write(`rlwatch: ${refused.message}\n`);
    await app.stop();
    // A request in flight to an unreachable platform (up to its timeout) must not hold the process: the rows
    // it carried are still pending in the database and go out on the next start.
    process.exit(refused ? 1 : 0);
  });

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
    const parsing = new (await import('./ingest/threads/parseThread.ts')).ParseThread();
    const target = await openBackfill(dbLocation(global.db, config), config);
    try {
      const t0 = performance.now();
      await runBackfill(
        target.stores,
        config,
        roots,
        async (summary) => {
          const { unreadSummary } = await import('./commands/files.ts');
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

program
  .command('runs')
  .description('list the runs (the same as `rlwatch run list`)')
  .option('--json', 'print JSON')
  .action((opts: { json?: boolean }, cmd: Command) =>
    withStore(cmd, async (store) => {
      const { runList } = await import('./commands/runList.ts');
      await print(await runList({ store, local: true }), opts.json);
    }),
  );

const outbox = program
  .command('outbox')
  .description('notifications not delivered yet: pending, and set aside because a target refused them')
  .option('--json', 'print JSON')
  .action((opts: { json?: boolean }, cmd: Command) =>
    withStore(cmd, async (store) => {
      const { outboxList } = await import('./commands/outbox.ts');
      await print(await outboxList({ store }), opts.json);
    }),
  );
outbox
  .command('retry')
  .description('put a set-aside notification back in line')
  .argument('<id>', 'the outbox row (see `rlwatch outbox`)', (v) => {
    if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a row number');
    return Number(v);
  })
  .option('--json', 'print JSON')
  .action((id: number, opts: { json?: boolean }, cmd: Command) =>
    withStore(cmd, async (store) => {
      const { outboxRetry } = await import('./commands/outbox.ts');
      await print(await outboxRetry({ store }, { id }), opts.json);
    }),
  );

program
  .command('route')
  .description('where alerts go')
  .command('test')
  .description(
    'the destinations an alert of RUN with SEVERITY goes to (platform, channel, who it notifies, quiet hours), ' +
      'as the process that delivers routes it with this config and environment',
  )
  .argument('<run>', 'the run name (with its host prefix on PostgreSQL: gpu-a/grpo-7b)')
  .argument('<severity>', 'info, warning or critical')
  .option('--rule <rule>', "the alert's rule: checked to watch RUN at SEVERITY")
  .option('--json', 'print JSON')
  .action(async (run: string, severity: string, opts: { rule?: string; json?: boolean }, cmd: Command) => {
    const { config } = await setup(cmd);
    const [{ platformsFromEnv }, { describeRoute, routeTest }] = await Promise.all([
      import('./app/start.ts'),
      import('./app/routeTest.ts'),
    ]);
    const r = routeTest(config, platformsFromEnv(config), run, severity, opts.rule);
    process.stdout.write(`${opts.json ? JSON.stringify(r, null, 2) : describeRoute(r)}\n`);
  });

const user = (): string => process.env.USER ?? process.env.USERNAME ?? 'cli';

/** Adds a command of the shared tree: positional words are read as chat text is, flags by name. */
function addShared(parent: Command, spec: CommandSpec): void {
  const cmd = parent.command(spec.path[spec.path.length - 1] as string).description(spec.description);
  const positional = spec.options.filter((o) => o.positional);
  const takesWords = spec.options.length > 0;
  if (takesWords) {
    // the words are read as a chat slash command's `/mute grpo-7b 2h`; every option also has its --flag
    cmd.argument(
      '[words...]',
      `${usage(spec, '')
        .split(' ')
        .slice(spec.path.length + 1)
        .join(' ')}, as in chat`,
    );
    cmd.usage(`[options] ${positional.map((o) => (o.required ? `<${o.name}>` : `[${o.name}]`)).join(' ')}`.trim());
  }
  for (const o of takesWords ? spec.options : []) {
    const flag = o.flag ?? o.name;
    cmd.option(o.type === 'boolean' ? `--${flag}` : `--${flag} <${o.name}>`, o.description);
  }
  if (spec.access === 'write') cmd.option('--by <name>', 'who (default: $USER)');
  if (spec.attaches) cmd.option('--markdown <file>', 'also write the full report (Markdown) to this file');
  cmd.option('--json', 'print JSON');
  cmd.action(async (...params: unknown[]) => {
    const self = params[params.length - 1] as Command;
    const words = takesWords ? (params[0] as string[]) : [];
    const opts = self.opts<Record<string, string | boolean | undefined>>();
    const args: Args = {};
    for (const o of spec.options) {
      const v = opts[o.flag ?? o.name];
      if (v !== undefined) args[o.name] = v;
    }
    await withStore(self, async (store, config) => {
      // the CLI is its own rights check (whoever can open the database) and shows its own errors (main)
      const answer = await interact(
        { words: [...spec.path, ...words], args },
        {
          store,
          config,
          log: silentLog,
          user: String(opts.by ?? user()),
          userName: String(opts.by ?? user()),
          mayWrite: () => true,
          rightsHint: '',
          prefix: 'rlwatch ',
          local: true,
        },
      );
      if (!answer.ok) throw answer.error ?? new UserError(answer.message);
      if (typeof opts.markdown === 'string' && answer.reply.attachment) {
        writeFileSync(opts.markdown, answer.reply.attachment.content);
      }
      await print(answer.reply, opts.json === true);
    });
  });
}

const groups = new Map<string, Command>();
for (const spec of COMMANDS) {
  if (spec.path.length === 1) {
    addShared(program, spec);
    continue;
  }
  const [group] = spec.path;
  let parent = groups.get(group);
  if (!parent) {
    parent = program.command(group).description(group === 'run' ? 'one run' : `${group} over time`);
    groups.set(group, parent);
  }
  addShared(parent, spec);
}

program
  .command('demo')
  .description(
    'replay the bundled sample GRPO run into a temporary directory while watching it: alerts fire and resolve live',
  )
  .option(
    '--pace <ms>',
    'milliseconds between steps',
    (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number of milliseconds');
      return n;
    },
    100,
  )
  .option('--no-chat', 'keep the alerts in the terminal, even with a chat platform configured')
  .action(async (opts: { pace: number; chat: boolean }, cmd: Command) => {
    const { config, dbPath } = await setup(cmd);
    const [{ DEMO_RUN, replayDemo }, { runStatus }, { alertList }] = await Promise.all([
      import('./app/demo.ts'),
      import('./commands/runStatus.ts'),
      import('./commands/alerts.ts'),
    ]);
    const runDir = await replayDemo({ config, dbPath, paceMs: opts.pace, log: stderrLog, chat: opts.chat });
    await withStore(cmd, async (store) => {
      const color = process.stdout.isTTY === true;
      process.stdout.write(
        `\n${renderReplyText(await runStatus({ store, local: true }, { run: DEMO_RUN }), color)}\n\n`,
      );
      process.stdout.write(
        `${renderReplyText(await alertList({ store, local: true }, { run: DEMO_RUN, all: true }), color)}\n\n`,
      );
    });
    const db = dbPath === resolve('rlwatch.db') ? '' : ` --db ${dbPath}`;
    const self = invokedAs();
    process.stdout.write(
      `The replayed run is in ${runDir}; its data is in ${dbPath}.\n` +
        `Try: ${self} reward history ${DEMO_RUN} --metric frac_zero_std${db}   ${self} alerts --all${db}\n`,
    );
  });

program
  .command('notify')
  .description(
    'send a test card (with a chart) to every configured chat target, or those of PLATFORM, and say how each went',
  )
  .argument('[platform]', 'only this platform (its key in rlwatch.yaml)')
  .option('--test', 'the test card (the one thing notify sends)')
  .action(async (only: string | undefined, opts: { test?: boolean }, cmd: Command) => {
    if (!opts.test) throw new UserError('notify sends only the test card: rlwatch notify --test [PLATFORM]');
    const { config } = await setup(cmd);
    const { describeResults, notifyTest } = await import('./app/notifyTest.ts');
    const results = await notifyTest({ config, log: stderrLog, only });
    // a bot's client may hold sockets open a moment after its stop: the answer given, the process ends
    process.stdout.write(`${describeResults(results)}\n`, () => process.exit(results.every((r) => r.ok) ? 0 : 1));
  });

const initCmd = program
  .command('init')
  .description('write a commented rlwatch.yaml, and a .env with the variables of the chat platforms named');
// one flag per platform init offers (named in src/platforms/, like every platform)
for (const [id, help] of Object.entries(INIT_HELP)) initCmd.option(`--${id}`, help);
initCmd
  .option('--dir <dir>', 'where to write them', '.')
  .option('--force', 'replace files that exist')
  .action(async (opts: Record<string, string | boolean | undefined>) => {
    const { INIT_PLATFORMS, init } = await import('./app/init.ts');
    const { createInterface } = await import('node:readline/promises');
    // a terminal is asked which platforms (none named) and whether to replace a file; a script is asked nothing
    const rl = process.stdin.isTTY ? createInterface({ input: process.stdin, output: process.stdout }) : null;
    try {
      const { lines, kept } = await init({
        dir: String(opts.dir),
        platforms: INIT_PLATFORMS.filter((p) => opts[p] === true),
        force: opts.force === true,
        ...(rl ? { ask: (q: string) => rl.question(q) } : {}),
      });
      process.stdout.write(`${lines.join('\n')}\n`);
      if (kept.length > 0) process.exitCode = 1;
    } finally {
      rl?.close();
    }
  });

program
  .command('doctor')
  .description(
    'check what start depends on (config, database, watch roots, each chat platform) and say how to fix each failure',
  )
  .option('--json', 'print the checks as JSON: [{check, status, detail, fix}]')
  .action(async (opts: { json?: boolean }, cmd: Command) => {
    const global = cmd.optsWithGlobals<GlobalOpts>();
    const { describeChecks, doctor } = await import('./app/doctor.ts');
    const checks = await doctor({ config: global.config, db: global.db });
    const text = opts.json ? JSON.stringify(checks, null, 2) : describeChecks(checks);
    // an HTTP client may keep an idle connection open a while: the answer given, the process ends
    process.stdout.write(`${text}\n`, () => process.exit(checks.some((c) => c.status === 'fail') ? 1 : 0));
  });

/** How to type rlwatch again from here: `bin/rlwatch` in a checkout, `npx rlwatch` from a project's node_modules,
 * else `rlwatch` (on the PATH). */
function invokedAs(): string {
  const script = relative(process.cwd(), process.argv[1] ?? '')
    .split(sep)
    .join('/');
  if (script === 'bin/rlwatch') return script;
  return script.startsWith('node_modules/') ? 'npx rlwatch' : 'rlwatch';
}

registerMigrate(program);

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
    const known = err instanceof UserError ? err : databaseError(err, 'the database');
    if (known) {
      process.stderr.write(`rlwatch: ${known.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`rlwatch: internal error: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    }
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv);
