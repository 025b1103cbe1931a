/**
 * The CLI's setting-up commands, for the first hour with rlwatch: `init` (config and .env), `doctor` (what `start`
 * depends on), `notify --test` (a card to every chat target), `route test` (where an alert goes) and `demo`.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { relative, resolve, sep } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { stderrLog } from '../lib/log.ts';
import { INIT_HELP } from '../platforms/index.ts';
import { renderReplyText } from '../platforms/terminal/terminal.ts';
import { type GlobalOpts, setup, withStore } from './common.ts';

export function registerRouteTest(program: Command): void {
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
        import('../app/start.ts'),
        import('../app/routeTest.ts'),
      ]);
      const r = routeTest(config, platformsFromEnv(config), run, severity, opts.rule);
      process.stdout.write(`${opts.json ? JSON.stringify(r, null, 2) : describeRoute(r)}\n`);
    });
}

/** How to type rlwatch again from here: `bin/rlwatch` in a checkout, `npx rlwatch` from a project's node_modules,
 * else `rlwatch` (on the PATH). */
function invokedAs(): string {
  const script = relative(process.cwd(), process.argv[1] ?? '')
    .split(sep)
    .join('/');
  if (script === 'bin/rlwatch') return script;
  return script.startsWith('node_modules/') ? 'npx rlwatch' : 'rlwatch';
}

export function registerDemo(program: Command): void {
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
        import('../app/demo.ts'),
        import('../commands/runStatus.ts'),
        import('../commands/alerts.ts'),
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
}

export function registerNotify(program: Command): void {
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
      const { describeResults, notifyTest } = await import('../app/notifyTest.ts');
      const results = await notifyTest({ config, log: stderrLog, only });
      // a bot's client may hold sockets open a moment after its stop: the answer given, the process ends
      process.stdout.write(`${describeResults(results)}\n`, () => process.exit(results.every((r) => r.ok) ? 0 : 1));
    });
}

export function registerInit(program: Command): void {
  const initCmd = program
    .command('init')
    .description('write a commented rlwatch.yaml, and a .env with the variables of the chat platforms named');
  // one flag per platform init offers (named in src/platforms/, like every platform)
  for (const [id, help] of Object.entries(INIT_HELP)) initCmd.option(`--${id}`, help);
  initCmd
    .option('--dir <dir>', 'where to write them', '.')
    .option('--force', 'replace files that exist')
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      const { INIT_PLATFORMS, init } = await import('../app/init.ts');
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
}

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description(
      'check what start depends on (config, database, watch roots, each chat platform) and say how to fix each failure',
    )
    .option('--json', 'print the checks as JSON: [{check, status, detail, fix}]')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const global = cmd.optsWithGlobals<GlobalOpts>();
      const { describeChecks, doctor } = await import('../app/doctor.ts');
      const checks = await doctor({ config: global.config, db: global.db });
      const text = opts.json ? JSON.stringify(checks, null, 2) : describeChecks(checks);
      // an HTTP client may keep an idle connection open a while: the answer given, the process ends
      process.stdout.write(`${text}\n`, () => process.exit(checks.some((c) => c.status === 'fail') ? 1 : 0));
    });
}
