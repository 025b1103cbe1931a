import { describe, expect, it } from 'vitest';
import type { Reply } from '../../src/render/reply.ts';
import type { AlertCard } from '../../src/notify/cards.ts';
import { cardsMessage, replyMessage, resolvedMessage } from '../../src/platforms/discord/bot.ts';
import { cardBlocks, fallback, replyBlocks, resolvedText } from '../../src/platforms/slack/bot.ts';
import { cardsHtml, replyHtml, resolvedHtml } from '../../src/platforms/telegram/render.ts';
import { alertCards } from '../../src/notify/cards.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { mattermostMessage } from '../../src/platforms/mattermost/message.ts';
import { alertMail } from '../../src/platforms/email/message.ts';
import { teamsMessage } from '../../src/platforms/teams/card.ts';
import { feishuCard } from '../../src/platforms/feishu/card.ts';

/** What a hostile (or just unlucky) completion, run name or log line may carry. */
const HOSTILE = [
  '<!channel> wake up',
  '<!here>',
  'ping <@U123> and <@U123|ana>',
  '@everyone @here <@&42> <@42>',
  '```\nbreak out of the fence\n```\n**bold** outside',
  '[click me](https://evil.example/x) and <https://evil.example|click>',
  '> quoted\n# Heading\n- list',
  'Tom & Jerry',
];
const text = HOSTILE.join('\n');

const card: AlertCard = {
  alertId: 7,
  run: '<!channel>-run',
  title: 'CRITICAL · mode_collapse firing · <!channel>-run',
  severity: 'critical',
  status: 'acked',
  summary: `frac_zero_std 1 > 0.8 ${text}`,
  fields: [{ name: 'Run', value: '<!here> [x](https://evil.example)' }],
  note: 'Acked by <@U0ANA>: <!channel> look',
  ackedBy: '<@U0ANA>',
  sparkline: 'reward` <!here> ▁▂▃',
  examples: [{ title: `best: ${text}`, code: text }],
  evidence: { title: `log <!here>`, lines: HOSTILE },
  chart: null,
  buttons: [{ id: 'ack:7', label: 'Ack', disabled: false }],
};
const reply: Reply = {
  title: '<!channel> run list',
  fields: [{ name: 'run', value: '<@U123> [x](https://evil.example)' }],
  lines: HOSTILE,
  blocks: [{ title: '<!here> generation', code: text }],
  data: null,
};

/** Every mrkdwn text object in some blocks (plain_text is never parsed). */
function mrkdwnTexts(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(mrkdwnTexts);
  if (node === null || typeof node !== 'object') return [];
  const o = node as Record<string, unknown>;
  const own = o.type === 'mrkdwn' && typeof o.text === 'string' ? [o.text] : [];
  return [...own, ...Object.values(o).flatMap(mrkdwnTexts)];
}
/** Slack's control sequences (`<!…>`, `<@…>`, `<url|…>`) left raw in mrkdwn. */
const slackControls = (blocks: unknown): string[] =>
  mrkdwnTexts(blocks).flatMap((t) => [...t.matchAll(/<[!@#][^>]*>|<https?:[^>]*>/g)].map((m) => m[0]));

describe('hostile completions on Slack: every mrkdwn text is escaped', () => {
  it('alert cards: no control sequence but the acker rlwatch wrote; no line-starting quote', () => {
    const blocks = cardBlocks([card]);
    expect(slackControls(blocks)).toEqual(['<@U0ANA>']);
    const all = mrkdwnTexts(blocks).join('\n');
    expect(all).toContain('&lt;!channel> wake up');
    expect(all).toContain('Tom &amp; Jerry');
    expect(all).toContain('&gt; quoted');
    for (const t of mrkdwnTexts(blocks)) expect(t).not.toMatch(/^>/m);
  });

  it('command replies: fields, lines and blocks alike', () => {
    const blocks = replyBlocks(reply);
    expect(slackControls(blocks)).toEqual([]);
    expect(mrkdwnTexts(blocks).join('\n')).toContain('&lt;https://evil.example|click>');
  });

  it('a fence inside a generation cannot close its code block', () => {
    const json = JSON.stringify(cardBlocks([card]));
    expect(json).toContain('`\u200b``\\nbreak out of the fence');
  });
});

describe('hostile completions on Discord: nothing pings, nothing links', () => {
  it('alert cards and replies carry allowed_mentions { parse: [] }', async () => {
    expect((await cardsMessage([card])).allowedMentions).toEqual({ parse: [] });
    expect((await replyMessage(reply)).allowedMentions).toEqual({ parse: [] });
  });

  it('a masked link, a heading or a list in untrusted text is plain text; emphasis of names stays', async () => {
    const m = await cardsMessage([card]);
    const embed = m.embeds[0]!.toJSON();
    const outsideCode = embed.description!.replace(/```[\s\S]*?```/g, '');
    expect(outsideCode).not.toMatch(/(?<!\\)\[click me\]\(/);
    expect(embed.description).toContain('\\[click me](https://evil.example/x)');
    expect(embed.description).toContain('frac_zero_std 1 > 0.8');
    expect(embed.description).toContain('\\`\\`\\`\nbreak out'); // the summary's fence opens nothing
    expect(embed.fields?.[0]?.value).toBe('<!here> \\[x](https://evil.example)');
    // the generation itself sits in a code block whose fence cannot be closed from inside
    expect(embed.description).toContain('`\u200b``\nbreak out of the fence');
    const r = (await replyMessage(reply)).embeds[0]!.toJSON();
    expect(r.fields?.[0]?.value).toBe('<@U123> \\[x](https://evil.example)');
    expect(r.description).toContain('\\# Heading');
  });
});

describe('a phone sees what happened', () => {
  it('a Discord alert message has a content line (severity, rule, state, run, the number) for the lock screen', async () => {
    const plain: AlertCard = {
      ...card,
      title: 'CRITICAL · mode_collapse firing · grpo',
      summary: 'frac_zero_std 1 > 0.8 for 3 steps',
      fields: [],
    };
    const resolved: AlertCard = {
      ...plain,
      alertId: 8,
      status: 'resolved',
      title: 'WARNING · grad_explosion resolved · grpo',
      summary: 'grad_norm 0.08: back past 10 for 5 steps',
    };
    const m = await cardsMessage([plain, resolved]);
    expect(m.content).toBe(
      'CRITICAL · mode_collapse firing · grpo: frac_zero_std 1 > 0.8 for 3 steps\n' +
        'WARNING · grad_explosion resolved · grpo: grad_norm 0.08: back past 10 for 5 steps',
    );
    expect(m.allowedMentions).toEqual({ parse: [] });
  });
});

describe("the reply in a resolved alert's thread", () => {
  const resolved: AlertCard = {
    ...card,
    status: 'resolved',
    title: 'CRITICAL · mode_collapse resolved · <!channel>-run @everyone',
    resolution: `Resolved at step 9: ${text}`,
  };

  it('on Slack is escaped: no control sequence at all (not even the acker: a new message would ping them)', () => {
    const t = resolvedText([resolved]);
    expect([...t.matchAll(/<[!@#][^>]*>|<https?:[^>]*>/g)]).toEqual([]);
    expect(t).toMatch(/^✅ CRITICAL · mode_collapse resolved · &lt;!channel>-run @everyone: Resolved at step 9: /);
  });

  it('on Discord pings nobody, not even the author of the message it replies to', () => {
    const m = resolvedMessage([resolved], '123');
    expect(m.allowedMentions).toEqual({ parse: [], repliedUser: false });
    expect(m.reply).toEqual({ messageReference: '123', failIfNotExists: false });
    expect(m.content).toContain('\\[click me](https://evil.example/x)');
  });

  it('on Telegram has no tag, mention or command to tap', () => {
    const html = resolvedHtml([resolved]);
    expect(html).not.toMatch(/<(?!\/?[bi]>)[^>]*>/);
    expect(html).not.toMatch(/(?:^|[^\w\u2060])[@/#]\w+/);
    expect(html).toContain('&lt;!channel&gt;-run @\u2060everyone');
  });
});

describe("Slack's fallback text", () => {
  it('says resolved when it is, and is escaped like the rest', () => {
    const resolved: AlertCard = {
      ...card,
      status: 'resolved',
      title: 'WARNING · grad_explosion resolved · <!here>',
      summary: 'grad_norm 0.08: back past 10',
    };
    expect(fallback([resolved])).toBe('WARNING · grad_explosion resolved · &lt;!here>: grad_norm 0.08: back past 10');
  });
});

describe("an acker's display name shows as typed: its emphasis formats nothing", () => {
  const NAME = '*boss* _x_ ~~y~~ `code`';
  /** alert #7 acked from Discord (or the CLI) by someone called NAME, as the engine captures it */
  const acked: Notification = {
    run: 'grpo',
    items: [
      {
        alertId: 7,
        kind: 'update',
        severity: 'critical',
        rule: 'mode_collapse',
        metric: 'frac_zero_std',
        summary: 'frac_zero_std 1 > 0.8',
        step: 3,
        epoch: null,
        recent: [],
        examples: null,
        state: {
          startsAt: 0,
          firedStep: 3,
          ack: { by: '@mallory', name: NAME, at: 0, comment: 'on it' },
          muted: false,
          resolved: null,
        },
      },
    ],
  };
  const [c] = alertCards(acked);

  it('Discord: every emphasis mark of the name is escaped inside the bold note', async () => {
    const d = (await cardsMessage([c!])).embeds[0]!.toJSON().description!;
    expect(d).toContain('**Acked by \\*boss\\* \\_x\\_ \\~\\~y\\~\\~ \\`code\\`: on it**');
  });

  it('Slack: the name is a plain_text element (mrkdwn has no escape for emphasis); no mrkdwn text holds it', () => {
    const blocks = cardBlocks([c!]);
    const context = blocks.find((b) => b.type === 'context') as unknown as {
      elements: Array<{ type: string; text: string }>;
    };
    expect(context.elements).toContainEqual({ type: 'plain_text', text: NAME, emoji: false });
    expect(mrkdwnTexts(blocks).filter((t) => /boss|~y~|code/.test(t))).toEqual([]);
    expect(mrkdwnTexts(blocks)).toEqual(expect.arrayContaining(['*Acked by*', '*: on it*']));
  });

  it('in a reply (/alerts, /mutes, an ack) too: Discord escapes it, Slack shows the lines as plain_text', async () => {
    const named: Reply = {
      title: `Acked #7 mode_collapse (frac_zero_std) by ${NAME}`,
      fields: [],
      lines: [`#7 critical firing grpo mode_collapse step 3: frac_zero_std 1 > 0.8 [acked by ${NAME}]`],
      names: [NAME],
      data: null,
    };
    const escaped = '\\*boss\\* \\_x\\_ \\~\\~y\\~\\~ \\`code\\`';
    const e = (await replyMessage(named)).embeds[0]!.toJSON();
    expect(e.title).toBe(`Acked #7 mode_collapse (frac_zero_std) by ${escaped}`);
    expect(e.description).toContain(`[acked by ${escaped}]`);
    const blocks = replyBlocks(named);
    expect(blocks).toContainEqual({
      type: 'section',
      text: { type: 'plain_text', text: named.lines[0], emoji: false },
    });
    expect(mrkdwnTexts(blocks).filter((t) => t.includes('boss'))).toEqual([]);
    expect(replyHtml(named)).toContain(`[acked by ${NAME}]`);
  });

  it('Telegram (HTML), Mattermost (escaped markdown), e-mail (HTML), Teams and Feishu (plain text runs)', async () => {
    expect(cardsHtml([c!])).toContain(`<i>Acked by ${NAME}: on it</i>`);
    const mm = (mattermostMessage(acked) as { attachments: Array<{ text: string }> }).attachments[0]!.text;
    expect(mm).toContain('**Acked by \\*boss\\* \\_x\\_ \\~\\~y\\~\\~ \\`code\\`: on it**');
    expect((await alertMail(acked, 'example.org')).html).toContain(`<b>Acked by ${NAME}: on it</b>`);
    expect(JSON.stringify(teamsMessage(acked))).toContain(
      JSON.stringify({ type: 'TextRun', text: `Acked by ${NAME}: on it`, weight: 'Bolder' }),
    );
    expect(JSON.stringify(feishuCard(acked))).toContain(
      JSON.stringify({ tag: 'plain_text', content: `Acked by ${NAME}: on it` }),
    );
  });
});
