/**
 * An alert burst as a Mattermost incoming-webhook message with Slack-style attachments. Mattermost reads
 * markdown and @-mentions in the text, the attachments and their field values: untrusted text is escaped
 * (markdown punctuation backslashed, `@` followed by a zero-width space so `@channel` and `@all` ping nobody),
 * and generations and log lines sit in fenced code blocks, where Mattermost reads neither.
 */
import { COLORS, type AlertCard } from '../../notify/cards.ts';
import { notificationCards } from '../../notify/delivery.ts';
import { codeBlock, cut, tailBlock } from '../../notify/limits.ts';
import type { Notification } from '../../engine/notification.ts';

/** Mattermost posts are limited to 16383 characters: each alert stays well below a share of it. */
const CODE_CHARS = 1500;

/** Markdown punctuation backslashed; `@` broken by a zero-width space (no mention, not even `@here`). */
export const mdEscape = (s: string): string => s.replace(/[\\`*_{}[\]()#+!|<>~]/g, '\\$&').replace(/@/g, '@\u200b');
/** Mattermost reads neither markdown nor mentions in code; codeBlock breaks any fence inside the text. */
const fence = (s: string): string => codeBlock(s, CODE_CHARS);
const hex = (n: number): string => `#${n.toString(16).padStart(6, '0')}`;

function attachment(c: AlertCard): Record<string, unknown> {
  const text = [
    mdEscape(c.summary),
    ...(c.note ? [`**${mdEscape(c.note)}**`] : []),
    ...(c.evidence ? [mdEscape(c.evidence.title), tailBlock(c.evidence.lines, CODE_CHARS)] : []),
    ...(c.sparkline ? [fence(c.sparkline)] : []),
    ...c.examples.flatMap((e) => [mdEscape(e.title), fence(e.code)]),
  ];
  return {
    fallback: cut(`${c.title}: ${c.summary}`, 300).replace(/@/g, '@\u200b'),
    color: hex(c.status === 'firing' ? (COLORS[c.severity as 'warning'] ?? COLORS.firing) : COLORS[c.status]),
    title: mdEscape(c.title),
    text: text.join('\n'),
    fields: c.fields.map((f) => ({ title: f.name, value: mdEscape(f.value), short: true })),
    footer: 'rlwatch',
  };
}

/** The webhook body: a one-line text for notifications, one attachment per alert. */
export function mattermostMessage(n: Notification): Record<string, unknown> {
  const cards = notificationCards(n);
  return {
    username: 'rlwatch',
    text: cards.map((c) => mdEscape(`${c.title}: ${cut(c.summary, 200)}`)).join('\n'),
    attachments: cards.map(attachment),
  };
}
