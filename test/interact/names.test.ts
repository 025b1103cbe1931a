import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/start.ts';
import type { FakeDiscord, FakeMessage as DiscordMessage } from '../fakes/discordServer.ts';
import type { FakeSlack } from '../fakes/slackServer.ts';
import { startBothChats, stopBothChats, WatchedRun } from './watchedRun.ts';

/** A Slack user whose name tries to ping everyone on both platforms and to format the line. */
const EVE = { id: 'U0EVE', name: '<!channel> @everyone *x*' };
/** A Discord user with a nickname in the guild: the name the guild shows. */
const bo = { id: '222222222222222222', username: 'bo', globalName: 'Bo G', nick: 'bo (ops)' };

describe('who acked, across platforms (real Bolt and discord.js, local fakes)', () => {
  const run = new WatchedRun();
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let app: App;
  const discordCard = (): DiscordMessage =>
    discord
      .channelMessages()
      .find((m) => m.interactionId === null && JSON.stringify(m.embeds).includes(' mode_collapse '))!;
  const slackCard = () =>
    [...slack.messages.values()].find((m) => JSON.stringify(m.blocks).includes(' mode_collapse '))!;

  beforeAll(async () => {
    run.write(30);
    ({ discord, slack, app } = await startBothChats(run));
    run.write(4, { frac: 1 }); // mode_collapse, posted on both
    await discord.waitFor(() => discordCard() ?? null, 10_000);
    await slack.waitFor(() => slackCard() ?? null, 10_000);
  }, 30_000);

  afterAll(() => stopBothChats({ app, discord, slack }), 20_000);

  it("a Slack user's Ack records their mention and the name from the action payload", async () => {
    const alert = app.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const payload = await slack.blockAction({
      actionId: `ack:${alert.id}`,
      userId: EVE.id,
      userName: EVE.name,
      messageTs: slackCard().ts,
    });
    expect(payload.payload).toMatchObject({ user: { id: EVE.id, username: EVE.name } });
    await slack.waitFor(() => (app.store.alerts.byId(alert.id)?.acked_by ? true : null), 10_000);
    expect(app.store.alerts.byId(alert.id)).toMatchObject({ acked_by: `<@${EVE.id}>`, acked_by_name: EVE.name });
    // on Slack the card names her by her mention (Slack shows her current name); her stored name is escaped
    const edited = await slack.waitFor(
      () => (JSON.stringify(slackCard().blocks).includes('Acked by') ? slackCard() : null),
      10_000,
    );
    const blocks = JSON.stringify(edited.blocks);
    expect(blocks).toContain(`Acked by <@${EVE.id}>`);
    expect(blocks).not.toContain('<!channel>');
  });

  it('/alerts on Discord shows her by name, inert: no ping, no Slack id', async () => {
    const out = await discord.command({ name: 'alerts', user: bo });
    const data = out.callback?.data as { allowed_mentions: unknown; embeds: Array<{ description?: string }> };
    expect(data.allowed_mentions).toEqual({ parse: [] });
    const text = JSON.stringify(data.embeds);
    expect(text).toContain('[acked by <!channel> @everyone \\\\*x\\\\*]'); // her emphasis escaped: as typed
    expect(text).not.toContain(EVE.id);
  });

  it('/alerts on Slack shows her name as plain_text: <!channel> reaches nobody, *x* is not bold', async () => {
    const r = await slack.slashCommand({
      command: '/alerts',
      text: '',
      userId: EVE.id,
      userName: EVE.name,
      waitForResponses: 1,
    });
    const body = JSON.stringify(r.responses[0]!.body);
    expect(body).toMatch(/"type":"plain_text","text":"[^"]*\[acked by <!channel> @everyone \*x\*\]/);
    expect(body).not.toMatch(/"type":"mrkdwn","text":"[^"]*<!channel>/); // only plain_text holds it
  });

  it('the resolution edits the Discord card with her name, inert, never her Slack id', async () => {
    run.write(4, { frac: 0 });
    const card = await discord.waitFor(
      () => (JSON.stringify(discordCard().embeds).includes('Resolved at step') ? discordCard() : null),
      10_000,
    );
    const text = JSON.stringify(card.embeds);
    expect(text).toContain('Acked by <!channel> @everyone \\\\*x\\\\*'); // emphasis escaped: shown as typed
    expect(text).not.toContain(EVE.id);
    const edit = discord.requestsTo('PATCH', new RegExp(`/channels/${discord.channelId}/messages/${card.id}$`)).at(-1)!;
    expect(edit.body).toMatchObject({ allowed_mentions: { parse: [] } });
  });

  it("a Discord user's mute records their username and shows the name the guild shows (their nickname)", async () => {
    const out = await discord.command({ name: 'mute', options: { run: 'grpo', duration: '2h' }, user: bo });
    expect(JSON.stringify(out.callback?.data)).toContain('run grpo ending in 2 h by bo (ops)');
    expect(app.store.silences.active(Date.now())).toMatchObject([{ author: '@bo', author_name: 'bo (ops)' }]);
  });
});
