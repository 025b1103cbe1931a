import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App, PlatformSettings } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Log } from '../../src/lib/log.ts';
import { startFakeDiscord, type FakeDiscord, type FakeMessage as DiscordMessage } from '../fakes/discordServer.ts';
import { startFakeSlack } from '../fakes/slackServer.ts';
import { rlwatch } from '../integration/cli.ts';
import { WatchedRun } from './watchedRun.ts';

/** The real discord.js Client and the real Bolt App, in one `start`, each against its local fake. */
async function bothPlatforms(run: WatchedRun, log?: Log) {
  const discord = await startFakeDiscord();
  const slack = await startFakeSlack();
  run.write(30);
  const chat: PlatformSettings = {
    discord: { token: discord.token, apiUrl: discord.apiUrl, guildId: discord.guildId, channel: discord.channelId },
    slack: {
      botToken: slack.botToken,
      appToken: slack.appToken,
      apiUrl: slack.apiUrl,
      channel: slack.channelId,
      timeoutMs: 2000,
    },
  };
  const app = await run.start(ConfigSchema.parse({}), chat, log);
  const discordPosts = (rule: string): DiscordMessage[] =>
    discord.channelMessages().filter((m) => m.interactionId === null && JSON.stringify(m.embeds).includes(` ${rule} `));
  const slackPosts = (rule: string) =>
    [...slack.messages.values()].filter((m) => m.blocks.length > 0 && JSON.stringify(m.blocks).includes(` ${rule} `));
  type Row = {
    id: number;
    attempts: number;
    done_at: number | null;
    dead_at: number | null;
    dead_reason: string | null;
  };
  const rows = (target: string): Row[] =>
    app.store.db
      .prepare('SELECT id, attempts, done_at, dead_at, dead_reason FROM outbox WHERE target = ? ORDER BY id')
      .all(target) as Row[];
  return {
    discord,
    slack,
    app,
    discordPosts,
    slackPosts,
    rows,
    slackTarget: `slack:${slack.channelId}`,
    discordTarget: `discord:${discord.channelId}`,
  };
}

describe('one platform down never holds back the other (real clients, local fakes)', () => {
  const run = new WatchedRun();
  let t: Awaited<ReturnType<typeof bothPlatforms>>;
  const lines: string[] = [];

  beforeAll(async () => {
    t = await bothPlatforms(run, { info: (m) => lines.push(m), warn: (m) => lines.push(`warning: ${m}`) });
  }, 20_000);

  afterAll(async () => {
    t.slack.setHanging(false);
    await t.app?.stop();
    await t.discord?.close();
    await t.slack?.close();
  }, 20_000);

  it('Discord posts each alert while Slack holds the previous one in a request that never answers', async () => {
    const { slack, discordPosts, slackPosts, rows, slackTarget } = t;
    slack.setHanging(true);
    run.write(4, { frac: 1 }); // mode_collapse
    await t.discord.waitFor(() => discordPosts('mode_collapse').length === 1, 10_000);
    // Slack's delivery of the same alert is in flight: called, never answered
    await slack.waitFor(() => slack.callsTo('chat.postMessage').some((c) => c.status === 0), 10_000);
    run.write(1, { grad: 15.786 }); // grad_explosion: a second alert, behind the first on Slack
    await t.discord.waitFor(() => discordPosts('grad_explosion').length === 1, 10_000);
    // still while Slack's first request hangs: nothing posted there, both rows pending
    expect(slack.callsTo('chat.postMessage').filter((c) => c.status !== 0)).toEqual([]);
    expect(rows(slackTarget).map((r) => r.done_at)).toEqual([null, null]);
    // the outage goes on as errors (503) for a few retries, then ends: Slack gets both, in order, once
    slack.setHanging(false);
    slack.setDown(true);
    await slack.waitFor(() => rows(slackTarget)[0]!.attempts >= 3, 10_000);
    slack.setDown(false);
    await slack.waitFor(() => rows(slackTarget).every((r) => r.done_at !== null), 15_000);
    const [collapse, spike] = [slackPosts('mode_collapse'), slackPosts('grad_explosion')];
    expect(collapse).toHaveLength(1);
    expect(spike).toHaveLength(1);
    expect(Number(collapse[0]!.ts)).toBeLessThan(Number(spike[0]!.ts));
    expect(discordPosts('mode_collapse')).toHaveLength(1);
    // said on stderr, not once per retry
    const failures = lines.filter((l) => l.includes(`cannot notify ${slackTarget}`));
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBeLessThan(rows(slackTarget)[0]!.attempts);
    expect(lines).toContain(`${slackTarget}: delivering again after ${rows(slackTarget)[0]!.attempts} failed attempts`);
  }, 40_000);
});

describe('an error that will not heal is set aside; the next alert still goes out; `outbox retry` sends it again', () => {
  const run = new WatchedRun();
  let t: Awaited<ReturnType<typeof bothPlatforms>>;
  const db = join(run.root, 'rlwatch.db');

  beforeAll(async () => {
    t = await bothPlatforms(run);
  }, 20_000);

  afterAll(async () => {
    await t.app?.stop();
    await t.discord?.close();
    await t.slack?.close();
  }, 20_000);

  it('a Discord 403 and a Slack channel_not_found are tried once, set aside, and do not block the next alert', async () => {
    const { discord, slack, discordPosts, slackPosts, rows, discordTarget, slackTarget } = t;
    const posts = new RegExp(`/channels/${discord.channelId}/messages$`);
    discord.failNext('POST', posts, { status: 403, code: 50001, message: 'Missing Access' });
    slack.failNext('chat.postMessage', { error: 'channel_not_found' });
    run.write(4, { frac: 1 }); // mode_collapse: refused on both
    await discord.waitFor(() => rows(discordTarget)[0]?.dead_at && rows(slackTarget)[0]?.dead_at, 10_000);
    expect(rows(discordTarget)[0]).toMatchObject({
      attempts: 1,
      done_at: null,
      dead_reason: 'Discord 403: Missing Access',
    });
    expect(rows(slackTarget)[0]).toMatchObject({ attempts: 1, done_at: null, dead_reason: 'Slack: channel_not_found' });
    run.write(1, { grad: 15.786 }); // grad_explosion: goes out on both
    await discord.waitFor(() => rows(discordTarget)[1]?.done_at && rows(slackTarget)[1]?.done_at, 10_000);
    expect([discordPosts('grad_explosion'), slackPosts('grad_explosion')].map((p) => p.length)).toEqual([1, 1]);
    expect(discord.requestsTo('POST', posts).filter((r) => r.status === 403)).toHaveLength(1);
    expect(slack.callsTo('chat.postMessage').filter((c) => c.error === 'channel_not_found')).toHaveLength(1);
    expect(discordPosts('mode_collapse')).toEqual([]);
  }, 30_000);

  it('`rlwatch outbox --json` lists the set-aside rows; `outbox retry ID` puts them back and they are delivered', async () => {
    const { discord, discordPosts, slackPosts, rows, discordTarget, slackTarget } = t;
    const listed = rlwatch(['outbox', '--json', '--db', db], { cwd: run.root });
    expect(listed.status).toBe(0);
    const open = JSON.parse(listed.stdout) as Array<{
      id: number;
      target: string;
      state: string;
      alerts: string[];
      deadReason: string;
    }>;
    expect(open.map((r) => [r.target, r.state, r.alerts, r.deadReason]).sort()).toEqual([
      [discordTarget, 'dead', ['firing mode_collapse'], 'Discord 403: Missing Access'],
      [slackTarget, 'dead', ['firing mode_collapse'], 'Slack: channel_not_found'],
    ]);
    const text = rlwatch(['outbox', '--db', db], { cwd: run.root });
    expect(text.stdout).toContain('Outbox: 0 pending, 2 set aside');
    for (const r of open)
      expect(rlwatch(['outbox', 'retry', String(r.id), '--db', db], { cwd: run.root }).status).toBe(0);
    const again = rlwatch(['outbox', 'retry', String(open[0]!.id), '--db', db], { cwd: run.root });
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`rlwatch: outbox row #${open[0]!.id} is pending, not set aside\n`);
    // the running `start` picks them up on its next tick; kick it rather than wait the 10 s
    void t.app.dispatcher.kick();
    await discord.waitFor(
      () => [...rows(discordTarget), ...rows(slackTarget)].every((r) => r.done_at !== null),
      10_000,
    );
    expect([discordPosts('mode_collapse'), slackPosts('mode_collapse')].map((p) => p.length)).toEqual([1, 1]);
    expect([...rows(discordTarget), ...rows(slackTarget)].every((r) => r.dead_at === null)).toBe(true);
    expect(rlwatch(['outbox', '--db', db], { cwd: run.root }).stdout).toContain('Outbox empty');
    const gone = rlwatch(['outbox', 'retry', String(open[0]!.id), '--db', db], { cwd: run.root });
    expect(gone.stderr).toBe(`rlwatch: no undelivered outbox row #${open[0]!.id} (see \`rlwatch outbox\`)\n`);
  }, 60_000);
});

describe('a channel that does not exist', () => {
  const run = new WatchedRun();
  let fake: FakeDiscord;
  let app: App;

  beforeAll(async () => {
    fake = await startFakeDiscord();
    run.write(30);
    const chat = {
      discord: { token: fake.token, apiUrl: fake.apiUrl, guildId: fake.guildId, channel: '999999999999999999' },
    };
    app = await run.start(ConfigSchema.parse({}), chat);
  }, 20_000);

  afterAll(async () => {
    await app?.stop();
    await fake?.close();
  }, 20_000);

  it('is an Unknown Channel from Discord: each alert is tried once and set aside, none retried', async () => {
    type Row = { attempts: number; dead_reason: string | null };
    const rows = (): Row[] =>
      app.store.db
        .prepare("SELECT attempts, dead_reason FROM outbox WHERE target = 'discord:999999999999999999' ORDER BY id")
        .all() as Row[];
    run.write(4, { frac: 1 });
    await fake.waitFor(() => rows()[0]?.dead_reason, 10_000);
    run.write(1, { grad: 15.786 });
    await fake.waitFor(() => rows()[1]?.dead_reason, 10_000);
    expect(rows()).toEqual([
      { attempts: 1, dead_reason: 'Discord 404: Unknown Channel' },
      { attempts: 1, dead_reason: 'Discord 404: Unknown Channel' },
    ]);
    expect(fake.requestsTo('GET', /\/channels\/999999999999999999$/)).toHaveLength(2);
  }, 30_000);
});
