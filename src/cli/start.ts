/**
 * `rlwatch start`: watches the roots and delivers alerts, on SQLite in one process, on PostgreSQL in the role asked
 * (watcher, bot, or both), until a signal or a chat platform refusing its token.
 */
import type { Command } from 'commander';
import type { PlatformSettings } from '../app/start.ts';
import { loadConfig } from '../app/loadConfig.ts';
import type { Config } from '../config/schema.ts';
import { UserError } from '../lib/errors.ts';
import { stderrLog } from '../lib/log.ts';
import { dbLocation, isPostgresUrl } from '../store/open.ts';
import { redactUrl } from '../store/postgres/url.ts';
import { checkDirs, type GlobalOpts } from './common.ts';

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
  const platforms = (await import('../app/start.ts')).platformsFromEnv(config);
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
  const [{ startBot }, { startWatcher }] = await Promise.all([
    import('../app/bot.ts'),
    import('../app/watcherRole.ts'),
  ]);
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

export function registerStart(program: Command): void {
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
      const { startApp } = await import('../app/start.ts');
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
}
