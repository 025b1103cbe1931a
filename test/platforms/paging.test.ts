/**
 * Paging through the real clients: alerts written by the engine (on an injected clock) go through the outbox and
 * the dispatcher to the real discord.js, Bolt and nodemailer clients and the Telegram bot, against the local fakes
 * and a real SMTP server. A critical carries the configured mention in the field that notifies; a warning carries
 * none; a repeat carries it again; a hostile run name and log line ping nobody; quiet hours hold a warning and post
 * its summary once they end.
 */
import { simpleParser, type ParsedMail } from 'mailparser';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { silentLog } from '../../src/lib/log.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import { discord } from '../../src/platforms/discord/index.ts';
import { email } from '../../src/platforms/email/index.ts';
import { sectionOf, type Platform } from '../../src/platforms/platform.ts';
import { slack } from '../../src/platforms/slack/index.ts';
import { telegram } from '../../src/platforms/telegram/index.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { discordEnv, startFakeDiscord, type FakeDiscord, type Json } from '../fakes/discordServer.ts';
import { startFakeSlack } from '../fakes/slackServer.ts';
import { FakeTelegram } from '../fakes/telegramServer.ts';

const ROLE = '123456789012345678';
const HOUR = 3600_000;
/** What a run name and a log line may carry to ping: Discord's and Slack's forms. */
const HOSTILE_RUN = '@everyone-<@123>-<!channel>';
const HOSTILE_LINE = 'ERROR @everyone @here <@123> <@&987654321098765432> <!channel> <!here> <@U0MALLORY>';

const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** One platform from its section (as rlwatch.yaml gives it), behind the engine, the outbox and the dispatcher. */
async function paging<S, T>(platform: Platform<S, T>, section: unknown, env: NodeJS.ProcessEnv) {
  const config = ConfigSchema.parse({ [platform.id]: section });
  const settings = platform.settings(sectionOf(config, platform), env);
  if (settings === null) throw new Error(`${platform.id} is not configured`);
  const { store } = freshStore();
  const contract = new SqliteAsyncStore(store);
  const instance = await platform.create(settings, { store: contract, config, log: silentLog, wake: () => {} });
  instance.start?.();
  for (let i = 0; i < 500 && instance.ready && !instance.ready(); i++) await sleep(20);
  const clock = { now: Date.parse('2026-01-15T12:00:00Z') };
  const engine = new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: HOUR,
    now: () => clock.now,
  });
  const dispatcher = new Dispatcher(contract, instance.targets, {
    baseBackoffMs: 50,
    maxBackoffMs: 100,
    now: () => clock.now,
    route: platform.route(settings, config),
  });
  open.push(async () => {
    await dispatcher.stop(0);
    await instance.stop?.();
    store.close();
  });
  /** An alert firing now on `run`, announced and delivered. */
  const fire = async (
    run: string,
    rule: string,
    severity: string,
    line = 'Traceback: CUDA out of memory',
  ): Promise<number> => {
    const r = store.runs.ensure(run, `/runs/${run}`);
    const details = { evidence: { title: 'log', lines: [line] } };
    const a = store.alerts.create(r.id, rule, 'log:error', 'firing', {
      step: 5,
      at: clock.now,
      severity,
      summary: `${rule} on ${run}`,
      details,
    });
    engine.announce(r.id);
    await dispatcher.kick();
    return a.id;
  };
  /** Announces what the run's alerts need said now (a repeat once the interval passed) and delivers it. */
  const again = async (run: string): Promise<void> => {
    engine.announce(store.runs.byName(run)!.id);
    await dispatcher.kick();
  };
  return { clock, fire, again, kick: () => dispatcher.kick() };
}

async function fakeDiscord(): Promise<FakeDiscord> {
  const fake = await startFakeDiscord();
  open.push(() => fake.close());
  return fake;
}

/** The bodies of the messages the bot posted to the channel, in order. */
const posts = (fake: FakeDiscord): Json[] =>
  fake.requestsTo('POST', /^\/channels\/\d+\/messages$/).map((r) => r.body as Json);

describe('Discord (discord.js against the fake)', () => {
  it('a critical puts the role in content and allowed_mentions; a warning pings nobody; a repeat pings again', async () => {
    const fake = await fakeDiscord();
    const p = await paging(discord, { mention: { roles: [ROLE] } }, discordEnv(fake));
    await p.fire('grpo', 'mode_collapse', 'critical');
    await p.fire('grpo-b', 'slow_steps', 'warning');
    await fake.waitFor(() => posts(fake).length === 2);
    const [critical, warning] = posts(fake) as [Json, Json];
    expect(critical.content.split('\n')[0]).toBe(`<@&${ROLE}>`);
    expect(critical.allowed_mentions).toEqual({ parse: [], roles: [ROLE], users: [] });
    expect(warning.content).not.toContain('<@&');
    expect(warning.allowed_mentions).toEqual({ parse: [] });

    p.clock.now += HOUR + 1;
    await p.again('grpo');
    await fake.waitFor(() => posts(fake).length === 3);
    const repeat = posts(fake)[2]!;
    expect(repeat.content.split('\n')[0]).toBe(`<@&${ROLE}>`);
    expect(repeat.allowed_mentions).toEqual({ parse: [], roles: [ROLE], users: [] });
    expect(JSON.stringify(repeat.embeds)).toContain('Still firing, not acked, since 2026-01-15 12:00 UTC');
  }, 30_000);

  it('a run name and a log line that try to ping leave only the configured role allowed', async () => {
    const fake = await fakeDiscord();
    const p = await paging(discord, { mention: { roles: [ROLE] } }, discordEnv(fake));
    await p.fire(HOSTILE_RUN, 'crash', 'critical', HOSTILE_LINE);
    await fake.waitFor(() => posts(fake).length === 1);
    const post = posts(fake)[0]!;
    // Discord pings the ids allowed_mentions names, and with parse: [] nothing else the content holds
    expect(post.allowed_mentions).toEqual({ parse: [], roles: [ROLE], users: [] });
    expect(post.content).toContain(HOSTILE_RUN);
  }, 30_000);

  it("here: @here is allowed, and the run name's own @everyone is broken", async () => {
    const fake = await fakeDiscord();
    const p = await paging(discord, { mention: { here: true } }, discordEnv(fake));
    await p.fire(HOSTILE_RUN, 'crash', 'critical', HOSTILE_LINE);
    await fake.waitFor(() => posts(fake).length === 1);
    const post = posts(fake)[0]!;
    expect(post.allowed_mentions).toEqual({ parse: ['everyone'], roles: [], users: [] });
    expect(post.content.split('\n')[0]).toBe('@here');
    expect(post.content.slice('@here'.length).match(/@(everyone|here)/g)).toBeNull();
  }, 30_000);

  it('quiet hours hold a warning and post its summary once they end; a critical goes at once, with its mention', async () => {
    const fake = await fakeDiscord();
    const section = { mention: { roles: [ROLE] }, quiet: { hours: '22:00-07:00', timezone: 'Europe/Paris' } };
    const p = await paging(discord, section, discordEnv(fake));
    p.clock.now = Date.parse('2026-01-15T22:00:00Z'); // 23:00 in Paris
    await p.fire('grpo-b', 'slow_steps', 'warning');
    await p.fire('grpo', 'mode_collapse', 'critical');
    await fake.waitFor(() => posts(fake).length === 1);
    expect(posts(fake)[0]!.content.split('\n')[0]).toBe(`<@&${ROLE}>`);
    expect(JSON.stringify(posts(fake)[0]!.embeds)).toContain('mode_collapse');

    p.clock.now = Date.parse('2026-01-16T06:30:00Z'); // 07:30: the next look at the outbox sums up
    await p.kick();
    await fake.waitFor(() => posts(fake).length === 2);
    const summary = posts(fake)[1]!;
    expect(summary.embeds[0].title).toBe('While quiet (22:00-07:00): 1 warning on 1 run');
    expect(summary.embeds[0].description).toContain('WARNING · slow_steps · grpo-b: slow_steps on grpo-b');
    expect(summary.allowed_mentions).toEqual({ parse: [] });
    expect(JSON.stringify(summary.embeds)).not.toContain('mute --rule digest'); // a digest's note: not this card's
    expect(summary.components ?? []).toEqual([]);
  }, 30_000);
});

/** Every mrkdwn text of some blocks. */
function mrkdwn(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(mrkdwn);
  if (node === null || typeof node !== 'object') return [];
  const o = node as Record<string, unknown>;
  return [...(o.type === 'mrkdwn' && typeof o.text === 'string' ? [o.text] : []), ...Object.values(o).flatMap(mrkdwn)];
}

describe('Slack (Bolt against the fake)', () => {
  it("a critical's text starts with the user group; a hostile run name and log line add no control sequence", async () => {
    const fake = await startFakeSlack();
    open.push(() => fake.close());
    const env = {
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_APP_TOKEN: fake.appToken,
      SLACK_API_URL: fake.apiUrl,
      SLACK_CHANNEL_ID: fake.channelId,
    };
    const p = await paging(slack, { mention: { groups: ['S0ONCALL'], users: ['U0ANA'] } }, env);
    await p.fire(HOSTILE_RUN, 'crash', 'critical', HOSTILE_LINE);
    await p.fire('grpo-b', 'slow_steps', 'warning');
    const messages = () => [...fake.messages.values()].filter((m) => m.channel === fake.channelId);
    await fake.waitFor(() => messages().length === 2);
    const [critical, warning] = messages() as [
      ReturnType<typeof messages>[number],
      ReturnType<typeof messages>[number],
    ];
    const controls = (s: string): string[] => [...s.matchAll(/<[!@][^>]*>/g)].map((m) => m[0]);
    expect(critical.text.startsWith('<@U0ANA> <!subteam^S0ONCALL> ')).toBe(true);
    expect(controls(critical.text)).toEqual(['<@U0ANA>', '<!subteam^S0ONCALL>']);
    // plain_text (the card's header) is never parsed: what Slack reads is the mrkdwn
    expect(controls(mrkdwn(critical.blocks).join('\n'))).toEqual(['<@U0ANA>', '<!subteam^S0ONCALL>']);
    expect(controls(warning.text)).toEqual([]);
  }, 30_000);
});

describe('Telegram (the bot against the fake Bot API)', () => {
  it('a critical starts with the @username; a warning and the run name mention nobody', async () => {
    const tg = await FakeTelegram.start();
    open.push(() => tg.close());
    const CHAT = -1001;
    const env = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) };
    const p = await paging(telegram, { commands: false, mention: { users: ['@ana_oncall'] } }, env);
    await p.fire(HOSTILE_RUN, 'crash', 'critical', HOSTILE_LINE);
    await p.fire('grpo-b', 'slow_steps', 'warning');
    await tg.waitFor(() => tg.botMessages(CHAT).length === 2);
    const [critical, warning] = tg.botMessages(CHAT).map((m) => m.text ?? '') as [string, string];
    // what Telegram makes a mention of outside <pre>: an @ and a word after the start or a non-word character
    const mentions = (s: string): string[] =>
      [...s.replace(/<pre>[\s\S]*?<\/pre>/g, '').matchAll(/(?:^|\W)(@\w+)/g)].map((m) => m[1]!);
    expect(critical.split('\n')[0]).toBe('@ana_oncall');
    expect(mentions(critical)).toEqual(['@ana_oncall']);
    expect(mentions(warning)).toEqual([]);
  }, 30_000);
});

describe('email (nodemailer against a real SMTP server)', () => {
  it("a critical's mail goes to the extra recipient too (Cc); a warning's does not", async () => {
    const mails: Array<{ to: string[]; mail: ParsedMail }> = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, done) {
        simpleParser(stream).then((mail) => {
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address), mail });
          done();
        }, done);
      },
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    open.push(() => new Promise<void>((ok) => server.close(() => ok())));
    const env = {
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String((server.server.address() as AddressInfo).port),
      EMAIL_FROM: 'rlwatch <alerts@lab.example>',
      EMAIL_TO: 'ml-team@lab.example',
    };
    const p = await paging(email, { mention: { to: ['oncall@lab.example'] } }, env);
    await p.fire('grpo', 'mode_collapse', 'critical');
    await p.fire('grpo-b', 'slow_steps', 'warning');
    for (const end = Date.now() + 10_000; mails.length < 2 && Date.now() < end; ) await sleep(20);
    const [critical, warning] = mails as [(typeof mails)[number], (typeof mails)[number]];
    expect(critical.to.sort()).toEqual(['ml-team@lab.example', 'oncall@lab.example']);
    expect(critical.mail.headers.get('cc')).toMatchObject({ value: [{ address: 'oncall@lab.example' }] });
    expect(warning.to).toEqual(['ml-team@lab.example']);
  }, 30_000);
});
