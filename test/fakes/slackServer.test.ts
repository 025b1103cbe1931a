import { afterEach, describe, expect, it } from 'vitest';
import { App, LogLevel, SocketModeReceiver, webApi } from '@slack/bolt';
import { startFakeSlack, type FakeSlack } from './slackServer.ts';

const { WebClient, WebClientEvent, ErrorCode } = webApi;

/** Things to tear down after each test, in order: apps first (they own the socket), then fakes. */
const apps: App[] = [];
const fakes: FakeSlack[] = [];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop().catch(() => undefined);
  for (const fake of fakes.splice(0)) await fake.close();
});

async function fakeSlack(): Promise<FakeSlack> {
  const fake = await startFakeSlack();
  fakes.push(fake);
  return fake;
}

/** The real Bolt App in Socket Mode, pointed at the fake (the options documented in slackServer.ts). */
function boltApp(fake: FakeSlack): App {
  const app = new App({
    token: fake.botToken,
    appToken: fake.appToken,
    socketMode: true,
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
  });
  apps.push(app);
  return app;
}

const alertBlocks = (state: string) => [
  { type: 'section', block_id: 'summary', text: { type: 'mrkdwn', text: `*grpo-7b*: reward collapsed (${state})` } },
  {
    type: 'actions',
    block_id: 'alert-actions',
    elements: [
      { type: 'button', action_id: 'ack', value: 'alert-42', text: { type: 'plain_text', text: 'Acknowledge' } },
    ],
  },
];

describe('fake Slack server with the real Bolt App (Socket Mode)', () => {
  it('connects: apps.connections.open with the app token, hello, auth.test with the bot token', {
    timeout: 10_000,
  }, async () => {
    const fake = await fakeSlack();
    expect(fake.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/$/);
    const app = boltApp(fake);
    await app.start();
    expect(fake.openSockets).toBe(1);
    const open = fake.callsTo('apps.connections.open');
    expect(open).toHaveLength(1);
    expect(open[0]?.token).toBe(fake.appToken);
    const auth = await fake.waitFor(() => fake.callsTo('auth.test')[0], 2000);
    expect(auth.token).toBe(fake.botToken);
    expect(auth.status).toBe(200);

    await app.stop();
    await fake.waitForSocketClosed(2000);
    expect(fake.openSockets).toBe(0);
  });

  it('delivers a slash command, records the ack and the respond() post', { timeout: 10_000 }, async () => {
    const fake = await fakeSlack();
    const app = boltApp(fake);
    const seen: Array<Record<string, unknown>> = [];
    app.command('/run', async ({ command, ack, respond }) => {
      seen.push({ ...command });
      await ack();
      await respond({ response_type: 'ephemeral', text: `status of ${command.text.split(' ')[1] ?? '?'}: healthy` });
    });
    await app.start();

    const res = await fake.slashCommand({
      command: '/run',
      text: 'status grpo',
      userId: 'U0ALICE',
      waitForResponses: 1,
    });
    expect(res.ack.ms).toBeLessThan(3000);
    expect(res.ack.payload).toEqual({});
    expect(res.ack.type).toBe('slash_commands');
    expect(res.responses).toHaveLength(1);
    expect(res.responses[0]?.body).toMatchObject({ response_type: 'ephemeral', text: 'status of grpo: healthy' });
    expect(fake.responses).toHaveLength(1);
    expect(fake.callsTo('response_url')).toHaveLength(1);

    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      command: '/run',
      text: 'status grpo',
      user_id: 'U0ALICE',
      channel_id: fake.channelId,
      team_id: fake.teamId,
      response_url: res.responseUrl,
    });
    expect(String(seen[0]?.['response_url'])).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/respond\//);
    expect(typeof seen[0]?.['trigger_id']).toBe('string');
  });

  it('chat.postMessage then chat.update edits fake.messages in place', { timeout: 10_000 }, async () => {
    const fake = await fakeSlack();
    const app = boltApp(fake);
    await app.start();

    const posted = await app.client.chat.postMessage({
      channel: fake.channelId,
      text: 'reward collapsed',
      blocks: alertBlocks('open'),
    });
    expect(posted.ok).toBe(true);
    expect(posted.channel).toBe(fake.channelId);
    const ts = posted.ts ?? '';
    expect(ts).toMatch(/^\d+\.\d{6}$/);
    expect(posted.message?.blocks).toEqual(alertBlocks('open'));

    const call = fake.callsTo('chat.postMessage')[0];
    expect(call?.contentType).toContain('application/x-www-form-urlencoded');
    expect(call?.args['blocks']).toEqual(alertBlocks('open')); // JSON-encoded form field, decoded
    expect(call?.token).toBe(fake.botToken);

    await app.client.chat.update({
      channel: fake.channelId,
      ts,
      text: 'reward collapsed (acked)',
      blocks: alertBlocks('acked'),
    });
    const msg = fake.messages.get(ts);
    expect(msg).toMatchObject({ channel: fake.channelId, text: 'reward collapsed (acked)', edits: 1 });
    expect(msg?.blocks).toEqual(alertBlocks('acked'));
    expect(msg?.history[0]?.text).toBe('reward collapsed');
    expect(fake.messages.size).toBe(1);

    await expect(app.client.chat.update({ channel: fake.channelId, ts: '1.000000', text: 'x' })).rejects.toMatchObject({
      code: ErrorCode.PlatformError,
      data: { error: 'message_not_found' },
    });
  });

  it('files.uploadV2: getUploadURLExternal → upload (bytes stored) → completeUploadExternal', {
    timeout: 10_000,
  }, async () => {
    const fake = await fakeSlack();
    const app = boltApp(fake);
    await app.start();
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3, 255, 254]);
    const parent = await app.client.chat.postMessage({ channel: fake.channelId, text: 'alert' });

    const res = await app.client.files.uploadV2({
      channel_id: fake.channelId,
      file: bytes,
      filename: 'chart.png',
      initial_comment: 'reward over the last 500 steps',
      thread_ts: parent.ts ?? '',
    });
    expect(res.ok).toBe(true);

    const methods = fake.calls.map((c) => c.method).filter((m) => m !== 'auth.test' && m !== 'apps.connections.open');
    expect(methods).toEqual([
      'chat.postMessage',
      'files.getUploadURLExternal',
      'upload',
      'files.completeUploadExternal',
    ]);
    expect(fake.callsTo('files.getUploadURLExternal')[0]?.args).toMatchObject({
      filename: 'chart.png',
      length: String(bytes.length),
    });
    expect(fake.callsTo('upload')[0]?.contentType).toContain('multipart/form-data');

    expect(fake.uploads).toHaveLength(1);
    const up = fake.uploads[0];
    expect(up?.bytes?.equals(bytes)).toBe(true);
    expect(up).toMatchObject({
      filename: 'chart.png',
      length: bytes.length,
      completed: true,
      channelId: fake.channelId,
      initialComment: 'reward over the last 500 steps',
      threadTs: parent.ts,
      title: 'chart.png',
    });
    const completion = fake.callsTo('files.completeUploadExternal')[0]?.args;
    expect(completion?.['files']).toEqual([{ id: up?.fileId, title: 'chart.png' }]);
    const shared = [...fake.messages.values()].find((m) => m.files.includes(up?.fileId ?? ''));
    expect(shared).toMatchObject({ threadTs: parent.ts, text: 'reward over the last 500 steps' });
  });

  it('delivers a block action; the listener edits the alert in place and responds', { timeout: 10_000 }, async () => {
    const fake = await fakeSlack();
    const app = boltApp(fake);
    const clicks: Array<{ value: string | undefined; user: string; blockId: string }> = [];
    app.action('ack', async ({ ack, body, action, client, respond }) => {
      await ack();
      if (body.type !== 'block_actions' || action.type !== 'button') throw new Error('unexpected action');
      clicks.push({ value: action.value, user: body.user.id, blockId: body.actions[0]?.block_id ?? '' });
      await client.chat.update({
        channel: body.channel?.id ?? '',
        ts: body.message?.ts ?? '',
        text: `acked by <@${body.user.id}>`,
        blocks: alertBlocks(`acked by ${body.user.id}`),
      });
      await respond({ response_type: 'ephemeral', replace_original: false, text: 'Acknowledged.' });
    });
    await app.start();
    const posted = await app.client.chat.postMessage({
      channel: fake.channelId,
      text: 'reward collapsed',
      blocks: alertBlocks('open'),
    });
    const ts = posted.ts ?? '';

    const res = await fake.blockAction({ actionId: 'ack', userId: 'U0BOB', messageTs: ts, waitForResponses: 1 });
    expect(res.ack.ms).toBeLessThan(3000);
    expect(res.ack.type).toBe('interactive');
    expect(res.payload).toMatchObject({
      type: 'block_actions',
      user: { id: 'U0BOB' },
      container: { type: 'message', message_ts: ts, channel_id: fake.channelId },
      channel: { id: fake.channelId },
      message: { ts, text: 'reward collapsed' },
      actions: [{ action_id: 'ack', block_id: 'alert-actions', value: 'alert-42', type: 'button' }],
    });
    expect(clicks).toEqual([{ value: 'alert-42', user: 'U0BOB', blockId: 'alert-actions' }]);
    expect(res.responses[0]?.body).toMatchObject({ text: 'Acknowledged.', replace_original: false });

    const msg = fake.messages.get(ts);
    expect(msg).toMatchObject({ text: 'acked by <@U0BOB>', edits: 1 });
    expect(msg?.blocks).toEqual(alertBlocks('acked by U0BOB'));
    // listener clients carry the team id (App.js passes teamId to the pooled WebClient)
    expect(fake.callsTo('chat.update')[0]?.args['team_id']).toBe(fake.teamId);
  });

  it("rejects an interaction the app never acks (Slack's 3 s rule)", { timeout: 10_000 }, async () => {
    const fake = await fakeSlack();
    const app = boltApp(fake);
    app.command('/slow', async () => {
      /* never acks */
    });
    await app.start();
    await expect(fake.slashCommand({ command: '/slow', ackTimeoutMs: 300 })).rejects.toThrow(/not acked within 300 ms/);
  });

  describe('429 with Retry-After: 1 on chat.postMessage', () => {
    it('is retried by a WebClient whose retryConfig allows a retry', { timeout: 10_000 }, async () => {
      const fake = await fakeSlack();
      const client = new WebClient(fake.botToken, {
        slackApiUrl: fake.apiUrl,
        logLevel: LogLevel.ERROR,
        retryConfig: { retries: 1, minTimeout: 10, maxTimeout: 10 },
      });
      let rateLimited: number | undefined;
      client.on(WebClientEvent.RATE_LIMITED, (sec: number) => {
        rateLimited = sec;
      });
      fake.failNext('chat.postMessage', { status: 429, retryAfter: 1 });
      const t0 = Date.now();
      const res = await client.chat.postMessage({ channel: fake.channelId, text: 'hello' });
      expect(res.ok).toBe(true);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
      expect(rateLimited).toBe(1);
      expect(fake.callsTo('chat.postMessage').map((c) => c.status)).toEqual([429, 200]);
      expect(fake.messages.size).toBe(1);
    });

    it('with retryConfig {retries: 0} still sleeps Retry-After, then rejects without a retry', {
      timeout: 10_000,
    }, async () => {
      const fake = await fakeSlack();
      const app = boltApp(fake);
      fake.failNext('chat.postMessage', { status: 429, retryAfter: 1 });
      const t0 = Date.now();
      const err: unknown = await app.client.chat
        .postMessage({ channel: fake.channelId, text: 'hello' })
        .catch((e: unknown) => e);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/A rate limit was exceeded .*retry-after: 1/);
      expect((err as { code?: unknown }).code).toBeUndefined();
      expect(fake.callsTo('chat.postMessage')).toHaveLength(1);
    });

    it('is rejected at once with rejectRateLimitedCalls: true', { timeout: 10_000 }, async () => {
      const fake = await fakeSlack();
      const client = new WebClient(fake.botToken, {
        slackApiUrl: fake.apiUrl,
        logLevel: LogLevel.ERROR,
        retryConfig: { retries: 3 },
        rejectRateLimitedCalls: true,
      });
      fake.failNext('chat.postMessage', { status: 429, retryAfter: 1 });
      const t0 = Date.now();
      await expect(client.chat.postMessage({ channel: fake.channelId, text: 'hello' })).rejects.toMatchObject({
        code: ErrorCode.RateLimitedError,
        retryAfter: 1,
      });
      expect(Date.now() - t0).toBeLessThan(900);
      expect(fake.callsTo('chat.postMessage')).toHaveLength(1);
      // the queue is not paused: the next call goes through immediately
      await expect(client.chat.postMessage({ channel: fake.channelId, text: 'again' })).resolves.toMatchObject({
        ok: true,
      });
    });
  });

  it('setDown(true) makes every Web API call answer 503; failNext injects platform and HTTP errors', {
    timeout: 10_000,
  }, async () => {
    const fake = await fakeSlack();
    const app = boltApp(fake);
    await app.start();

    fake.setDown(true);
    await expect(app.client.chat.postMessage({ channel: fake.channelId, text: 'down' })).rejects.toMatchObject({
      code: ErrorCode.HTTPError,
      statusCode: 503,
    });
    await expect(app.client.auth.test()).rejects.toMatchObject({ statusCode: 503 });
    fake.setDown(false);
    await expect(app.client.chat.postMessage({ channel: fake.channelId, text: 'up' })).resolves.toMatchObject({
      ok: true,
    });

    fake.failNext('chat.postMessage', { error: 'internal_error' });
    await expect(app.client.chat.postMessage({ channel: fake.channelId, text: 'x' })).rejects.toMatchObject({
      code: ErrorCode.PlatformError,
      data: { error: 'internal_error' },
    });
    fake.failNext('chat.postMessage', { status: 500 });
    await expect(app.client.chat.postMessage({ channel: fake.channelId, text: 'x' })).rejects.toMatchObject({
      code: ErrorCode.HTTPError,
      statusCode: 500,
    });
    expect(fake.callsTo('chat.postMessage').map((c) => c.status)).toEqual([503, 200, 200, 500]);
    expect(fake.callsTo('chat.postMessage').map((c) => c.error)).toEqual([
      'service_unavailable',
      undefined,
      'internal_error',
      'internal_error',
    ]);
    expect([...fake.messages.values()].map((m) => m.text)).toEqual(['up']);
  });

  it('app.start() rejects while Slack is down (HTTP errors are unrecoverable for apps.connections.open)', {
    timeout: 10_000,
  }, async () => {
    const fake = await fakeSlack();
    fake.setDown(true);
    // botId + botUserId: no auth.test at construction, whose rejection would otherwise go unhandled
    const app = new App({
      token: fake.botToken,
      appToken: fake.appToken,
      botId: fake.botId,
      botUserId: fake.botUserId,
      socketMode: true,
      logLevel: LogLevel.ERROR,
      clientOptions: fake.clientOptions(),
    });
    apps.push(app);
    await expect(app.start()).rejects.toMatchObject({ code: ErrorCode.HTTPError, statusCode: 503 });
    expect(fake.callsTo('auth.test')).toHaveLength(0);
    fake.setDown(false);
    await app.start();
    expect(fake.openSockets).toBe(1);
    expect(fake.callsTo('apps.connections.open').map((c) => c.status)).toEqual([503, 200]);
  });

  it('works with an explicit SocketModeReceiver (no auto-reconnect, short ping timeout)', {
    timeout: 10_000,
  }, async () => {
    const fake = await fakeSlack();
    const receiver = new SocketModeReceiver({
      appToken: fake.appToken,
      logLevel: LogLevel.ERROR,
      autoReconnectEnabled: false,
      clientPingTimeout: 600,
      installerOptions: { clientOptions: fake.clientOptions() },
    });
    const app = new App({
      token: fake.botToken,
      receiver,
      logLevel: LogLevel.ERROR,
      clientOptions: fake.clientOptions(),
    });
    apps.push(app);
    app.command('/run', async ({ ack }) => {
      await ack({ response_type: 'ephemeral', text: 'ok' });
    });
    await app.start();
    // several client pings (every 200 ms) are answered by ws' auto-pong: the socket stays up
    await new Promise((r) => setTimeout(r, 900));
    expect(fake.openSockets).toBe(1);
    const res = await fake.slashCommand({ command: '/run', text: 'help' });
    expect(res.ack.payload).toEqual({ response_type: 'ephemeral', text: 'ok' });
    expect(fake.socketConnections).toBe(1);

    await app.stop();
    await fake.close();
    expect(fake.openSockets).toBe(0);
  });

  it('answers users.info, conversations.info, usergroups.users.list and chat.postEphemeral', {
    timeout: 10_000,
  }, async () => {
    const fake = await startFakeSlack({
      usergroups: { S0ONCALL: ['U0ALICE', 'U0BOB'] },
      users: { U0ALICE: { name: 'alice' } },
    });
    fakes.push(fake);
    const client = new WebClient(fake.botToken, { ...fake.clientOptions(), logLevel: LogLevel.ERROR });
    await expect(client.users.info({ user: 'U0ALICE' })).resolves.toMatchObject({
      user: { id: 'U0ALICE', name: 'alice' },
    });
    await expect(client.conversations.info({ channel: fake.channelId })).resolves.toMatchObject({
      channel: { id: fake.channelId, is_member: true },
    });
    await expect(client.usergroups.users.list({ usergroup: 'S0ONCALL' })).resolves.toMatchObject({
      users: ['U0ALICE', 'U0BOB'],
    });
    const eph = await client.chat.postEphemeral({ channel: fake.channelId, user: 'U0ALICE', text: 'only you' });
    expect(eph.message_ts).toMatch(/^\d+\.\d{6}$/);
    expect(fake.ephemerals).toMatchObject([{ user: 'U0ALICE', text: 'only you' }]);
    const wrong = new WebClient(fake.appToken, { ...fake.clientOptions(), logLevel: LogLevel.ERROR });
    await expect(wrong.chat.postMessage({ channel: fake.channelId, text: 'x' })).rejects.toMatchObject({
      data: { error: 'not_allowed_token_type' },
    });
  });
});
