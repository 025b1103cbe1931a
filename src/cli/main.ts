/**
 * The `rlwatch` command line (commander): the program and its global options, each command registered from the
 * module of its group, and `main`, which bin/rlwatch calls and which turns a UserError into one line on stderr.
 */
import { Command } from 'commander';
import { config as loadDotenv } from 'dotenv';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerMigrate } from '../app/migrate.ts';
import { UserError } from '../lib/errors.ts';
import { PACKAGE_ROOT } from '../lib/paths.ts';
import { databaseError } from '../store/dbErrors.ts';
import { registerBackfill } from './backfill.ts';
import { registerOutbox, registerRuns, registerShared } from './read.ts';
import { registerDemo, registerDoctor, registerInit, registerNotify, registerRouteTest } from './setup.ts';
import { registerStart } from './start.ts';

// The pipeline (app, ingest, engine, watcher), the demo and the progress bar are imported where `start`,
// `backfill` and `demo` use them: the reading commands (`runs`, `run status`, ...) start without them.

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

// in the order `rlwatch --help` lists them
registerStart(program);
registerBackfill(program);
registerRuns(program);
registerOutbox(program);
registerRouteTest(program);
registerShared(program);
registerDemo(program);
registerNotify(program);
registerInit(program);
registerDoctor(program);
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
