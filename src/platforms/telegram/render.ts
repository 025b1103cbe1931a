/**
 * Cards and replies as Telegram HTML (parse_mode HTML). Untrusted text is escaped, and outside <pre> its `@`,
 * `/` and `#` at a word start get a word joiner: Telegram would otherwise make them mentions that notify,
 * bot commands one tap sends, or hashtags. Generations and log lines go in <pre>, where it reads nothing.
 */
import { resolvedReply, type AlertCard } from '../../notify/cards.ts';
import { cut } from '../../notify/limits.ts';
import type { Reply } from '../../render/reply.ts';

/** Telegram's limit is 4096 characters of text after parsing: the HTML is kept under it. */
const MESSAGE_CHARS = 4000;
const CODE_CHARS = 600;

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** Plain words of untrusted text: escaped, with no mention, command or hashtag left to tap. */
export const inert = (s: string): string => escapeHtml(s).replace(/(^|[^\w])([@/#])/g, '$1$2\u2060');
const pre = (s: string, max = CODE_CHARS): string => `<pre>${escapeHtml(cut(s, max))}</pre>`;

function cardHtml(c: AlertCard): string {
  return [
    `<b>${inert(c.title)}</b>`,
    inert(c.summary),
    ...(c.note ? [`<i>${inert(c.note)}</i>`] : []),
    // a report's card has none: no empty line for them
    ...c.fields.map((f) => `${inert(f.name)}: ${inert(f.value)}`),
    ...(c.evidence ? [inert(c.evidence.title), pre(c.evidence.lines.join('\n'))] : []),
    ...(c.sparkline ? [pre(c.sparkline)] : []),
    ...c.examples.flatMap((e) => [inert(e.title), pre(e.code)]),
  ].join('\n');
}

/** One message of up to five alert cards; the shares of a long burst are cut to fit. */
export function cardsHtml(cards: readonly AlertCard[]): string {
  const share = Math.floor(MESSAGE_CHARS / Math.max(1, cards.length)) - 20;
  return cards.map((c) => cutHtml(cardHtml(c), share)).join('\n\n');
}

/** A post's text: the configured usernames first, plain `@name`s (the untrusted text's `@` are broken by `inert`). */
export const pagedHtml = (cards: readonly AlertCard[], m: { users: readonly string[] } | null): string =>
  m && m.users.length > 0 ? `${m.users.join(' ')}\n${cardsHtml(cards)}` : cardsHtml(cards);

/** The reply to a resolved alert's card: plain words, nothing to tap. */
export const resolvedHtml = (cards: readonly AlertCard[]): string =>
  cards.map((c) => inert(resolvedReply(c))).join('\n');

/** The buttons still live on the cards: one row per alert. */
export function keyboard(cards: readonly AlertCard[]): {
  inline_keyboard: Array<Array<{ text: string; callback_data: string }>>;
} {
  return {
    inline_keyboard: cards
      .map((c) =>
        c.buttons.filter((b) => !b.disabled).map((b) => ({ text: `${b.label} #${c.alertId}`, callback_data: b.id })),
      )
      .filter((row) => row.length > 0),
  };
}

/** A command's reply: title, fields, lines, code blocks. */
export function replyHtml(reply: Reply): string {
  const parts = [
    `<b>${inert(reply.title)}</b>`,
    ...reply.fields.map((f) => `${inert(f.name)}: ${inert(f.value)}`),
    ...reply.lines.map(inert),
    ...(reply.blocks ?? []).flatMap((b) => [inert(b.title), pre(b.tail ? b.code.slice(-CODE_CHARS) : b.code)]),
  ];
  return cutHtml(parts.join('\n'), MESSAGE_CHARS);
}

/** Cuts HTML at a line break so that no tag is left open (every tag here opens and closes on its lines
 * except <pre>, which is closed again when the cut falls inside one). */
function cutHtml(html: string, max: number): string {
  if (html.length <= max) return html;
  let out = html.slice(0, max - 10);
  out = out.slice(0, Math.max(0, out.lastIndexOf('\n')));
  const opened = (out.match(/<pre>/g) ?? []).length - (out.match(/<\/pre>/g) ?? []).length;
  return `${out}${opened > 0 ? '</pre>' : ''}\n…`;
}
