/**
 * `rlwatch demo` with chat configured: its alerts reach the configured platforms as `start`'s would (the real
 * discord.js and Bolt clients against the local fakes), nothing is left in the outbox for a later `start` to post,
 * and `--no-chat` keeps them in the terminal.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { startFakeSlack, type FakeSlack } from '../fakes/slackServer.ts';
import { tempDir } from '../helpers.ts';
import { BIN, type CliResult } from './cli.ts';

/** Every platform's variables, so that none of the developer's leaks into a case. */
const PLATFORM_VARS = /^(DISCORD|SLACK|TELEGRAM|SMTP|EMAIL|WEBHOOK|TEAMS|MATTERMOST|FEISHU)_/;
const bare = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.keys(process.env)
      .filter((k) => PLATFORM_VARS.test(k))
      .map((k) => [k, undefined]),
  );

/** `bin/rlwatch ARGS` in `cwd`, in the background: the fakes answer from this process meanwhile. */
function rlwatch(args: string[], cwd: string, env: Record<string, string>): Promise<CliResult> {
  const child = spawn(BIN, args, {
    cwd,
    env: { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined, ...bare(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout, stderr })));
}

const chatEnv = (discord: FakeDiscord, slack: FakeSlack) => ({
  DISCORD_TOKEN: discord.token,
  DISCORD_API_URL: discord.apiUrl,
  DISCORD_GUILD_ID: discord.guildId,
  DISCORD_CHANNEL_ID: discord.channelId,
  SLACK_BOT_TOKEN: slack.botToken,
  SLACK_APP_TOKEN: slack.appToken,
  SLACK_API_URL: slack.apiUrl,
  SLACK_CHANNEL_ID: slack.channelId,
});

/** The rules the terminal said fired, from its `[SEVERITY] rule FIRING` lines. */
const firedInTerminal = (stdout: string): string[] => [
  ...new Set([...stdout.matchAll(/^\[(?:CRITICAL|WARNING)\] (\w+) FIRING/gm)].map((m) => m[1]!)),
];

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

describe('rlwatch demo with chat configured', () => {
  it('says so first, posts each alert the terminal shows to Discord and Slack, and leaves nothing waiting in the outbox', async () => {
    const [discord, slack] = await Promise.all([startFakeDiscord(), startFakeSlack()]);
    open.push(discord, slack);
    const dir = tempDir();
    const db = join(dir, 'demo.db');
    const r = await rlwatch(['demo', '--pace', '5', '--db', db], dir, chatEnv(discord, slack));
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stderr.split('\n');
    expect(lines.findIndex((l) => l.includes("the demo's alerts go to discord, slack too"))).toBeLessThan(
      lines.findIndex((l) => l.includes('replaying 300 steps')),
    );

    const fired = firedInTerminal(r.stdout);
    expect(fired.length).toBeGreaterThan(0);
    const cards = discord.channelMessages().map((m) => String(m.embeds[0]?.title ?? ''));
    const posts = [...slack.messages.values()]
      .filter((m) => m.channel === slack.channelId && m.threadTs === undefined)
      .map((m) => m.text);
    for (const rule of fired) {
      const card = new RegExp(`· ${rule} (firing|resolved) · grpo-demo`);
      expect(
        cards.filter((t) => card.test(t)),
        rule,
      ).toHaveLength(1);
      expect(
        posts.filter((t) => card.test(t)),
        rule,
      ).toHaveLength(1);
    }

    // a later `start` on this database finds nothing of the demo's still to post
    const store = new Database(db, { readonly: true });
    try {
      expect(store.prepare('SELECT count(*) FROM outbox WHERE done_at IS NULL').pluck().get()).toBe(0);
    } finally {
      store.close();
    }
  }, 90_000);

  it('a platform refusing its token: the others get the alerts, and its own are set aside rather than left for a later start', async () => {
    const [discord, slack] = await Promise.all([startFakeDiscord(), startFakeSlack()]);
    open.push(discord, slack);
    const dir = tempDir();
    const db = join(dir, 'demo.db');
    const r = await rlwatch(['demo', '--pace', '5', '--db', db], dir, {
      ...chatEnv(discord, slack),
      SLACK_BOT_TOKEN: 'xoxb-not-the-fakes',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('Slack refused the token (invalid_auth)');
    const fired = firedInTerminal(r.stdout);
    expect(fired.length).toBeGreaterThan(0);
    const cards = discord.channelMessages().map((m) => String(m.embeds[0]?.title ?? ''));
    for (const rule of fired)
      expect(
        cards.some((t) => t.includes(`· ${rule} `)),
        rule,
      ).toBe(true);
    expect(slack.messages.size).toBe(0);

    const store = new Database(db, { readonly: true });
    try {
      const left = store.prepare('SELECT target, dead_reason FROM outbox WHERE done_at IS NULL').all() as Array<{
        target: string;
        dead_reason: string | null;
      }>;
      expect(left.length).toBeGreaterThan(0);
      for (const row of left)
        expect(row).toEqual({
          target: `slack:${slack.channelId}`,
          dead_reason: 'the demo ended before it was delivered',
        });
      expect(r.stderr).toContain(`${left.length} of the demo's notifications did not reach chat: set aside`);
    } finally {
      store.close();
    }
  }, 90_000);

  it('--no-chat keeps the alerts in the terminal: nothing reaches either platform', async () => {
    const [discord, slack] = await Promise.all([startFakeDiscord(), startFakeSlack()]);
    open.push(discord, slack);
    const dir = tempDir();
    const r = await rlwatch(
      ['demo', '--no-chat', '--pace', '5', '--db', join(dir, 'demo.db')],
      dir,
      chatEnv(discord, slack),
    );
    expect(r.status, r.stderr).toBe(0);
    expect(firedInTerminal(r.stdout).length).toBeGreaterThan(0);
    expect(r.stderr).not.toContain('go to discord');
    expect(discord.messages.size).toBe(0);
    expect(slack.messages.size).toBe(0);
    expect(discord.connectedClients).toBe(0);
  }, 90_000);
});
