import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/start.ts';
import type { FakeDiscord, FakeMessage as DiscordMessage } from '../fakes/discordServer.ts';
import type { FakeSlack } from '../fakes/slackServer.ts';
import { BIN } from '../integration/cli.ts';
import { startBothChats, stopBothChats, WatchedRun } from './watchedRun.ts';

/** A Slack user whose name tries to ping everyone on both platforms and to format the line. */
const EVE = { id: 'U0EVE', name: '<!channel> @everyone *x*' };
const bo = { id: '222222222222222222', username: 'bo' };
type Button = { custom_id: string; label: string; disabled?: boolean };

describe('an ack or a mute from anywhere edits every card of the alert (real Bolt and discord.js, local fakes)', () => {
  const run = new WatchedRun();
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let app: App;
  const discordCard = (rule: string): DiscordMessage | undefined =>
    discord.channelMessages().find((m) => m.interactionId === null && JSON.stringify(m.embeds).includes(` ${rule} `));
  const slackCard = (rule: string) =>
    [...slack.messages.values()].find(
      (m) => m.source === 'chat.postMessage' && JSON.stringify(m.blocks).includes(` ${rule} `),
    );
  const discordText = (rule: string): string => JSON.stringify(discordCard(rule)?.embeds ?? []);
  const slackText = (rule: string): string => JSON.stringify(slackCard(rule)?.blocks ?? []);
  const buttons = (m: DiscordMessage): Button[] =>
    (m.components as Array<{ components: Button[] }>).flatMap((r) => r.components);
  const ackButton = (m: DiscordMessage, id: number): Button | undefined =>
    buttons(m).find((b) => b.custom_id === `ack:${id}`);
  /** the messages the bots posted on either platform (cards, charts, thread replies), not command answers */
  const counts = () => ({
    discord: discord.channelMessages().filter((m) => m.interactionId === null).length,
    slack: [...slack.messages.values()].filter((m) => m.source !== 'response_url').length,
  });
  const alertOf = (rule: string) => app.store.alerts.list({}).find((a) => a.rule === rule)!;
  const settled = () => discord.waitFor(() => app.store.outbox.open().length === 0, 10_000);

  beforeAll(async () => {
    run.write(30);
    ({ discord, slack, app } = await startBothChats(run));
    run.write(4, { frac: 1 }); // mode_collapse, posted on both
    await discord.waitFor(() => discordCard('mode_collapse'), 10_000);
    await slack.waitFor(() => slackCard('mode_collapse'), 10_000);
    await settled();
  }, 30_000);

  afterAll(() => stopBothChats({ app, discord, slack }), 20_000);

  it('a Slack Ack edits the Discord card: her name (inert), no Ack button, no new message, chart kept', async () => {
    const alert = alertOf('mode_collapse');
    const card = discordCard('mode_collapse')!;
    const chart = card.attachments.map((a) => a.id);
    expect(chart).toHaveLength(1);
    const before = counts();
    const messageTs = slackCard('mode_collapse')!.ts;
    await slack.blockAction({ actionId: `ack:${alert.id}`, userId: EVE.id, userName: EVE.name, messageTs });

    const acked = () => (discordText('mode_collapse').includes('Acked by') ? discordCard('mode_collapse') : null);
    const edited = await discord.waitFor(acked, 10_000);
    await settled();
    expect(edited.id).toBe(card.id);
    // her name as typed: its emphasis escaped (JSON doubles the backslash), so `*x*` is not the bold word x
    expect(JSON.stringify(edited.embeds)).toContain('Acked by <!channel> @everyone \\\\*x\\\\*');
    expect(JSON.stringify(edited.embeds)).not.toContain(EVE.id);
    expect(ackButton(edited, alert.id)).toMatchObject({ disabled: true, label: 'Acked' });
    expect(buttons(edited).filter((b) => b.label === 'Ack')).toEqual([]);
    // the edit: no files, no attachments list (Discord keeps the chart), nothing that pings
    const patches = discord.requestsTo('PATCH', new RegExp(`/channels/${discord.channelId}/messages/${card.id}$`));
    const patch = patches.at(-1)!;
    expect(patch.files).toEqual([]);
    expect(patch.body).not.toHaveProperty('attachments');
    expect(patch.body).toMatchObject({ allowed_mentions: { parse: [] } });
    expect(discord.messages.get(card.id)!.attachments.map((a) => a.id)).toEqual(chart);
    expect(JSON.stringify(edited.embeds)).toContain('attachment://chart-');
    // the clicked Slack card shows it too, edited once (by its button: the update finds it showing the ack);
    // neither platform got a new message or a thread reply
    expect(slackText('mode_collapse')).toContain(`Acked by <@${EVE.id}>`);
    expect(slackCard('mode_collapse')!.edits).toBe(1);
    expect(slackText('mode_collapse')).not.toContain(`ack:${alert.id}`);
    expect(counts()).toEqual(before);
  }, 20_000);

  it('`rlwatch ack` run while start watches edits the cards on both platforms', async () => {
    run.write(1, { grad: 50, frac: 1 }); // grad_explosion, posted on both
    await discord.waitFor(() => discordCard('grad_explosion'), 10_000);
    await slack.waitFor(() => slackCard('grad_explosion'), 10_000);
    await settled();
    const alert = alertOf('grad_explosion');
    const before = counts();
    const by = '<!here> Ana';
    const cli = await promisify(execFile)(
      BIN,
      ['ack', String(alert.id), '--by', by, '--db', join(run.root, 'rlwatch.db'), '--json'],
      { cwd: run.root, env: { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined }, timeout: 30_000 },
    );
    expect(JSON.parse(cli.stdout)).toMatchObject({ id: alert.id, ackedByName: by });

    // the CLI is another process: the running app sends its edits on its next tick (every 10 s)
    await discord.waitFor(() => discordText('grad_explosion').includes('Acked by'), 15_000);
    await slack.waitFor(() => slackText('grad_explosion').includes('Acked by'), 15_000);
    await settled();
    expect(discordText('grad_explosion')).toContain(`Acked by ${by}`);
    expect(ackButton(discordCard('grad_explosion')!, alert.id)).toMatchObject({ disabled: true });
    // a name from the CLI: a plain_text element, which Slack never parses (no ping, no emphasis)
    expect(slackText('grad_explosion')).toContain(JSON.stringify({ type: 'plain_text', text: by, emoji: false }));
    expect(slackText('grad_explosion')).not.toMatch(/"type":"mrkdwn","text":"[^"]*<!here>/);
    expect(slackText('grad_explosion')).not.toContain(`ack:${alert.id}`);
    expect(counts()).toEqual(before);
  }, 60_000);

  it('a mute clicked on Discord shows "Muted" on both; /unmute typed on Slack takes it off both', async () => {
    const alert = alertOf('grad_explosion');
    const card = discordCard('grad_explosion')!;
    const edits = card.editCount;
    const before = counts();
    const out = await discord.click({ customId: `muteRule:${alert.id}`, messageId: card.id, user: bo });
    expect(out.callback?.type).toBe(7);
    await slack.waitFor(() => slackText('grad_explosion').includes('Muted: recorded'), 10_000);
    await settled();
    expect(discordText('grad_explosion')).toContain('Muted: recorded');
    expect(discordCard('grad_explosion')!.editCount).toBe(edits + 1); // the click's own edit, no second one
    expect(discordText('mode_collapse')).not.toContain('Muted'); // the mute was of the rule
    expect(slackText('mode_collapse')).not.toContain('Muted');
    expect(counts()).toEqual(before);

    const silence = app.store.silences.active(Date.now())[0]!;
    const text = String(silence.id);
    await slack.slashCommand({ command: '/unmute', text, userId: EVE.id, userName: EVE.name, waitForResponses: 1 });
    await discord.waitFor(() => !discordText('grad_explosion').includes('Muted'), 10_000);
    await slack.waitFor(() => !slackText('grad_explosion').includes('Muted'), 10_000);
    await settled();
    expect(discordText('grad_explosion')).toContain('Acked by'); // the ack stays
    expect(counts()).toEqual(before); // the /unmute answer went by response_url
  }, 30_000);
});
