import { simpleParser, type ParsedMail } from 'mailparser';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { PNG_SIGNATURE } from '../../src/render/chart.ts';
import { discordEnv, snowflake, startFakeDiscord } from '../fakes/discordServer.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { slackEnv, startFakeSlack } from '../fakes/slackServer.ts';
import { FakeTelegram } from '../fakes/telegramServer.ts';
import { tempDir } from '../helpers.ts';
import { BIN, type CliResult } from './cli.ts';

/** What the card says of itself, wherever it lands. */
const TEST_LINE = 'This is a test notification from rlwatch notify --test';

/** Every platform's variables, so that none of the developer's leaks into a case. */
const PLATFORM_VARS = /^(DISCORD|SLACK|TELEGRAM|SMTP|EMAIL|WEBHOOK|TEAMS|MATTERMOST|FEISHU)_/;
const bare = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.keys(process.env)
      .filter((k) => PLATFORM_VARS.test(k))
      .map((k) => [k, undefined]),
  );

/** `bin/rlwatch ARGS` in a fresh folder, run in the background: the fakes answer from this process meanwhile. */
function rlwatch(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(BIN, args, {
    cwd: tempDir(),
    env: { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined, ...bare(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout, stderr })));
}

/** A real SMTP server (smtp-server) on 127.0.0.1 keeping every mail. */
async function smtp() {
  const mails: ParsedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      simpleParser(stream).then((mail) => (mails.push(mail), done()), done);
    },
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((ok) => server.close(() => ok())) };
}

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

describe('rlwatch notify --test', () => {
  it('sends the test card, with its chart, to every configured target and says each was reached', async () => {
    const [discord, slack, tg, hooks, mail] = await Promise.all([
      startFakeDiscord(),
      startFakeSlack(),
      FakeTelegram.start(),
      HttpReceiver.start(),
      smtp(),
    ]);
    open.push(discord, slack, tg, hooks, mail);
    hooks.fallback = () => ({ status: 200, body: '{"code":0}' }); // what a Feishu bot answers; the others read no body
    const chat = -100123;
    const r = await rlwatch(['notify', '--test'], {
      ...discordEnv(discord),
      ...slackEnv(slack),
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_URL: tg.apiUrl,
      TELEGRAM_CHAT_ID: String(chat),
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(mail.port),
      EMAIL_FROM: 'rlwatch@lab.example',
      EMAIL_TO: 'ml@lab.example',
      WEBHOOK_URL: hooks.url('/webhook'),
      TEAMS_WEBHOOK_URL: hooks.url('/teams'),
      MATTERMOST_WEBHOOK_URL: hooks.url('/mattermost'),
      FEISHU_WEBHOOK_URL: hooks.url('/feishu'),
    });
    const targets = [
      `discord:${discord.channelId}`,
      `slack:${slack.channelId}`,
      `telegram:${chat}`,
      'email:ml@lab.example',
      'webhook:default',
      'teams:default',
      'mattermost:default',
      'feishu:default',
    ];
    expect(r.stdout.trim().split('\n').sort()).toEqual(
      [...targets.map((t) => `ok      ${t}`), `${targets.length} of ${targets.length} targets reached`].sort(),
    );
    expect(r.status).toBe(0);

    // Discord: one message in the channel, saying it is a test, its chart attached
    const [posted, ...more] = discord.channelMessages();
    expect(more).toEqual([]);
    expect(JSON.stringify(posted!.embeds)).toContain(TEST_LINE);
    expect(posted!.attachments.map((a) => a.data.subarray(0, 8))).toEqual([PNG_SIGNATURE]);
    // Slack: the card, and its chart uploaded to the same channel
    const slackCards = [...slack.messages.values()].filter((m) => m.source === 'chat.postMessage');
    expect(slackCards.map((m) => m.channel)).toEqual([slack.channelId]);
    expect(JSON.stringify(slackCards[0]!.blocks)).toContain(TEST_LINE);
    expect(slack.uploads.map((u) => [u.channelId, u.bytes!.subarray(0, 8)])).toEqual([
      [slack.channelId, PNG_SIGNATURE],
    ]);
    // Telegram: the card and its chart as a photo replying to it
    const [card, photo] = tg.botMessages(chat);
    expect(card!.text).toContain(TEST_LINE);
    expect(photo!.photo!.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(photo!.reply_to_message_id).toBe(card!.message_id);
    // email: one mail with the chart inline
    expect(mail.mails).toHaveLength(1);
    expect(mail.mails[0]!.text).toContain(TEST_LINE);
    expect(mail.mails[0]!.attachments.map((a) => a.contentType)).toEqual(['image/png']);
    // the hooks: one post each, naming the test
    expect(hooks.received.map((h) => h.path).sort()).toEqual(['/feishu', '/mattermost', '/teams', '/webhook']);
    for (const h of hooks.received) expect(h.raw).toContain('test_notification');
  });

  it('a wrong Discord channel is named with its fix; the other targets are still reached; exit 1', async () => {
    const [discord, slack] = await Promise.all([startFakeDiscord(), startFakeSlack()]);
    open.push(discord, slack);
    const wrong = snowflake();
    const r = await rlwatch(['notify', '--test'], { ...discordEnv(discord, wrong), ...slackEnv(slack) });
    const lines = r.stdout.trim().split('\n');
    expect(lines).toContain(`ok      slack:${slack.channelId}`);
    expect(lines).toContain(
      `FAILED  discord:${wrong}: Discord 404: Unknown Channel. Fix: no channel has this id: copy it again (User Settings > ` +
        'Advanced > Developer Mode, then right-click the channel > Copy Channel ID) into DISCORD_CHANNEL_ID or discord.channel',
    );
    expect(lines.at(-1)).toBe('1 of 2 targets reached');
    expect(r.status).toBe(1);
    expect(discord.channelMessages()).toEqual([]);
  });

  it.each([
    [
      'not_in_channel',
      'the app is not in this channel: type /invite @rlwatch (or the name you gave the app) in the channel',
    ],
    [
      'missing_scope',
      'the bot token lacks a scope: give the app chat:write and files:write (slack-app-manifest.yaml lists ' +
        'every scope rlwatch uses) and reinstall it to the workspace',
    ],
  ])("Slack's %s is named with its fix; exit 1", async (code, fix) => {
    const slack = await startFakeSlack();
    open.push(slack);
    slack.failNext('chat.postMessage', { error: code });
    const r = await rlwatch(['notify', '--test', 'slack'], slackEnv(slack));
    expect(r.stdout).toBe(`FAILED  slack:${slack.channelId}: Slack: ${code}. Fix: ${fix}\n0 of 1 target reached\n`);
    expect(r.status).toBe(1);
  });

  it('a refused token is said for each of its targets; exit 1', async () => {
    const discord = await startFakeDiscord();
    open.push(discord);
    const r = await rlwatch(['notify', '--test'], { ...discordEnv(discord), DISCORD_TOKEN: 'not.the.token' });
    expect(r.stdout).toBe(
      `FAILED  discord:${discord.channelId}: Discord refused DISCORD_TOKEN (invalid token): fix it and start again\n` +
        '0 of 1 target reached\n',
    );
    expect(r.status).toBe(1);
  });

  it("Telegram's refused token is named with its fix; exit 1", async () => {
    const tg = await FakeTelegram.start();
    open.push(tg);
    const r = await rlwatch(['notify', '--test'], {
      TELEGRAM_BOT_TOKEN: '1:wrong',
      TELEGRAM_API_URL: tg.apiUrl,
      TELEGRAM_CHAT_ID: '42',
    });
    expect(r.stdout).toBe(
      'FAILED  telegram:42: telegram sendMessage: 401 Unauthorized. Fix: the token was refused: copy it again from ' +
        'BotFather (/mybots > API Token) into TELEGRAM_BOT_TOKEN\n0 of 1 target reached\n',
    );
    expect(r.status).toBe(1);
    expect(tg.messages).toEqual([]);
  });

  it('PLATFORM limits the test to that platform: the others are not touched', async () => {
    const [discord, slack] = await Promise.all([startFakeDiscord(), startFakeSlack()]);
    open.push(discord, slack);
    const r = await rlwatch(['notify', '--test', 'slack'], { ...discordEnv(discord), ...slackEnv(slack) });
    expect(r.stdout).toBe(`ok      slack:${slack.channelId}\n1 of 1 target reached\n`);
    expect(r.status).toBe(0);
    expect(discord.requests).toEqual([]);
  });

  it('says what is missing when there is nothing to test, or no such platform, or no --test', async () => {
    const none = await rlwatch(['notify', '--test'], {});
    expect(none.stderr).toBe(
      'rlwatch: no chat platform is configured: nothing to test (the variables are in .env.example)\n',
    );
    expect(none.status).toBe(1);
    const off = await rlwatch(['notify', '--test', 'discord'], {});
    expect(off.stderr).toBe('rlwatch: discord is not configured: its variables are in .env.example\n');
    expect(off.status).toBe(1);
    const typo = await rlwatch(['notify', '--test', 'discrod'], {});
    expect(typo.stderr).toMatch(/^rlwatch: no platform 'discrod': one of discord, slack, .*\n$/);
    expect(typo.status).toBe(1);
    const bare = await rlwatch(['notify'], {});
    expect(bare.stderr).toBe('rlwatch: notify sends only the test card: rlwatch notify --test [PLATFORM]\n');
    expect(bare.status).toBe(1);
  });
});
