import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionRowBuilder, ButtonBuilder, ButtonStyle } from 'discord.js';
import { ConfigSchema } from '../../src/config/schema.ts';
import { silentLog } from '../../src/lib/log.ts';
import { NOT_HERE } from '../../src/notify/routing.ts';
import { DiscordBot } from '../../src/platforms/discord/bot.ts';
import { discord } from '../../src/platforms/discord/index.ts';
import { sectionOf } from '../../src/platforms/platform.ts';
import { SlackBot } from '../../src/platforms/slack/bot.ts';
import { slack } from '../../src/platforms/slack/index.ts';
import type { StoreContract } from '../../src/store/contract.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { snowflake, startFakeDiscord, type FakeDiscord, type FakeInteraction } from '../fakes/discordServer.ts';
import { startFakeSlack, type FakeSlack, type InteractionResult } from '../fakes/slackServer.ts';
import { tempDir } from '../helpers.ts';
import { BIN } from '../integration/cli.ts';

const A = 'team-a/grpo';
const B = 'team-b/ppo';
const ana = { id: '111111111111111111', username: 'ana' };
/** Discord's Manage Messages permission bit (1 << 13), as a registered command carries it */
const MANAGE_MESSAGES = String(1 << 13);

/** A store whose `ctl.method` (`table.method`: the latest values, an alert by id) takes `ctl.delayMs` when set: a slow
 * answer. */
function slowable(inner: StoreContract, ctl: { delayMs: number; method: string }): StoreContract {
  const table = (t: object, name: string): object =>
    new Proxy(t, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== 'function' || `${name}.${String(key)}` !== ctl.method) return value;
        return async (...args: unknown[]) => {
          if (ctl.delayMs > 0) await new Promise((r) => setTimeout(r, ctl.delayMs));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  return new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value === 'function') return value.bind(target);
      return typeof value === 'object' && value !== null ? table(value, String(key)) : value;
    },
  });
}

/** A store with runs A and B, each with a firing collapse: their alert ids. */
function twoRuns(store: Store): { alertA: number; alertB: number } {
  const alertOf = (run: string): number =>
    store.alerts.create(store.runs.ensure(run, `/runs/${run}`).id, 'mode_collapse', 'frac_zero_std', 'firing', {
      step: 3,
      at: Date.now(),
      severity: 'critical',
      summary: 'frac_zero_std 1 > 0.8',
      details: {},
    }).id;
  return { alertA: alertOf(A), alertB: alertOf(B) };
}

const content = (i: FakeInteraction): string => String((i.callback?.data as { content?: string } | null)?.content);

describe('Discord: where commands are taken from, who may write, what a channel sees (real discord.js, local fake)', () => {
  let fake: FakeDiscord;
  let store: Store;
  let bot: DiscordBot;
  const slow = { delayMs: 0, method: '' };
  /** team-a's channel (its route's) and an operators' channel opened for commands */
  const teamA = snowflake();
  const ops = snowflake();
  let alertA: number;
  let alertB: number;

  beforeAll(async () => {
    fake = await startFakeDiscord();
    store = Store.open(join(tempDir(), 'rlwatch.db'));
    ({ alertA, alertB } = twoRuns(store));
    const config = ConfigSchema.parse({
      discord: { routes: [{ runs: 'team-a/*', channel: teamA }], commands: { channels: [fake.channelId, teamA, ops] } },
    });
    // no DISCORD_GUILD_ID: the server commands are taken from is the alert channel's
    bot = new DiscordBot({
      token: fake.token,
      apiUrl: fake.apiUrl,
      channel: fake.channelId,
      section: sectionOf(config, discord),
      store: slowable(new SqliteAsyncStore(store), slow),
      log: silentLog,
      retries: 0,
    });
    await bot.start();
  }, 20_000);

  afterAll(async () => {
    await bot?.stop();
    store?.close();
    await fake?.close();
  }, 20_000);

  it('registers reads open to all and writes behind Manage Messages, usable in servers only', () => {
    const rights = Object.fromEntries(fake.commands.map((c) => [c.name, c.default_member_permissions]));
    expect(rights).toEqual({
      run: null,
      reward: null,
      alerts: null,
      examples: null,
      files: null,
      mutes: null,
      ack: MANAGE_MESSAGES,
      mute: MANAGE_MESSAGES,
      unmute: MANAGE_MESSAGES,
    });
    for (const c of fake.commands) expect([c.name, c.contexts, c.integration_types]).toEqual([c.name, [0], [0]]);
  });

  it('a command from a DM or from another server is refused, only to the caller, and nothing runs', async () => {
    for (const where of ['dm', { guildId: snowflake(), channelId: snowflake() }] as const) {
      const out = await fake.command({ name: 'ack', options: { id: alertB }, user: ana, where });
      expect(out.callback?.data).toMatchObject({ flags: 64 });
      expect(content(out)).toBe(NOT_HERE);
    }
    expect(store.alerts.byId(alertB)?.acked_by).toBeNull();
  });

  it('a command from a channel of the server that is not taken from is refused, only to the caller', async () => {
    const out = await fake.command({ name: 'run', subcommand: 'list', user: ana, where: { channelId: snowflake() } });
    expect(out.callback?.data).toMatchObject({ flags: 64 });
    expect(content(out)).toBe(NOT_HERE);
  });

  it('with an empty allow list, an ack from the alert channel is taken, and from the channel commands.channels opens', async () => {
    const here = await fake.command({ name: 'ack', options: { id: alertB }, user: ana });
    expect(here.callback?.type).toBe(4);
    expect(store.alerts.byId(alertB)?.acked_by).toBe('@ana');
    const fromOps = await fake.command({ name: 'ack', options: { id: alertA }, user: ana, where: { channelId: ops } });
    expect(fromOps.callback?.type).toBe(4);
    expect(store.alerts.byId(alertA)?.acked_by).toBe('@ana');
  });

  it('a channel routed only run A cannot see run B: status, alerts, logs, ack by id, autocomplete', async () => {
    const where = { channelId: teamA };
    const status = await fake.command({ name: 'run', subcommand: 'status', options: { run: B }, user: ana, where });
    expect(status.callback?.data).toMatchObject({ flags: 64 });
    expect(content(status)).toBe(`unknown run '${B}' (known: ${A})`);
    const logs = await fake.command({ name: 'run', subcommand: 'logs', options: { run: B }, user: ana, where });
    expect(content(logs)).toBe(`unknown run '${B}' (known: ${A})`);
    const alerts = await fake.command({ name: 'alerts', options: { all: true }, user: ana, where });
    const shown = JSON.stringify(alerts.callback?.data);
    expect(shown).toContain(`#${alertA} `);
    expect(shown).not.toContain(B);
    const ack = await fake.command({ name: 'ack', options: { id: alertB }, user: ana, where });
    expect(content(ack)).toBe(`no alert #${alertB} (see \`alerts --all\`)`);
    const runs = await fake.autocomplete({
      name: 'run',
      subcommand: 'status',
      focused: { name: 'run', value: '' },
      user: ana,
      where,
    });
    expect(runs).toEqual([{ name: A, value: A }]);
  });

  it('/mute with a duration alone is answered with its usage, which says to add all', async () => {
    const out = await fake.command({ name: 'mute', options: { duration: '2h' }, user: ana });
    expect(out.callback?.data).toMatchObject({ flags: 64 });
    expect(content(out)).toMatch(/^usage: \/mute .*: name a run or a rule, or add all to mute every run$/);
    expect(store.silences.active(Date.now())).toEqual([]);
  });

  it('a command not marked slow whose answer takes longer than Discord waits says "thinking" first, then answers', async () => {
    Object.assign(slow, { delayMs: 3500, method: 'points.latest' });
    try {
      const out = await fake.command({
        name: 'run',
        subcommand: 'status',
        options: { run: A },
        user: ana,
        where: { channelId: teamA },
      });
      expect(out.callback?.type).toBe(5);
      await fake.waitFor(() => out.edits.length > 0, 10_000);
      expect(JSON.stringify(out.edits[0]!.body)).toContain(`${A}: step`);
    } finally {
      slow.delayMs = 0;
    }
  }, 20_000);

  it('a button click whose answer takes longer than Discord waits is acknowledged first, then acks', async () => {
    const channel = await bot.client.channels.fetch(fake.channelId);
    if (!channel?.isSendable()) throw new Error('the fake channel is not sendable');
    const button = new ButtonBuilder().setCustomId(`ack:${alertB}`).setLabel('Ack').setStyle(ButtonStyle.Primary);
    const card = await channel.send({
      content: 'card',
      components: [new ActionRowBuilder<ButtonBuilder>().addComponents(button)],
    });
    Object.assign(slow, { delayMs: 3500, method: 'alerts.byId' });
    try {
      const out = await fake.click({
        customId: `ack:${alertB}`,
        messageId: card.id,
        user: { id: '333333333333333333', username: 'cy' },
      });
      expect(out.callback?.type).toBe(6);
      await fake.waitFor(() => out.edits.length > 0, 10_000);
      expect(store.alerts.byId(alertB)?.acked_by).toBe('@cy');
    } finally {
      slow.delayMs = 0;
    }
  }, 20_000);
});

describe('Discord unreachable at start', () => {
  it('bin/rlwatch start says "cannot reach Discord" on stderr when its gateway is on a closed port', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const fake = await startFakeDiscord({ gatewayUrl: `ws://127.0.0.1:${port}` });
    const root = tempDir();
    mkdirSync(join(root, 'runs'));
    const child = spawn(BIN, ['start', join(root, 'runs'), '--db', join(root, 'rlwatch.db')], {
      cwd: root,
      env: {
        ...process.env,
        RLWATCH_DB: undefined,
        RLWATCH_CONFIG: undefined,
        SLACK_BOT_TOKEN: undefined,
        DISCORD_TOKEN: fake.token,
        DISCORD_API_URL: fake.apiUrl,
        DISCORD_CHANNEL_ID: fake.channelId,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      // discord.js alone would redial without a word until rlwatch's 30 s ready timeout
      await fake.waitFor(() => stderr.includes('cannot reach Discord'), 20_000);
      expect(stderr).toMatch(
        /cannot reach Discord: its gateway closed the connection before the bot was ready\. rlwatch keeps watching and retrying/,
      );
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await fake.close();
    }
  }, 60_000);
});

describe('Slack: where commands are taken from, who may write, what a channel sees (real Bolt in Socket Mode, local fake)', () => {
  let fake: FakeSlack;
  let store: Store;
  let bot: SlackBot;
  let alertA: number;
  let alertB: number;
  const TEAM_A = 'C0TEAMA';
  const reply = (r: InteractionResult) => r.responses[0]!.body as { response_type: string; text: string };

  beforeAll(async () => {
    fake = await startFakeSlack();
    store = Store.open(join(tempDir(), 'rlwatch.db'));
    ({ alertA, alertB } = twoRuns(store));
    // no commands.channels: the alert channel and the route's are taken from
    const config = ConfigSchema.parse({ slack: { routes: [{ runs: 'team-a/*', channel: TEAM_A }] } });
    bot = new SlackBot({
      botToken: fake.botToken,
      appToken: fake.appToken,
      apiUrl: fake.apiUrl,
      channel: fake.channelId,
      section: sectionOf(config, slack),
      store: new SqliteAsyncStore(store),
      log: silentLog,
      retries: 0,
    });
    await bot.start();
  }, 20_000);

  afterAll(async () => {
    await bot?.stop();
    store?.close();
    await fake?.close();
  }, 20_000);

  it('a command from another workspace, a DM or a channel not taken from is refused, only to the caller', async () => {
    for (const where of [{ teamId: 'T0OTHER' }, { channelId: 'D0DIRECT' }, { channelId: 'C0ELSEWHERE' }]) {
      const r = await fake.slashCommand({
        command: '/ack',
        text: String(alertB),
        userId: 'U0ANA',
        waitForResponses: 1,
        ...where,
      });
      expect(reply(r)).toMatchObject({ response_type: 'ephemeral', text: NOT_HERE });
    }
    expect(store.alerts.byId(alertB)?.acked_by).toBeNull();
  });

  it("with an empty allow list, an ack from the alert channel and from a route's channel is taken", async () => {
    const here = await fake.slashCommand({
      command: '/ack',
      text: String(alertB),
      userId: 'U0ANA',
      waitForResponses: 1,
    });
    expect(reply(here).response_type).toBe('in_channel');
    expect(store.alerts.byId(alertB)?.acked_by).toBe('<@U0ANA>');
    const routed = await fake.slashCommand({
      command: '/ack',
      text: String(alertA),
      userId: 'U0ANA',
      channelId: TEAM_A,
      waitForResponses: 1,
    });
    expect(reply(routed).response_type).toBe('in_channel');
    expect(store.alerts.byId(alertA)?.acked_by).toBe('<@U0ANA>');
  });

  it('a channel routed only run A cannot see run B', async () => {
    const status = await fake.slashCommand({
      command: '/run',
      text: `status ${B}`,
      userId: 'U0ANA',
      channelId: TEAM_A,
      waitForResponses: 1,
    });
    expect(reply(status)).toMatchObject({ response_type: 'ephemeral', text: `unknown run '${B}' (known: ${A})` });
    const alerts = await fake.slashCommand({
      command: '/alerts',
      text: 'all',
      userId: 'U0ANA',
      channelId: TEAM_A,
      waitForResponses: 1,
    });
    const shown = JSON.stringify(alerts.responses[0]!.body);
    expect(shown).toContain(`#${alertA} `);
    expect(shown).not.toContain(B);
  });

  it('/mute 2h is answered with the usage line that says to add all, and mutes nothing', async () => {
    const r = await fake.slashCommand({ command: '/mute', text: '2h', userId: 'U0ANA', waitForResponses: 1 });
    expect(reply(r).response_type).toBe('ephemeral');
    expect(reply(r).text).toMatch(/: name a run or a rule, or add all to mute every run$/);
    expect(store.silences.active(Date.now())).toEqual([]);
  });
});
