import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discord } from '../../src/platforms/discord/index.ts';
import { slack } from '../../src/platforms/slack/index.ts';
import { learningLine, tempDir } from '../helpers.ts';
import { rlwatch } from './cli.ts';

/** Every platform's variables, so that none of the developer's leaks into a case. */
const PLATFORM_VARS = /^(DISCORD|SLACK|TELEGRAM|SMTP|EMAIL|WEBHOOK|TEAMS|MATTERMOST|FEISHU)_/;
const bare = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.keys(process.env)
      .filter((k) => PLATFORM_VARS.test(k))
      .map((k) => [k, undefined]),
  );

/** `rlwatch start` on a folder holding one run, with `env` and (when given) an rlwatch.yaml, in a fresh folder. */
function start(env: Record<string, string>, yaml?: string) {
  const dir = tempDir();
  mkdirSync(join(dir, 'runs', 'grpo'), { recursive: true });
  writeFileSync(join(dir, 'runs', 'grpo', 'learning.log'), `${learningLine(1)}\n`);
  const args = ['start', join(dir, 'runs'), '--db', join(dir, 'rlwatch.db')];
  if (yaml !== undefined) {
    // a hook URL is a secret: a config holding one readable by others draws a warning
    writeFileSync(join(dir, 'rlwatch.yaml'), yaml, { mode: 0o600 });
    args.push('--config', join(dir, 'rlwatch.yaml'));
  }
  const r = rlwatch(args, { cwd: dir, env: { ...bare(), ...env } });
  return { ...r, dbMade: existsSync(join(dir, 'rlwatch.db')) };
}

/** It stopped at once, with one line naming what to set, before watching anything. */
function refused(r: ReturnType<typeof start>, line: string): void {
  expect(r.stderr).toBe(`rlwatch: ${line}\n`);
  expect(r.stdout).toBe('');
  expect(r.status).toBe(1);
  expect(r.dbMade).toBe(false);
}

describe('start with a platform that has nowhere to post', () => {
  it('Discord: a token and no channel', () => {
    refused(
      start({ DISCORD_TOKEN: 'x' }),
      'DISCORD_TOKEN is set but no channel: set DISCORD_CHANNEL_ID or discord.channel',
    );
  });

  it('Slack: a bot token and no channel', () => {
    refused(
      start({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1' }),
      'SLACK_BOT_TOKEN is set but no channel: set SLACK_CHANNEL_ID or slack.channel',
    );
  });

  it('Telegram: a bot token and no chat', () => {
    refused(
      start({ TELEGRAM_BOT_TOKEN: '1:x' }),
      'telegram.channel (or TELEGRAM_CHAT_ID) is needed: the chat alerts go to',
    );
  });

  it('email: an SMTP server and no recipient', () => {
    refused(
      start({ SMTP_HOST: '127.0.0.1', EMAIL_FROM: 'rlwatch@example.com' }),
      'email.channel (or EMAIL_TO) is needed: the address alerts go to',
    );
  });

  it.each(['webhook', 'teams', 'mattermost', 'feishu'])('%s: named URLs and none chosen for alerts', (platform) => {
    const envName = platform === 'webhook' ? 'WEBHOOK_URL' : `${platform.toUpperCase()}_WEBHOOK_URL`;
    refused(
      start({}, `${platform}:\n  urls:\n    ops: https://hooks.example.com/x\n`),
      `${platform}.urls is set but no channel: set ${envName} or ${platform}.channel (one of its names)`,
    );
  });

  it('a route is somewhere to post: a token with routes and no default channel is taken', () => {
    const routes = { routes: [{ runs: 'grpo*', channel: '123' }] };
    expect(discord.settings(discord.section.parse(routes), { DISCORD_TOKEN: 'x' })).toMatchObject({
      channel: undefined,
    });
    expect(slack.settings(slack.section.parse(routes), { SLACK_BOT_TOKEN: 'x' })).toMatchObject({ channel: undefined });
  });
});
