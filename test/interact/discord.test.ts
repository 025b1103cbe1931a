import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { startFakeDiscord, type FakeDiscord, type FakeMessage, type RecordedRequest } from '../fakes/discordServer.ts';
import { WatchedRun } from './watchedRun.ts';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const ana = { id: '111111111111111111', username: 'ana', globalName: 'Ana Lima' };
const bo = { id: '222222222222222222', username: 'bo' };

describe('Discord, end to end: the real discord.js Client against a local fake', () => {
  let fake: FakeDiscord;
  let app: App;
  const run = new WatchedRun();
  const alertMessages = (): FakeMessage[] =>
    fake.channelMessages().filter((m) => m.embeds.length > 0 && m.interactionId === null);
  const titles = (m: FakeMessage): string[] => m.embeds.map((e) => String((e as { title?: string }).title));
  /** every request that carried a file: each is a chart rendered and uploaded */
  const uploads = (): number => fake.requests.filter((r) => r.files.length > 0).length;

  beforeAll(async () => {
    fake = await startFakeDiscord();
    run.write(30);
    const config = ConfigSchema.parse({ discord: { allow: { users: [ana.id] } } });
    app = await run.start(config, {
      discord: { token: fake.token, apiUrl: fake.apiUrl, guildId: fake.guildId, channel: fake.channelId, retries: 0 },
    });
  }, 20_000);

  afterAll(async () => {
    await app?.stop();
    await fake?.close();
  }, 20_000);

  it('connects and registers the command tree as guild commands with subcommands and autocomplete', () => {
    const names = fake.commands.map((c) => c.name).sort();
    expect(names).toEqual(['ack', 'alerts', 'examples', 'files', 'mute', 'mutes', 'reward', 'run', 'unmute']);
    const run = fake.commands.find((c) => c.name === 'run') as unknown as {
      options: Array<{ name: string; type: number; options: Array<{ name: string; autocomplete?: boolean }> }>;
    };
    expect(run.options.map((o) => [o.name, o.type])).toEqual([
      ['status', 1],
      ['list', 1],
      ['logs', 1],
      ['report', 1],
      ['compare', 1],
    ]);
    expect(run.options[0]!.options[0]).toMatchObject({ name: 'run', autocomplete: true });
    expect(
      fake.requestsTo('PUT', new RegExp(`/applications/${fake.applicationId}/guilds/${fake.guildId}/commands`)),
    ).toHaveLength(1);
  });

  it('posts a collapse appended to the watched run as an embed with fields and buttons, and then attaches its PNG chart', async () => {
    run.write(4, { frac: 1 });
    const msg = await fake.waitFor(
      () => alertMessages().find((m) => titles(m).some((t) => t.includes('mode_collapse'))),
      10_000,
    );
    const collapse = (m: FakeMessage) =>
      m.embeds.find((e) => String((e as { title?: string }).title).includes('mode_collapse')) as {
        title: string;
        description: string;
        fields: Array<{ name: string; value: string }>;
        image?: { url: string };
        color: number;
      };
    // the post goes out without waiting for the chart to be drawn
    const post = fake.requests.find(
      (r) => r.method === 'POST' && JSON.stringify(r.body).includes('mode_collapse firing'),
    )!;
    expect(post.files).toEqual([]);
    const embed = collapse(msg);
    expect(embed.title).toBe('CRITICAL · mode_collapse firing · grpo');
    expect(embed.description).toContain('frac_zero_std 1 > 0.8 for 3 steps');
    expect(embed.fields.map((f) => f.name)).toEqual(['Run', 'Metric', 'Step', 'Epoch', 'Alert', 'Try']);
    expect(embed.fields[2]!.value).toBe('33');
    const buttons = (
      msg.components as Array<{ components: Array<{ custom_id: string; label: string; disabled?: boolean }> }>
    ).flatMap((r) => r.components);
    expect(buttons.map((b) => b.label)).toEqual(expect.arrayContaining(['Ack', 'Mute run 1h', 'Mute rule 24h']));
    // its chart follows, by an edit of the same message
    const charted = await fake.waitFor(
      () => (fake.messages.get(msg.id)!.attachments.length > 0 ? fake.messages.get(msg.id)! : null),
      10_000,
    );
    expect(collapse(charted).image?.url).toMatch(/^attachment:\/\/chart-\d+\.png$/);
    const chart = charted.attachments.find((a) => `attachment://${a.filename}` === collapse(charted).image?.url);
    expect(chart?.data.subarray(0, 8).equals(PNG)).toBe(true);
    expect(collapse(charted).description).toBe(embed.description);
  });

  it('answers /run status with the latest values', async () => {
    const out = await fake.command({ name: 'run', subcommand: 'status', options: { run: 'grpo' }, user: bo });
    expect(out.callback?.type).toBe(4);
    const embed = (
      out.callback!.data as { embeds: Array<{ title: string; fields: Array<{ name: string; value: string }> }> }
    ).embeds[0]!;
    expect(embed.title).toBe(`grpo: step ${run.step}, epoch ${Number((run.step / 100).toFixed(2))}`);
    expect(embed.fields.find((f) => f.name === 'frac_zero_std')?.value).toBe('1');
  });

  it('answers /reward history with a chart that is a valid PNG', async () => {
    const out = await fake.command({ name: 'reward', subcommand: 'history', options: { metric: 'reward' }, user: bo });
    expect(out.callback?.type).toBe(5); // deferred while the chart renders
    await fake.waitFor(() => out.edits.length > 0, 10_000);
    const file = out.edits[0]!.files.find((f) => f.name === 'chart.png');
    expect(file?.data.subarray(0, 8).equals(PNG)).toBe(true);
    expect(JSON.stringify(out.edits[0]!.body)).toContain(`reward of grpo: ${run.step} points`);
  });

  it('a slow command that fails after "thinking" answers only the caller', async () => {
    const out = await fake.command({
      name: 'reward',
      subcommand: 'history',
      options: { metric: 'accuracy' },
      user: bo,
    });
    expect(out.callback?.type).toBe(5);
    await fake.waitFor(() => out.followUps.length > 0, 10_000);
    expect(out.originalDeleted).toBe(true);
    expect(out.followUps[0]!.body).toMatchObject({ flags: 64 });
    expect(JSON.stringify(out.followUps[0]!.body)).toContain("run 'grpo' has no metric 'accuracy'");
  });

  it('suggests run and metric names as the user types', async () => {
    const choices = await fake.autocomplete({
      name: 'reward',
      subcommand: 'history',
      focused: { name: 'metric', value: 'entr' },
      options: { run: 'grpo' },
      user: bo,
    });
    expect(choices).toEqual([{ name: 'entropy', value: 'entropy' }]);
  });

  it('answers a bad argument with an ephemeral one-line usage', async () => {
    const out = await fake.command({ name: 'mute', options: { run: 'grpo', duration: 'soon' }, user: ana });
    expect(out.callback?.data).toMatchObject({ flags: 64 });
    expect((out.callback!.data as { content: string }).content).toBe(
      "'soon' is not a duration: use e.g. 30m, 2h or 1d",
    );
  });

  it('an Ack click by an allowed user acks and edits the message in place; another user is refused', async () => {
    const msg = alertMessages().find((m) => titles(m).some((t) => t.includes('mode_collapse')))!;
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const refused = await fake.click({ customId: `ack:${alert.id}`, messageId: msg.id, user: bo });
    expect(refused.callback?.data).toMatchObject({ flags: 64 });
    expect(app.store.alerts.byId(alert.id)?.acked_by).toBeNull();
    const out = await fake.click({ customId: `ack:${alert.id}`, messageId: msg.id, user: ana });
    expect(out.callback?.type).toBe(7);
    // recorded by username (audit), shown by the name Discord shows (her display name: she has no nickname)
    expect(app.store.alerts.byId(alert.id)).toMatchObject({ acked_by: '@ana', acked_by_name: 'Ana Lima' });
    const edited = fake.messages.get(msg.id)!;
    const embed = edited.embeds.find((e) => String((e as { title?: string }).title).includes('mode_collapse')) as {
      description: string;
    };
    expect(embed.description).toContain('Acked by Ana Lima');
    const ack = (
      edited.components as Array<{ components: Array<{ custom_id: string; disabled?: boolean; label: string }> }>
    )
      .flatMap((r) => r.components)
      .find((b) => b.custom_id === `ack:${alert.id}`);
    expect(ack).toMatchObject({ disabled: true, label: 'Acked' });
  });

  it('the edit after a click re-uploads no chart: the message keeps the attachment it was posted with', async () => {
    const msg = alertMessages().find((m) => titles(m).some((t) => t.includes('mode_collapse')))!;
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const chart = msg.attachments.map((a) => a.id);
    expect(chart).toHaveLength(1);
    const before = uploads();
    const out = await fake.click({ customId: `muteRule:${alert.id}`, messageId: msg.id, user: ana });
    expect(out.callback?.type).toBe(7);
    expect(out.callback?.files).toEqual([]);
    expect(out.callback?.data).not.toHaveProperty('attachments'); // absent: Discord keeps what the message has
    const edited = fake.messages.get(msg.id)!;
    expect(JSON.stringify(edited.embeds)).toContain('Muted: recorded');
    expect(edited.attachments.map((a) => a.id)).toEqual(chart);
    const embed = edited.embeds.find((e) => String((e as { title?: string }).title).includes('mode_collapse')) as {
      image?: { url: string };
    };
    expect(embed.image?.url).toBe(`attachment://${edited.attachments[0]!.filename}`);
    expect(uploads()).toBe(before);
  });

  it('every reply, refusal and edit says allowed_mentions { parse: [] } explicitly', async () => {
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const msg = alertMessages().find((m) => titles(m).some((t) => t.includes('mode_collapse')))!;
    const refused = await fake.click({ customId: `muteRun:${alert.id}`, messageId: msg.id, user: bo });
    const usage = await fake.command({ name: 'mute', options: { duration: 'soon' }, user: ana });
    const status = await fake.command({ name: 'run', subcommand: 'status', options: { run: 'grpo' }, user: bo });
    for (const out of [refused, usage, status])
      expect(out.callback?.data).toMatchObject({ allowed_mentions: { parse: [] } });
    expect(JSON.stringify(refused.callback?.data)).toContain('You may not use /mute');
  });

  it('the resolution edits the same message again', async () => {
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const msg = alertMessages().find((m) => titles(m).some((t) => t.includes('mode_collapse')))!;
    const posts = alertMessages().length;
    run.write(4, { frac: 0 });
    await fake.waitFor(() => app.store.alerts.byId(alert.id)?.state === 'resolved', 10_000);
    const edited = await fake.waitFor(() => {
      const m = fake.messages.get(msg.id)!;
      return m.embeds.some((e) => String((e as { description?: string }).description).includes('Resolved at step'))
        ? m
        : null;
    }, 10_000);
    expect(edited.editCount).toBeGreaterThanOrEqual(2);
    expect(alertMessages().filter((m) => titles(m).some((t) => t.includes('mode_collapse')))).toHaveLength(1);
    expect(alertMessages().length).toBe(posts); // edited, not posted again
  });

  it('the resolution also replies to the alert message, so the channel hears it ended; the chart stays as posted', async () => {
    const msg = alertMessages().find((m) => titles(m).some((t) => t.includes('mode_collapse')))!;
    const reply = await fake.waitFor(() => fake.channelMessages().find((m) => m.replyTo === msg.id), 10_000);
    expect(reply.type).toBe(19);
    expect(reply.content).toMatch(/^✅ CRITICAL · mode_collapse resolved · grpo: .*Resolved at step \d+/);
    const post = fake
      .requestsTo('POST', new RegExp(`/channels/${fake.channelId}/messages$`))
      .find((r) => r.status === 200 && JSON.stringify(r.body).includes('✅'));
    expect(post?.body).toMatchObject({
      allowed_mentions: { parse: [], replied_user: false },
      message_reference: { message_id: msg.id, fail_if_not_exists: false },
    });
    expect(fake.messages.get(msg.id)!.attachments).toHaveLength(1);
    // the one upload to the message is its chart, attached right after the post
    expect(fake.requests.filter((r) => r.files.length > 0 && r.path.includes(msg.id))).toHaveLength(1);
  });

  it('a 429 and an outage lose nothing and duplicate nothing', async () => {
    const before = alertMessages().length;
    fake.failNext('POST', new RegExp(`/channels/${fake.channelId}/messages`), { status: 429, retryAfter: 1 });
    run.write(1, { grad: 15.786 }); // grad_explosion
    await fake.waitFor(() => alertMessages().length === before + 1, 10_000);
    fake.setDown(true);
    run.write(5, { grad: 0.05 }); // the spike resolves: an edit that cannot get through
    run.write(1, { grad: 20 }); // and a new incident: a post that cannot get through
    const target = `discord:${fake.channelId}`;
    await fake.waitFor(() => app.store.outbox.pending(target).some((r) => r.attempts >= 2), 10_000);
    expect(alertMessages().length).toBe(before + 1);
    fake.setDown(false);
    await fake.waitFor(() => app.store.outbox.pending(target).length === 0, 10_000);
    const rows = app.store.db
      .prepare('SELECT attempts, done_at FROM outbox WHERE target = ? ORDER BY id')
      .all(target) as Array<{ attempts: number; done_at: number | null }>;
    expect(rows.every((r) => r.done_at !== null)).toBe(true);
    // each grad_explosion incident was posted exactly once, and the first was edited to resolved
    const incidents = app.store.alerts
      .list({ all: true })
      .filter((a) => a.rule === 'grad_explosion')
      .sort((x, y) => x.id - y.id);
    expect(incidents.map((a) => a.state)).toEqual(['resolved', 'firing']);
    const posts = alertMessages().filter((m) => titles(m).some((t) => t.includes('grad_explosion')));
    expect(posts).toHaveLength(2);
    const [first, second] = posts.sort((x, y) => x.createdAt - y.createdAt);
    expect(JSON.stringify(first!.embeds)).toContain('Resolved at step');
    expect(JSON.stringify(second!.embeds)).toContain('grad_norm 20 > 10');
  }, 30_000);

  it("an ack clicked while a critical card's chart is on its way is still shown once the chart is attached", async () => {
    const target = `discord:${fake.channelId}`;
    run.write(5, { grad: 0.05 }); // the open incident resolves first: its edits are not the ones held
    await fake.waitFor(() => app.store.alerts.list({}).every((a) => a.rule !== 'grad_explosion'), 10_000);
    await fake.waitFor(() => app.store.outbox.pending(target).length === 0, 10_000);
    const chartEdit = fake.holdNext('PATCH', new RegExp(`/channels/${fake.channelId}/messages/\\d+$`), (r) =>
      JSON.stringify(r.body).includes('grad_norm 30 > 10'),
    );
    run.write(1, { grad: 30 });
    const held = await chartEdit.arrived;
    expect(held.files).toHaveLength(1);
    // the card's delivery ended with its post: its run's next card would not wait for the chart
    await fake.waitFor(() => app.store.outbox.pending(target).length === 0, 10_000);
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'grad_explosion')!;
    const msg = alertMessages().find((m) => JSON.stringify(m.embeds).includes('grad_norm 30 > 10'))!;
    expect(held.path).toBe(`/channels/${fake.channelId}/messages/${msg.id}`);
    const click = await fake.click({ customId: `ack:${alert.id}`, messageId: msg.id, user: ana });
    expect(click.callback?.type).toBe(7);
    // the edit that shows the ack again meets a rate limit once: that edit is tried again, the chart not uploaded again
    const messagePath = new RegExp(`/channels/${fake.channelId}/messages/${msg.id}$`);
    fake.failNext('PATCH', messagePath, { status: 429, retryAfter: 1 }, (r) => r.files.length === 0);
    chartEdit.release(); // the chart's edit lands after the ack's, drawn from the cards as they were before it
    const shown = await fake.waitFor(() => {
      const m = fake.messages.get(msg.id)!;
      return m.attachments.length === 1 && JSON.stringify(m.embeds).includes('Acked by Ana Lima') ? m : null;
    }, 10_000);
    const edits = fake.requestsTo('PATCH', new RegExp(`/messages/${msg.id}$`));
    expect(edits.filter((r) => r.files.length > 0)).toHaveLength(1);
    expect(edits.filter((r) => r.files.length === 0).map((r) => r.status)).toEqual([429, 200]);
    const last = edits.at(-1)!;
    expect(last.files).toEqual([]);
    expect(last.body).not.toHaveProperty('attachments'); // the chart attached is kept
    expect(JSON.stringify(shown.embeds)).toContain(`attachment://${shown.attachments[0]!.filename}`);
  }, 30_000);

  it('a chart whose edit meets a rate limit is attached once the wait is over', async () => {
    const target = `discord:${fake.channelId}`;
    run.write(5, { grad: 0.05 });
    await fake.waitFor(() => app.store.alerts.list({}).every((a) => a.rule !== 'grad_explosion'), 10_000);
    await fake.waitFor(() => app.store.outbox.pending(target).length === 0, 10_000);
    const edits = new RegExp(`/channels/${fake.channelId}/messages/\\d+$`);
    const spiked = (r: RecordedRequest): boolean => JSON.stringify(r.body).includes('grad_norm 40 > 10');
    fake.failNext('PATCH', edits, { status: 429, retryAfter: 1 }, (r) => r.files.length > 0 && spiked(r));
    run.write(1, { grad: 40 });
    const msg = await fake.waitFor(
      () =>
        alertMessages().find(
          (m) => JSON.stringify(m.embeds).includes('grad_norm 40 > 10') && m.attachments.length === 1,
        ),
      10_000,
    );
    const tries = fake.requestsTo('PATCH', new RegExp(`/messages/${msg.id}$`)).filter((r) => r.files.length > 0);
    expect(tries.map((r) => r.status)).toEqual([429, 200]);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(900);
  }, 30_000);
});
