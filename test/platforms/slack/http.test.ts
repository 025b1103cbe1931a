import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackBot } from '../../../src/platforms/slack/bot.ts';
import { ConfigSchema } from '../../../src/config/schema.ts';
import type { Log } from '../../../src/lib/log.ts';
import { slack } from '../../../src/platforms/slack/index.ts';
import { sectionOf } from '../../../src/platforms/platform.ts';
import { SqliteAsyncStore } from '../../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../../src/store/sqlite/store.ts';
import { freshStore } from '../../fixtures/pipeline.ts';
import { startFakeSlack, type FakeSlack } from '../../fakes/slackServer.ts';

const SECRET = 'test-signing-secret';

/** A free port on 127.0.0.1 for Bolt's HTTP receiver. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("Slack over Bolt's HTTP receiver, with the signing secret; requests from the future and replays refused", () => {
  let fake: FakeSlack;
  let store: Store;
  let bot: SlackBot;
  let port: number;
  let responses: Server;
  const answered: Array<Record<string, unknown>> = [];
  const warnings: string[] = [];
  let responseUrl: string;

  beforeAll(async () => {
    fake = await startFakeSlack();
    ({ store } = freshStore());
    store.runs.ensure('grpo', '/runs/grpo');
    responses = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        answered.push(JSON.parse(body) as Record<string, unknown>);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => responses.listen(0, '127.0.0.1', r));
    responseUrl = `http://127.0.0.1:${(responses.address() as AddressInfo).port}/respond`;
    port = await freePort();
    const config = ConfigSchema.parse({ slack: { mode: 'http', port } });
    const log: Log = { info: () => {}, warn: (m) => warnings.push(m) };
    bot = new SlackBot({
      botToken: fake.botToken,
      signingSecret: SECRET,
      apiUrl: fake.apiUrl,
      channel: fake.channelId,
      store: new SqliteAsyncStore(store),
      section: sectionOf(config, slack),
      log,
      retries: 0,
    });
    await bot.start();
  }, 20_000);

  afterAll(async () => {
    await bot?.stop();
    store?.close();
    responses?.closeAllConnections();
    await new Promise<void>((r) => responses.close(() => r()));
    await fake?.close();
  }, 20_000);

  const post = (body: string, signature?: string): Promise<Response> => {
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = signature ?? `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`;
    return fetch(`http://127.0.0.1:${port}/slack/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-signature': sig,
        'x-slack-request-timestamp': ts,
      },
      body,
    });
  };
  const command = (text: string): string =>
    new URLSearchParams({
      command: '/run',
      text,
      user_id: 'U1',
      user_name: 'ana',
      channel_id: fake.channelId,
      team_id: fake.teamId,
      api_app_id: fake.appId,
      response_url: responseUrl,
      trigger_id: '1.2.3',
      token: 'legacy',
    }).toString();

  it('answers a signed slash command through the response_url', async () => {
    const res = await post(command('list'));
    expect(res.status).toBe(200);
    for (let i = 0; i < 100 && answered.length === 0; i++) await sleep(20);
    expect(answered[0]).toMatchObject({ response_type: 'ephemeral', text: '1 run' });
  });

  it('refuses a request whose signature does not match', async () => {
    const before = answered.length;
    const res = await post(command('list'), 'v0=0000');
    expect(res.status).toBe(401);
    await sleep(100);
    expect(answered.length).toBe(before);
  });

  /** A slash command `/run list` as Slack signs it, stamped `ts` (seconds); `nonce` makes the body unique. */
  const signed = (ts: number, nonce: string) => {
    const body = new URLSearchParams({
      command: '/run',
      text: 'list',
      user_id: 'U1',
      user_name: 'ana',
      channel_id: fake.channelId,
      team_id: fake.teamId,
      api_app_id: fake.appId,
      response_url: `${responseUrl}?${nonce}`,
      trigger_id: nonce,
      token: 'legacy',
    }).toString();
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-signature': `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
      'x-slack-request-timestamp': String(ts),
    };
    return { body, headers };
  };
  const postSigned = (r: { body: string; headers: Record<string, string> }): Promise<Response> =>
    fetch(`http://127.0.0.1:${port}/slack/events`, { method: 'POST', headers: r.headers, body: r.body });
  const answers = async (n: number): Promise<void> => {
    for (let i = 0; i < 150 && answered.length < n; i++) await sleep(20);
  };
  const now = (): number => Math.floor(Date.now() / 1000);

  it('answers a signed request stamped now, and one a little ahead of the clock (skew)', async () => {
    const before = answered.length;
    expect((await postSigned(signed(now(), 'a'))).status).toBe(200);
    expect((await postSigned(signed(now() + 30, 'b'))).status).toBe(200);
    await answers(before + 2);
    expect(answered.slice(before).map((a) => a.text)).toEqual(['1 run', '1 run']);
  });

  it('refuses a correctly signed request stamped 10 minutes ahead, and one 10 minutes old', async () => {
    const before = answered.length;
    expect((await postSigned(signed(now() + 600, 'future'))).status).toBe(401);
    expect((await postSigned(signed(now() - 600, 'past'))).status).toBe(401);
    await sleep(200);
    expect(answered.length).toBe(before);
  });

  it('refuses an exact replay of a signed request it answered', async () => {
    const once = signed(now(), 'replayed');
    const before = answered.length;
    expect((await postSigned(once)).status).toBe(200);
    await answers(before + 1);
    expect((await postSigned(once)).status).toBe(401);
    await sleep(200);
    expect(answered.length).toBe(before + 1);
    expect(warnings.some((w) => w.includes('a replay'))).toBe(true);
  });

  it('a signature is remembered only once checked: a tampered body sent first with it does not block the real request', async () => {
    const real = signed(now(), 'tampered-first');
    const before = answered.length;
    expect((await postSigned({ ...real, body: real.body.replace('text=list', 'text=status') })).status).toBe(401);
    expect((await postSigned(real)).status).toBe(200);
    await answers(before + 1);
    expect(answered.length).toBe(before + 1);
  });
});
