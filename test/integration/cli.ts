import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { FakeDiscord } from '../fakes/discordServer.ts';
import { tempDir } from '../helpers.ts';

export const BIN = join(import.meta.dirname, '../../bin/rlwatch');

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/rlwatch ARGS` to completion, as a user would. */
export function rlwatch(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): CliResult {
  const r = spawnSync(BIN, args, {
    cwd: opts.cwd,
    env: { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined, ...opts.env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Starts `bin/rlwatch ARGS` in the background (e.g. `start`), collecting its stderr. */
export function rlwatchBackground(args: string[]): { child: ChildProcess; stderr: () => string } {
  const child = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stderr: () => err };
}

export function exited(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done();
    else child.once('exit', () => done());
  });
}

/** `bin/rlwatch start ARGS` in the background, as a user on a host with the fake Discord's token and channel starts
 * it (no other chat platform, no RLWATCH_* settings), collecting its stderr; `kill` ends it for good. */
export function startWithDiscord(
  args: string[],
  fake: FakeDiscord,
): { child: ChildProcess; stderr: () => string; kill: () => Promise<void> } {
  const env = {
    ...process.env,
    RLWATCH_DB: undefined,
    RLWATCH_CONFIG: undefined,
    SLACK_BOT_TOKEN: undefined,
    TELEGRAM_BOT_TOKEN: undefined,
    DISCORD_TOKEN: fake.token,
    DISCORD_API_URL: fake.apiUrl,
    DISCORD_GUILD_ID: fake.guildId,
    DISCORD_CHANNEL_ID: fake.channelId,
  };
  const child = spawn(BIN, ['start', ...args], { cwd: tempDir(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return {
    child,
    stderr: () => err,
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
  };
}
