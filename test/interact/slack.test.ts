import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { startFakeSlack, type FakeMessage, type FakeSlack } from '../fakes/slackServer.ts';
import { WatchedRun } from './watchedRun.ts';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const ANA = 'U0ANA';
const BO = 'U0BO';

describe('Slack, end to end: the real Bolt App in Socket Mode against a local fake', () => {
  let fake: FakeSlack;
  let app: App;
  const run = new WatchedRun();
  const json = (m: FakeMessage): string => JSON.stringify(m.blocks);
  const alertPosts = (rule: string): FakeMessage[] =>
    [...fake.messages.values()].filter((m) => m.blocks.length > 0 && json(m).includes(` ${rule} `));

  beforeAll(async () => {
    fake = await startFakeSlack();
    run.write(30);
    const config = ConfigSchema.parse({ slack: { allow: { users: [ANA] } } });
    app = await run.start(config, {
      slack: {
        botToken: fake.botToken,
        appToken: fake.appToken,
        apiUrl: fake.apiUrl,
        channel: fake.channelId,
        retries: 0,
      },
    });
  }, 20_000);

  afterAll(async () => {
    await app?.stop();
    await fake?.close();
  }, 20_000);

  it('connects over the socket (outbound only)', () => {
    expect(fake.callsTo('auth.test')).toHaveLength(1);
    expect(fake.callsTo('apps.connections.open')).toHaveLength(1);
    expect(fake.openSockets).toBe(1);
  });

  it("posts a collapse as Block Kit with fields and buttons, and uploads its chart into the alert's thread", async () => {
    run.write(4, { frac: 1 });
    const msg = await fake.waitFor(() => alertPosts('mode_collapse')[0], 10_000);
    const blocks = msg.blocks as Array<{
      type: string;
      text?: { text: string };
      fields?: Array<{ text: string }>;
      elements?: Array<{ action_id: string; text: { text: string } }>;
    }>;
    expect(blocks[0]).toMatchObject({ type: 'header', text: { text: 'CRITICAL · mode_collapse firing · grpo' } });
    expect(json(msg)).toContain('frac_zero_std 1 > 0.8 for 3 steps');
    expect(blocks.find((b) => b.type === 'section' && b.fields)?.fields?.map((f) => f.text.split('\n')[0])).toEqual([
      '*Run*',
      '*Metric*',
      '*Step*',
      '*Epoch*',
      '*Alert*',
      '*Try*',
    ]);
    const actions = blocks.find((b) => b.type === 'actions')!;
    expect(actions.elements!.map((e) => e.text.text)).toEqual(['Ack', 'Mute run 1h', 'Mute rule 24h']);
    // in the alert's thread: one post per alert in the channel, not two
    const upload = await fake.waitFor(
      () => fake.uploads.find((u) => u.completed && u.filename.startsWith('chart-')),
      10_000,
    );
    expect(upload.bytes?.subarray(0, 8).equals(PNG)).toBe(true);
    expect(upload.channelId).toBe(fake.channelId);
    expect(upload.threadTs).toBe(msg.ts);
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    expect(upload.initialComment).toBe(`Chart of #${alert.id} frac_zero_std · grpo`);
    const shared = [...fake.messages.values()].find((m) => m.files.includes(upload.fileId))!;
    expect(shared).toMatchObject({ channel: fake.channelId, threadTs: msg.ts, source: 'files.completeUploadExternal' });
    expect(Number(shared.ts)).toBeGreaterThan(Number(msg.ts));
  });

  it('answers /run status within 3 s, to the caller alone', async () => {
    const r = await fake.slashCommand({ command: '/run', text: 'status grpo', userId: BO, waitForResponses: 1 });
    expect(r.ack.ms).toBeLessThan(3000);
    const body = r.responses[0]!.body as { response_type: string; text: string };
    expect(body.response_type).toBe('ephemeral');
    expect(body.text).toBe(`grpo: step ${run.step}, epoch ${Number((run.step / 100).toFixed(2))}`);
    expect(JSON.stringify(r.responses[0]!.body)).toContain('*frac_zero_std*\\n1');
  });

  it('answers /reward history and, posted to the channel, uploads a valid PNG chart', async () => {
    const uploads = fake.uploads.length;
    const r = await fake.slashCommand({ command: '/reward', text: 'history grpo', userId: BO, waitForResponses: 1 });
    expect((r.responses[0]!.body as { text: string }).text).toBe(
      `reward of grpo: ${run.step} points, steps 1..${run.step}`,
    );
    await fake.blockAction({ actionId: 'share', ephemeral: r.responses[0]!, userId: BO });
    const upload = await fake.waitFor(
      () => fake.uploads.slice(uploads).find((u) => u.completed && u.filename === 'chart.png'),
      10_000,
    );
    expect(upload.bytes?.subarray(0, 8).equals(PNG)).toBe(true);
  });

  it('answers a wrong argument with a one-line usage only the caller sees', async () => {
    const r = await fake.slashCommand({ command: '/mute', text: 'grpo', userId: ANA, waitForResponses: 1 });
    expect(r.responses[0]!.body).toMatchObject({
      response_type: 'ephemeral',
      text: 'usage: /mute [run] [rule] [info|warning|critical] &lt;duration> [reason]: duration is required',
    });
    const unknown = await fake.slashCommand({ command: '/run', text: 'stats', userId: ANA, waitForResponses: 1 });
    expect(unknown.responses[0]!.body).toMatchObject({
      response_type: 'ephemeral',
      text: 'usage: /run status [run]\nusage: /run list\nusage: /run logs [run] [lines]\nusage: /run report [run] [since]\nusage: /run compare &lt;a> &lt;b> [metric]',
    });
  });

  it('a write command from a user without the right is refused, only to them', async () => {
    const r = await fake.slashCommand({ command: '/mute', text: 'grpo 2h', userId: BO, waitForResponses: 1 });
    expect(r.responses[0]!.body).toMatchObject({ response_type: 'ephemeral' });
    expect((r.responses[0]!.body as { text: string }).text).toMatch(/^You may not use \/mute/);
    expect(app.store.silences.active(Date.now())).toEqual([]);
  });

  it('an Ack click by an allowed user acks and updates the message; another user is refused', async () => {
    const msg = alertPosts('mode_collapse')[0]!;
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const refused = await fake.blockAction({
      actionId: `ack:${alert.id}`,
      value: `ack:${alert.id}`,
      userId: BO,
      messageTs: msg.ts,
      waitForResponses: 1,
    });
    expect(refused.responses[0]!.body).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    expect(app.store.alerts.byId(alert.id)?.acked_by).toBeNull();
    const acked = await fake.blockAction({
      actionId: `ack:${alert.id}`,
      value: `ack:${alert.id}`,
      userId: ANA,
      messageTs: msg.ts,
      waitForResponses: 1,
    });
    // the clicker is told what the click did, and only they are
    expect(acked.responses[0]!.body).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    expect((acked.responses[0]!.body as { text: string }).text).toMatch(
      new RegExp(`^Acked #${alert.id} mode_collapse \\(frac_zero_std\\) by `),
    );
    const edited = await fake.waitFor(
      () => (json(fake.messages.get(msg.ts)!).includes(`Acked by <@${ANA}>`) ? fake.messages.get(msg.ts) : null),
      10_000,
    );
    expect(app.store.alerts.byId(alert.id)?.acked_by).toBe(`<@${ANA}>`);
    // the Ack button is gone once acked; the mutes remain
    expect(json(edited!)).not.toContain(`"action_id":"ack:${alert.id}"`);
    expect(json(edited!)).toContain(`"action_id":"muteRun:${alert.id}"`);
  });

  it('a Mute rule 24h click is answered to the clicker with the mute it set', async () => {
    const msg = alertPosts('mode_collapse')[0]!;
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const r = await fake.blockAction({
      actionId: `muteRule:${alert.id}`,
      value: `muteRule:${alert.id}`,
      userId: ANA,
      messageTs: msg.ts,
      waitForResponses: 1,
    });
    const mute = app.store.silences.active(Date.now()).find((m) => m.rule === 'mode_collapse')!;
    expect(mute).toMatchObject({ run: 'grpo', rule: 'mode_collapse' });
    expect(r.responses[0]!.body).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    expect((r.responses[0]!.body as { text: string }).text).toMatch(
      new RegExp(`^Muted for 1d\\n#${mute.id} run grpo, rule mode_collapse ending in 1 d by `),
    );
    app.store.silences.end(mute.id, Date.now()); // the alerts below go on unmuted
  });

  it('the resolution updates the same message, not a new one', async () => {
    const msg = alertPosts('mode_collapse')[0]!;
    run.write(4, { frac: 0 });
    await fake.waitFor(() => json(fake.messages.get(msg.ts)!).includes('Resolved at step'), 10_000);
    expect(alertPosts('mode_collapse')).toHaveLength(1);
  });

  it("the resolution also replies in the alert's thread; neither the click nor the edits uploaded the chart again", async () => {
    const msg = alertPosts('mode_collapse')[0]!;
    const reply = await fake.waitFor(
      () => [...fake.messages.values()].find((m) => m.threadTs === msg.ts && m.source === 'chat.postMessage'),
      10_000,
    );
    expect(reply).toMatchObject({ source: 'chat.postMessage', channel: fake.channelId, blocks: [] });
    expect(reply.text).toMatch(
      /^✅ CRITICAL · mode_collapse resolved · grpo: Resolved at step \d+: frac_zero_std 0: back past/,
    );
    // one chart upload for the alert (at its post): the Ack click and the resolution edited the message only
    expect(fake.uploads.filter((u) => u.filename.startsWith('chart-'))).toHaveLength(1);
    expect(fake.callsTo('chat.update').length).toBeGreaterThanOrEqual(2);
  });

  it('a 429 and an outage lose nothing and duplicate nothing', async () => {
    fake.failNext('chat.postMessage', { status: 429, retryAfter: 1 });
    run.write(1, { grad: 15.786 });
    await fake.waitFor(() => alertPosts('grad_explosion').length === 1, 10_000);
    expect(fake.callsTo('chat.postMessage').filter((c) => c.status === 429)).toHaveLength(1);
    fake.setDown(true);
    run.write(5, { grad: 0.05 });
    run.write(1, { grad: 20 });
    const target = `slack:${fake.channelId}`;
    await fake.waitFor(() => app.store.outbox.pending(target).some((r) => r.attempts >= 2), 10_000);
    fake.setDown(false);
    await fake.waitFor(() => app.store.outbox.pending(target).length === 0, 10_000);
    const posts = alertPosts('grad_explosion');
    expect(posts).toHaveLength(2);
    const [first, second] = posts.sort((x, y) => Number(x.ts) - Number(y.ts));
    expect(json(first!)).toContain('Resolved at step');
    expect(json(second!)).toContain('grad_norm 20 > 10');
  }, 30_000);
});
