import { afterEach, describe, expect, it } from 'vitest';
import type { Reply } from '../../src/render/reply.ts';
import { silentLog } from '../../src/lib/log.ts';
import type { AlertCard } from '../../src/notify/cards.ts';
import { interact } from '../../src/interact/interaction.ts';
import { cardsMessage, replyMessage } from '../../src/platforms/discord/bot.ts';
import { cardBlocks, replyBlocks } from '../../src/platforms/slack/bot.ts';
import { cardsHtml, replyHtml } from '../../src/platforms/telegram/render.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

/** A display name that tries to ping a Slack channel and a Discord server, open a quote and a heading. */
const NAME = '<!channel> @everyone *x*\n> quoted\n# Heading <@U123>';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** `/alerts` after `who` acked alert #1 under NAME, as the command path answers it. */
async function alertsReply(who: string): Promise<{ reply: Reply; stored: string }> {
  const { store } = freshStore();
  stores.push(store);
  const run = store.runs.ensure('grpo', '/runs/grpo');
  store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', {
    step: 3,
    at: 0,
    severity: 'critical',
    summary: 's',
    details: {},
  });
  const asker = {
    store: new SqliteAsyncStore(store),
    log: silentLog,
    user: who,
    userName: NAME,
    mayWrite: () => true,
    rightsHint: '',
    now: 60_000,
  };
  const ack = await interact({ words: ['ack', '1'] }, asker);
  const list = await interact({ words: ['alerts'] }, asker);
  if (!ack.ok || !list.ok) throw new Error('ack or alerts failed');
  return { reply: list.reply, stored: store.alerts.byId(1)!.acked_by_name! };
}

/** A card acked by `ackedBy` under the name, as cards.ts writes its note. */
const acked = (ackedBy: string, name: string): AlertCard => ({
  alertId: 1,
  run: 'grpo',
  title: 'CRITICAL · mode_collapse firing · grpo',
  severity: 'critical',
  status: 'acked',
  summary: 'frac_zero_std 1 > 0.8',
  fields: [],
  note: `Acked by ${name}: on it`,
  ackedBy,
  ackedByName: name,
  sparkline: null,
  examples: [],
  evidence: null,
  chart: null,
  buttons: [],
});

/** Every mrkdwn text in some Slack blocks, and the control sequences (`<!…>`, `<@…>`) left raw in them. */
function mrkdwn(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(mrkdwn);
  if (node === null || typeof node !== 'object') return [];
  const o = node as Record<string, unknown>;
  return [...(o.type === 'mrkdwn' && typeof o.text === 'string' ? [o.text] : []), ...Object.values(o).flatMap(mrkdwn)];
}
const slackControls = (blocks: unknown): string[] =>
  mrkdwn(blocks).flatMap((t) => [...t.matchAll(/<[!@#][^>]*>/g)].map((m) => m[0]));
/** What Telegram would act on outside <pre>: tags other than <b>/<i>, mentions, commands, hashtags. */
const telegramLive = (html: string): string[] => [
  ...(html.match(/<(?!\/?[bi]>)[^>]*>/g) ?? []),
  ...(html.replace(/<\/?[bi]>/g, ' ').match(/(?:^|[^\w\u2060])[@/#]\w+/g) ?? []),
];

describe('a hostile display name stays inert wherever it is shown', () => {
  it('is stored as one line: it cannot start a quote or a heading of its own', async () => {
    const { stored } = await alertsReply('@mallory');
    expect(stored).toBe('<!channel> @everyone *x* > quoted # Heading <@U123>');
  });

  it('/alerts on Slack: escaped, no control sequence reaches the channel', async () => {
    const { reply } = await alertsReply('@mallory');
    const blocks = replyBlocks(reply);
    expect(slackControls(blocks)).toEqual([]);
    // the lines name her: plain_text, which Slack never parses (mrkdwn has no escape for her emphasis)
    expect(JSON.stringify(blocks)).toContain(
      '[acked by <!channel> @everyone *x* > quoted # Heading <@U123>]","emoji":false',
    );
  });

  it('/alerts on Discord: nothing may ping, and its heading and quote marks are mid-line, plain text', async () => {
    const { reply } = await alertsReply('@mallory');
    const m = await replyMessage(reply);
    expect(m.allowedMentions).toEqual({ parse: [] });
    // one line: its `#` and `>` are mid-line, where Discord reads no heading and no quote
    expect(JSON.stringify(m.embeds)).toContain(
      '[acked by <!channel> @everyone \\\\*x\\\\* > quoted # Heading <@U123>]',
    );
  });

  it('/alerts on Telegram: escaped, the @ and # broken so that nothing notifies or links', async () => {
    const { reply } = await alertsReply('@mallory');
    const html = replyHtml(reply);
    expect(telegramLive(html)).toEqual([]);
    expect(html).toContain('&lt;!channel&gt; @\u2060everyone *x*');
  });

  it('/mute and /mutes name the muter literally on Discord and as plain_text on Slack', async () => {
    const { store } = freshStore();
    stores.push(store);
    store.runs.ensure('grpo', '/runs/grpo');
    const asker = {
      store: new SqliteAsyncStore(store),
      log: silentLog,
      user: '@bo',
      userName: '*boss*',
      mayWrite: () => true,
      rightsHint: '',
      now: 60_000,
    };
    const muted = await interact({ words: ['mute', 'grpo', '1h'] }, asker);
    const list = await interact({ words: ['mutes'] }, asker);
    if (!muted.ok || !list.ok) throw new Error('mute or mutes failed');
    for (const r of [muted.reply, list.reply]) {
      expect(JSON.stringify((await replyMessage(r)).embeds)).toContain('by \\\\*boss\\\\*');
      expect(mrkdwn(replyBlocks(r)).filter((t) => t.includes('boss'))).toEqual([]);
    }
  });

  it("cards: on Slack only the Slack acker's own mention is live; a name from elsewhere is escaped", () => {
    expect(slackControls(cardBlocks([acked('<@U0EVE>', '<!channel> @everyone')]))).toEqual(['<@U0EVE>']);
    expect(mrkdwn(cardBlocks([acked('<@U0EVE>', '<!channel> @everyone')])).join('\n')).toContain(
      'Acked by <@U0EVE>: on it',
    );
    // a Discord user with the hostile name: nothing live at all
    const fromDiscord = cardBlocks([acked('@mallory', '<!channel> <@U123> @everyone')]);
    expect(slackControls(fromDiscord)).toEqual([]);
    // its name is plain_text, which Slack never parses (nor its emphasis): shown exactly as typed
    expect(mrkdwn(fromDiscord)).toEqual(expect.arrayContaining(['*Acked by*', '*: on it*']));
    expect(JSON.stringify(fromDiscord)).toContain(
      JSON.stringify({ type: 'plain_text', text: '<!channel> <@U123> @everyone', emoji: false }),
    );
  });

  it('cards: on Discord allowed_mentions is empty; on Telegram nothing is live', async () => {
    const card = acked('<@U0EVE>', '<!channel> @everyone *x*');
    expect((await cardsMessage([card])).allowedMentions).toEqual({ parse: [] });
    expect(telegramLive(cardsHtml([card]))).toEqual([]);
    expect(cardsHtml([card])).toContain('<i>Acked by &lt;!channel&gt; @\u2060everyone *x*: on it</i>');
  });
});
