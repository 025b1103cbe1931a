import type { Notification, ScheduledReport } from '../engine/notification.ts';
import type { ChatMessageRow } from '../store/chatMessages.ts';
import { reportCard } from '../report/card.ts';
import type { Store } from '../store/store.ts';
import { alertCards, type AlertCard } from './cards.ts';

/** Alerts per chat message: one row of buttons per alert, and the strictest chat allows five rows. */
export const CARDS_PER_MESSAGE = 5;

/** What a platform does with cards; the rest of a delivery is the same everywhere. */
export interface CardChannel {
  edit(ref: string, cards: AlertCard[]): Promise<void>;
  /** posts a message and returns its platform id */
  post(cards: AlertCard[]): Promise<string>;
  /** after the post is recorded: work whose failure must not re-post the message */
  afterPost?(ref: string, cards: AlertCard[]): Promise<void>;
}

/** The cards a posted message shows, as they stand now (acked, muted, resolved). */
export function cardsOf(store: Store, message: ChatMessageRow): AlertCard[] {
  return alertCards(store, JSON.parse(message.payload) as Notification);
}

/**
 * Delivers one outbox row to a chat channel: a resolution edits the messages that announced the alert
 * (each message once); everything else is posted, five alerts a message. Each part is recorded under
 * `key`, so a retry of the row after a failure never posts a part twice.
 */
export async function deliverCards(store: Store, target: string, n: Notification, key: string, channel: CardChannel): Promise<void> {
  if (n.report) return deliverReport(store, target, n, n.report, key, channel);
  const edits = new Map<string, ChatMessageRow>();
  const fresh: Notification['items'] = [];
  for (const item of n.items) {
    const shown = item.kind === 'resolved' ? store.chatMessages.ofAlert(item.alertId, target) : [];
    if (shown.length === 0) fresh.push(item);
    for (const m of shown) edits.set(m.ref, m);
  }
  for (const m of edits.values()) await channel.edit(m.ref, cardsOf(store, m));
  const runId = store.runs.byName(n.run)?.id ?? 0;
  for (let i = 0; i < fresh.length; i += CARDS_PER_MESSAGE) {
    const delivery = `${key}/${i}`;
    if (store.chatMessages.byDelivery(target, delivery)) continue; // posted before a later part failed
    const part: Notification = { run: n.run, items: fresh.slice(i, i + CARDS_PER_MESSAGE) };
    const cards = alertCards(store, part);
    const ref = await channel.post(cards);
    store.chatMessages.record(target, ref, { runId, alertIds: part.items.map((x) => x.alertId), payload: part, delivery }, Date.now());
    await channel.afterPost?.(ref, cards);
  }
}

/** A scheduled report: one card of its own, with no alert behind it (nothing to ack, never edited). */
async function deliverReport(store: Store, target: string, n: Notification, r: ScheduledReport, key: string, channel: CardChannel): Promise<void> {
  if (store.chatMessages.byDelivery(target, `${key}/0`)) return;
  const cards = [reportCard(n.run, r)];
  const ref = await channel.post(cards);
  store.chatMessages.record(target, ref, { runId: store.runs.byName(n.run)?.id ?? 0, alertIds: [], payload: n, delivery: `${key}/0` }, Date.now());
}
