/**
 * An alert burst as a Feishu/Lark interactive card for a custom bot. Every text element is `plain_text`: Feishu
 * reads neither markdown nor `<at id=all>` in it (only `lark_md` does, and this card has none).
 */
import { createHmac } from 'node:crypto';
import type { AlertCard } from '../../notify/cards.ts';
import { notificationCards } from '../../notify/delivery.ts';
import { cut } from '../../notify/limits.ts';
import type { Notification } from '../../engine/notification.ts';

/** A custom bot's request body is limited to 20 KB: generations and log lines are cut well below it. */
const CODE_CHARS = 1200;

type Element = Record<string, unknown>;
const plain = (content: string): Element => ({ tag: 'plain_text', content });
const div = (content: string): Element => ({ tag: 'div', text: plain(content) });
const TEMPLATE: Record<AlertCard['status'], string> = {
  firing: 'red',
  acked: 'grey',
  muted: 'grey',
  resolved: 'green',
};

function cardElements(c: AlertCard, withTitle: boolean): Element[] {
  return [
    ...(withTitle ? [div(c.title)] : []),
    div(c.summary),
    ...(c.note ? [div(c.note)] : []),
    { tag: 'div', fields: c.fields.map((f) => ({ is_short: true, text: plain(`${f.name}: ${f.value}`) })) },
    ...(c.evidence ? [div(c.evidence.title), div(cut(c.evidence.lines.join('\n'), CODE_CHARS))] : []),
    ...(c.sparkline ? [div(c.sparkline)] : []),
    ...c.examples.flatMap((e) => [div(e.title), div(cut(e.code, CODE_CHARS))]),
  ];
}

/** The `card` of an `interactive` message: the first alert's title as header, the rest below it. */
export function feishuCard(n: Notification): Element {
  const cards = notificationCards(n);
  const first = cards[0]!;
  const severityColour = first.severity === 'warning' ? 'orange' : first.severity === 'info' ? 'blue' : 'red';
  return {
    config: { wide_screen_mode: true },
    header: {
      title: plain(cards.length === 1 ? first.title : `${n.items.length} alerts · ${n.run}`),
      template: first.status === 'firing' ? severityColour : TEMPLATE[first.status],
    },
    elements: cards.flatMap((c, i) => [...(i > 0 ? [{ tag: 'hr' }] : []), ...cardElements(c, cards.length > 1)]),
  };
}

/** Feishu's custom-bot signature: base64 of HMAC-SHA256 keyed with `timestamp\nsecret` over an empty message. */
export const feishuSign = (timestamp: string, secret: string): string =>
  createHmac('sha256', `${timestamp}\n${secret}`).update('').digest('base64');
