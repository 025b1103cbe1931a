import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackBot } from '../../../src/platforms/slack/bot.ts';
import { ConfigSchema } from '../../../src/config/schema.ts';
import { silentLog } from '../../../src/log.ts';
import { slack } from '../../../src/platforms/slack/index.ts';
import { sectionOf } from '../../../src/platforms/platform.ts';
import { SqliteAsyncStore } from '../../../src/store/sqliteAsync.ts';
import { Store } from '../../../src/store/store.ts';
import { startFakeSlack, type FakeSlack } from '../../fakes/slackServer.ts';
import { tempDir } from '../../helpers.ts';

const SECRET = 'test-signing-secret';

/** A free port on 127.0.0.1 for Bolt's HTTP receiver. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("Slack over Bolt's HTTP receiver, with the signing secret", () => {
  let fake: FakeSlack;
  let store: Store;
  let bot: SlackBot;
  let port: number;
  let responses: Server;
  const answered: Array<Record<string, unknown>> = [];
  let responseUrl: string;

  beforeAll(async () => {
    fake = await startFakeSlack();
    store = Store.open(join(tempDir(), 'rlwatch.db'));
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
    bot = new SlackBot({ botToken: fake.botToken, signingSecret: SECRET, apiUrl: fake.apiUrl, channel: fake.channelId, store: new SqliteAsyncStore(store), section: sectionOf(config, slack), log: silentLog, retries: 0 });
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
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-signature': sig, 'x-slack-request-timestamp': ts },
      body,
    });
  };
  const command = (text: string): string =>
    new URLSearchParams({ command: '/run', text, user_id: 'U1', user_name: 'ana', channel_id: fake.channelId, team_id: fake.teamId, api_app_id: fake.appId, response_url: responseUrl, trigger_id: '1.2.3', token: 'legacy' }).toString();

  it('answers a signed slash command through the response_url', async () => {
    const res = await post(command('list'));
    expect(res.status).toBe(200);
    for (let i = 0; i < 100 && answered.length === 0; i++) await sleep(20);
    expect(answered[0]).toMatchObject({ response_type: 'in_channel', text: '1 run' });
  });

  it('refuses a request whose signature does not match', async () => {
    const before = answered.length;
    const res = await post(command('list'), 'v0=0000');
    expect(res.status).toBe(401);
    await sleep(100);
    expect(answered.length).toBe(before);
  });
});
