import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { startFakeSlack, type FakeSlack } from '../fakes/slackServer.ts';
import { ROUTED } from '../../src/store/outbox.ts';
import { learningLine, tempDir } from '../helpers.ts';
import { BIN, exited } from '../integration/cli.ts';

/** A free port on 127.0.0.1: nothing listens there until a fake is started on it. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** `bin/rlwatch start` on a run `grpo`, as a user starts it, with the chat settings in its environment. */
class Started {
  readonly root = tempDir();
  readonly db = join(this.root, 'rlwatch.db');
  private readonly log = join(this.root, 'runs', 'grpo', 'learning.log');
  private step = 0;
  child!: ChildProcess;
  stderr = '';

  constructor() {
    mkdirSync(join(this.root, 'runs', 'grpo'), { recursive: true });
    writeFileSync(this.log, '');
    this.write(30);
  }

  write(n: number, extra: { frac?: number; grad?: number } = {}): void {
    for (let i = 0; i < n; i++) appendFileSync(this.log, `${learningLine(++this.step, extra)}\n`);
  }

  start(env: Record<string, string>): this {
    // cwd is the temporary folder: no .env of the developer's is read
    this.child = spawn(BIN, ['start', join(this.root, 'runs'), '--db', this.db], {
      cwd: this.root,
      env: {
        ...process.env,
        RLWATCH_DB: undefined,
        RLWATCH_CONFIG: undefined,
        DISCORD_TOKEN: undefined,
        SLACK_BOT_TOKEN: undefined,
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    return this;
  }

  /** Rows of the outbox for chat (the terminal has its own; the engine's platform-neutral rows, routed into these, are
   * left out), read through a separate connection as any reader would. */
  outbox(): Array<{ target: string; done_at: number | null; dead_at: number | null; attempts: number }> {
    if (!existsSync(this.db)) return [];
    const conn = new Database(this.db, { readonly: true });
    try {
      conn.pragma('busy_timeout = 2000');
      return conn
        .prepare("SELECT target, done_at, dead_at, attempts FROM outbox WHERE target NOT IN ('console', ?) ORDER BY id")
        .all(ROUTED) as ReturnType<Started['outbox']>;
    } finally {
      conn.close();
    }
  }

  /** Steps stored for `reward`: what was ingested. */
  /** Each chat row's items as `kind rule`, in order. */
  items(): string[][] {
    if (!existsSync(this.db)) return [];
    const conn = new Database(this.db, { readonly: true });
    try {
      conn.pragma('busy_timeout = 2000');
      const rows = conn
        .prepare("SELECT payload FROM outbox WHERE target NOT IN ('console', ?) ORDER BY id")
        .pluck()
        .all(ROUTED) as string[];
      return rows.map((p) =>
        (JSON.parse(p) as { items: Array<{ kind: string; rule: string }> }).items.map((i) => `${i.kind} ${i.rule}`),
      );
    } finally {
      conn.close();
    }
  }

  steps(): number {
    if (!existsSync(this.db)) return 0;
    const conn = new Database(this.db, { readonly: true });
    try {
      conn.pragma('busy_timeout = 2000');
      return conn
        .prepare("SELECT count(*) FROM points p JOIN metrics m ON m.id = p.metric_id WHERE m.name = 'reward'")
        .pluck()
        .get() as number;
    } finally {
      conn.close();
    }
  }
}

async function until(what: string, cond: () => unknown, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const slackEnv = (fake: { botToken: string; appToken: string; channelId: string }, apiUrl: string) => ({
  SLACK_BOT_TOKEN: fake.botToken,
  SLACK_APP_TOKEN: fake.appToken,
  SLACK_API_URL: apiUrl,
  SLACK_CHANNEL_ID: fake.channelId,
});

describe('`rlwatch start` never waits on a chat platform', () => {
  let slack: FakeSlack | undefined;
  let discord: FakeDiscord | undefined;
  let started: Started | undefined;

  afterEach(async () => {
    if (started?.child.exitCode === null && started.child.signalCode === null) {
      started.child.kill('SIGKILL');
      await exited(started.child);
    }
    slack?.setHanging(false);
    await slack?.close();
    await discord?.close();
    slack = discord = started = undefined;
  });

  /** `rlwatch start` with Discord's settings and no Discord there yet: once it watches and said so, returns how to
   * bring the fake Discord up where its settings point. */
  async function startWithDiscordDown(): Promise<{ run: Started; discordComesUp: () => Promise<FakeDiscord> }> {
    const port = await freePort();
    const token = 'MTIz.fake.discord-token-given-before-the-fake-is-up';
    const channelId = '123456789012345678';
    const run = new Started().start({
      DISCORD_TOKEN: token,
      DISCORD_API_URL: `http://127.0.0.1:${port}/api`,
      DISCORD_CHANNEL_ID: channelId,
    });
    started = run;
    await until('the start-up', () => run.stderr.includes('watching') && run.steps() === 30);
    await until('the warning', () => run.stderr.includes('cannot reach Discord'));
    return { run, discordComesUp: () => startFakeDiscord({ port, token, channelId }) };
  }

  it('with Slack unreachable it ingests at once, says so, and delivers once Slack comes up', async () => {
    const port = await freePort();
    const tokens = { botToken: 'xoxb-1-2-unreachable', appToken: 'xapp-1-A1-2-unreachable', channelId: 'C0RLWATCH' };
    started = new Started().start(slackEnv(tokens, `http://127.0.0.1:${port}/api/`));
    await until('the start-up', () => started!.stderr.includes('watching') && started!.steps() === 30);
    await until('the warning', () => started!.stderr.includes('cannot reach Slack'));
    expect(started.stderr).toMatch(
      /warning: cannot reach Slack: .*ECONNREFUSED.*rlwatch keeps watching and retrying in the background/,
    );
    started.write(4, { frac: 1 }); // mode_collapse, ingested and announced while Slack is away
    await until('the alert in the outbox', () => started!.steps() === 34 && started!.outbox().length === 1);
    expect(started.outbox()[0]).toMatchObject({ target: 'slack:C0RLWATCH', done_at: null, dead_at: null });
    slack = await startFakeSlack({ port, ...tokens });
    await until('the delivery', () => started!.outbox()[0]?.done_at !== null, 40_000);
    expect(
      [...slack.messages.values()].filter((m) => JSON.stringify(m.blocks).includes(' mode_collapse ')),
    ).toHaveLength(1);
    expect(started.stderr).toContain('slack: connected as');
    started.child.kill('SIGTERM');
    await exited(started.child);
    expect(started.child.exitCode).toBe(0);
  }, 90_000);

  it('with Discord unreachable it ingests at once, says so, and delivers once Discord comes up', async () => {
    const { run, discordComesUp } = await startWithDiscordDown();
    run.write(4, { frac: 1 });
    await until('the alert in the outbox', () => run.steps() === 34 && run.outbox().length === 1);
    discord = await discordComesUp();
    await until('the delivery', () => run.outbox()[0]?.done_at !== null, 40_000);
    const posted = discord.channelMessages().filter((m) => JSON.stringify(m.embeds).includes(' mode_collapse '));
    expect(posted).toHaveLength(1);
    run.child.kill('SIGTERM');
    await exited(run.child);
  }, 90_000);

  it('alerts that wait out an outage behind a row already tried go as one message, in the order they changed', async () => {
    const { run, discordComesUp } = await startWithDiscordDown();
    run.write(4, { frac: 1 }); // mode_collapse: its row is tried at once, and fails
    await until('the first row tried', () => run.steps() === 34 && (run.outbox()[0]?.attempts ?? 0) >= 1);
    run.write(1, { frac: 1, grad: 15.786 }); // grad_explosion: a row of its own, behind the first
    await until('the second row', () => run.steps() === 35 && run.outbox().length === 2);
    run.write(5, { frac: 0, grad: 15.786 }); // mode_collapse resolves: it joins the second row, which waits
    await until('the resolution read', () => run.steps() === 40 && run.items()[1]?.length === 2);
    expect(run.items()).toEqual([['firing mode_collapse'], ['firing grad_explosion', 'resolved mode_collapse']]);
    discord = await discordComesUp();
    await until('the delivery', () => run.outbox().every((r) => r.done_at !== null), 40_000);
    // one post per row (the second row's two items: a card, and the first card edited with a reply in its thread)
    const posted = discord.channelMessages();
    const cards = posted.filter((m) => Array.isArray(m.embeds) && m.embeds.length > 0);
    expect(cards.map((m) => (m.embeds as Array<{ title: string }>)[0]!.title)).toEqual([
      'CRITICAL · mode_collapse resolved · grpo',
      'CRITICAL · grad_explosion firing · grpo',
    ]);
    expect(posted.filter((m) => String(m.content).startsWith('✅ CRITICAL · mode_collapse resolved'))).toHaveLength(1);
    run.child.kill('SIGTERM');
    await exited(run.child);
  }, 90_000);

  it('a refused Slack token is one clear line and exit status 1', async () => {
    slack = await startFakeSlack();
    started = new Started().start(slackEnv({ ...slack, botToken: 'xoxb-not-the-right-one' }, slack.apiUrl));
    await exited(started.child);
    expect(started.child.exitCode).toBe(1);
    expect(started.stderr).toContain(
      'rlwatch: Slack refused the token (invalid_auth): check SLACK_BOT_TOKEN and SLACK_APP_TOKEN, then start again\n',
    );
  }, 30_000);

  it('a refused Discord token is one clear line and exit status 1', async () => {
    discord = await startFakeDiscord();
    started = new Started().start({
      DISCORD_TOKEN: 'not.the.token',
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_CHANNEL_ID: discord.channelId,
    });
    await exited(started.child);
    expect(started.child.exitCode).toBe(1);
    expect(started.stderr).toContain(
      'rlwatch: Discord refused DISCORD_TOKEN (invalid token): fix it and start again\n',
    );
  }, 30_000);

  it('SIGTERM while a delivery hangs in an outage exits in under 2 s and keeps the row', async () => {
    slack = await startFakeSlack();
    started = new Started().start(slackEnv(slack, slack.apiUrl));
    await until('the connection', () => started!.stderr.includes('watching') && slack!.openSockets === 1);
    slack.setHanging(true);
    started.write(4, { frac: 1 });
    await until('a delivery in flight', () => slack!.callsTo('chat.postMessage').some((c) => c.status === 0));
    const t0 = performance.now();
    started.child.kill('SIGTERM');
    await exited(started.child);
    const ms = performance.now() - t0;
    expect(started.child.exitCode).toBe(0);
    expect(ms).toBeLessThan(2000);
    expect(started.outbox()).toMatchObject([{ target: `slack:${slack.channelId}`, done_at: null, dead_at: null }]);
  }, 60_000);
});
