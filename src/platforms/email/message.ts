/**
 * An alert burst as an email: an HTML body (every untrusted string escaped) with each alert's chart inline
 * (a cid attachment), a plain-text part saying the same, and a References header per alert for threading.
 */
import { COLORS, type AlertCard } from '../../notify/cards.ts';
import { notificationCards } from '../../notify/delivery.ts';
import type { Notification } from '../../engine/notification.ts';
import { alertChartPng } from '../../render/chartOnce.ts';
import { urgencyOf } from '../../store/outbox.ts';

export interface AlertMail {
  subject: string;
  html: string;
  text: string;
  attachments: Array<{ filename: string; content: Buffer; cid: string; contentType: string }>;
  /** every mail of an alert refers to the same id: mail clients that thread by References group them */
  references: string[];
  /** the configured recipients its paging alerts add */
  cc?: string[];
}

/** HTML's five: enough for text content and double-quoted attribute values. */
export const escapeHtml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const hex = (n: number): string => `#${n.toString(16).padStart(6, '0')}`;
/** the thread of one alert's mails */
const threadId = (alertId: number, domain: string): string => `<rlwatch-alert-${alertId}@${domain}>`;
const pre = (s: string): string =>
  `<pre style="background:#f4f4f4;padding:8px;white-space:pre-wrap;font-size:12px">${escapeHtml(s)}</pre>`;

function cardHtml(c: AlertCard, cid: string | null): string {
  const rows = c.fields
    .map(
      (f) =>
        `<tr><td style="color:#666;padding-right:12px">${escapeHtml(f.name)}</td><td>${escapeHtml(f.value)}</td></tr>`,
    )
    .join('');
  return [
    `<div style="border-left:6px solid ${hex(COLORS[c.status])};padding:4px 12px;margin-bottom:24px;font-family:sans-serif">`,
    `<h2 style="margin:4px 0">${escapeHtml(c.title)}</h2>`,
    // a report's summary is several lines: kept as lines
    `<p style="white-space:pre-line">${escapeHtml(c.summary)}</p>`,
    ...(c.note ? [`<p><b>${escapeHtml(c.note)}</b></p>`] : []),
    `<table>${rows}</table>`,
    ...(c.evidence ? [`<p>${escapeHtml(c.evidence.title)}</p>`, pre(c.evidence.lines.join('\n'))] : []),
    ...(cid
      ? [`<p><img src="cid:${cid}" alt="${escapeHtml(c.chart!.title)}" width="640" style="max-width:100%"></p>`]
      : []),
    ...(c.sparkline ? [pre(c.sparkline)] : []),
    ...c.examples.flatMap((e) => [`<p>${escapeHtml(e.title)}</p>`, pre(e.code)]),
    '</div>',
  ].join('\n');
}

function cardText(c: AlertCard): string {
  return [
    c.title,
    c.summary,
    ...(c.note ? [c.note] : []),
    ...c.fields.map((f) => `${f.name}: ${f.value}`),
    ...(c.evidence ? [c.evidence.title, ...c.evidence.lines.map((l) => `  ${l}`)] : []),
    ...(c.sparkline ? [c.sparkline] : []),
    ...c.examples.flatMap((e) => [e.title, ...e.code.split('\n').map((l) => `  ${l}`)]),
  ].join('\n');
}

/** The mail for one outbox row. `domain` names the Message-IDs (the sender's domain); `paged` gives the addresses
 * the cards' paging alerts add. */
export async function alertMail(
  n: Notification,
  domain: string,
  paged: (cards: readonly AlertCard[]) => readonly string[] = () => [],
): Promise<AlertMail> {
  const cards = notificationCards(n);
  const cc = paged(cards);
  const attachments: AlertMail['attachments'] = [];
  const parts: string[] = [];
  for (const c of cards) {
    const cid = c.chart ? `chart-${c.alertId}@rlwatch` : null;
    if (c.chart && cid) {
      const content = await alertChartPng(c.chart, urgencyOf(c.severity));
      attachments.push({ filename: `chart-${c.alertId}.png`, content, cid, contentType: 'image/png' });
    }
    parts.push(cardHtml(c, cid));
  }
  const subject = cards.length === 1 ? cards[0]!.title : `${n.items.length} alerts · ${n.run}`;
  return {
    // one line: a run name cannot add header lines (nodemailer encodes, this keeps the subject readable)
    subject: `[rlwatch] ${subject}`.replace(/[\r\n\t]+/g, ' '),
    html: `<!doctype html><html><body>\n${parts.join('\n')}\n</body></html>`,
    text: cards.map(cardText).join('\n\n----\n\n'),
    attachments,
    references: n.items.map((i) => threadId(i.alertId, domain)),
    ...(cc.length > 0 ? { cc: [...cc] } : {}),
  };
}
