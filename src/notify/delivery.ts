import { isMuted, snapshotOf } from '../engine/capture.ts';
import type { Notification, NotificationItem, ScheduledReport } from '../engine/notification.ts';
import { reportCard } from '../report/card.ts';
import type { ChatMessageRow, StoreContract } from '../store/contract.ts';
import { alertCards, stateOf, type AlertCard } from './cards.ts';
import { parseNotification } from './payload.ts';

/** What delivery reads and writes of a channel's own records of the messages it posted. */
export type MessageRecords = Pick<
  StoreContract, 'messagesOfAlert' | 'messageByDelivery' | 'recordMessage' | 'setMessagePayload'
>;

/** Alerts per chat message: one row of buttons per alert, and the strictest chat allows five rows. */
export const CARDS_PER_MESSAGE = 5;

/** What a platform does with cards; the rest of a delivery is the same everywhere. */
export interface CardChannel {
  /** edits a posted message; its charts were attached when it was posted and stay as they are */
  edit(ref: string, cards: AlertCard[]): Promise<void>;
  /** posts a message and returns its platform id */
  post(cards: AlertCard[]): Promise<string>;
  /** after the post is recorded: work whose failure must not re-post the message */
  afterPost?(ref: string, cards: AlertCard[]): Promise<void>;
  /** posts a short note in the thread of message `ref` that these alerts resolved; returns its id */
  replyResolved?(ref: string, resolved: AlertCard[]): Promise<string>;
}

/** The notification a message was posted for, as it stands now; null for a payload that no longer reads (it
 * never should). */
function postedOf(m: ChatMessageRow): Notification | null {
  try {
    return parseNotification(m.payload);
  } catch {
    return null;
  }
}

/** The message's notification with the states `changed` carries put over its own. */
function withStates(posted: Notification, changed: readonly NotificationItem[]): Notification {
  const states = new Map(changed.map((c) => [c.alertId, stateOf(c)]));
  const items = posted.items.map((i) => {
    const state = states.get(i.alertId);
    return state ? { ...i, state } : i;
  });
  return { ...posted, items };
}

/** The cards of a posted message as its record shows them now (acks, mutes and resolutions included); null for a
 * message rlwatch did not post, or whose record no longer reads. */
export async function shownNow(
  messages: Pick<StoreContract, 'messageByRef'>, target: string, ref: string,
): Promise<AlertCard[] | null> {
  const m = await messages.messageByRef(target, ref);
  const posted = m && postedOf(m);
  return posted ? alertCards(posted) : null;
}

/**
 * A button acked or muted alerts of a posted message: their states are captured now, at the change, and
 * kept with the message, so that later edits (a resolution) render from the message and the outbox row alone.
 * Returns the message's cards as they stand, or null for a message rlwatch did not post.
 */
export async function recapture(
  store: StoreContract, target: string, ref: string, now = Date.now(),
): Promise<AlertCard[] | null> {
  const m = await store.messageByRef(target, ref);
  const posted = m && postedOf(m);
  if (!posted) return null; // nothing to re-render it from: the message stays as it is
  const silences = await store.activeSilences(now);
  const items: NotificationItem[] = [];
  for (const item of posted.items) {
    const a = await store.alertById(item.alertId);
    items.push(a ? { ...item, state: snapshotOf(a, isMuted(silences, posted.run, a)) } : item);
  }
  const n: Notification = { ...posted, items };
  await store.setMessagePayload(m.id, n);
  return alertCards(n);
}

/**
 * Delivers one outbox row to a chat channel: a resolution edits the messages that announced the alert
 * (each message once) and says so in the thread of the newest; an update (an ack or a mute) edits them and
 * nothing else, and a message already showing that state is left alone (the clicked one, re-rendered by its
 * button); everything else is posted, five alerts a message, before those edits. Each part is recorded under
 * `key`, so a retry of the row after a failure never posts a part twice. Reads only the channel's own records of
 * what it posted: the cards come from `n` and those messages. An edit keeps the message's charts as posted.
 */
export async function deliverCards(
  messages: MessageRecords,
  target: string,
  n: Notification,
  delivery: { key: string; runId: number },
  channel: CardChannel,
): Promise<void> {
  const { key, runId } = delivery;
  if (n.report) return deliverReport(messages, target, n, n.report, delivery, channel);
  const edits = new Map<string, { message: ChatMessageRow; changed: NotificationItem[]; thread: boolean }>();
  const fresh: Notification['items'] = [];
  for (const item of n.items) {
    const edited = item.kind === 'resolved' || item.kind === 'update';
    const showing = edited ? await messages.messagesOfAlert(item.alertId, target) : [];
    if (showing.length === 0 && item.kind !== 'update') fresh.push(item); // an update never posts
    showing.forEach((m, i) => {
      const e = edits.get(m.ref) ?? { message: m, changed: [], thread: false };
      e.changed.push(item);
      e.thread ||= item.kind === 'resolved' && i === 0; // the newest message of the alert hears that it ended
      edits.set(m.ref, e);
    });
  }
  // the new alerts first: a critical card never waits for the edits of older ones
  for (let i = 0; i < fresh.length; i += CARDS_PER_MESSAGE) {
    const part = `${key}/${i}`;
    if (await messages.messageByDelivery(target, part)) continue; // posted before a later part failed
    const posted: Notification = { run: n.run, items: fresh.slice(i, i + CARDS_PER_MESSAGE) };
    const cards = alertCards(posted);
    const ref = await channel.post(cards);
    const alertIds = posted.items.map((x) => x.alertId);
    await messages.recordMessage(target, ref, { runId, alertIds, payload: posted, delivery: part }, Date.now());
    await channel.afterPost?.(ref, cards);
  }
  for (const { message, changed, thread } of edits.values()) {
    // a payload that no longer reads is replaced by the alerts being changed, so that the edit still goes out
    const posted = postedOf(message);
    const shown = withStates(posted ?? { run: n.run, items: changed }, changed);
    const cards = alertCards(shown);
    if (!posted || JSON.stringify(shown) !== JSON.stringify(posted)) {
      await channel.edit(message.ref, cards);
      await messages.setMessagePayload(message.id, shown);
    }
    const part = `${key}/reply/${message.id}`;
    if (!thread || !channel.replyResolved || (await messages.messageByDelivery(target, part))) continue;
    const ids = new Set(changed.filter((c) => c.kind === 'resolved').map((c) => c.alertId));
    const resolved = cards.filter((c) => ids.has(c.alertId) && c.status === 'resolved');
    if (resolved.length === 0) continue;
    const ref = await channel.replyResolved(message.ref, resolved);
    const reply = { runId, alertIds: [], payload: { run: n.run, items: [] }, delivery: part };
    await messages.recordMessage(target, ref, reply, Date.now());
  }
}

/** A scheduled report: one card of its own, with no alert behind it (nothing to ack, never edited). */
async function deliverReport(
  messages: MessageRecords,
  target: string,
  n: Notification,
  r: ScheduledReport,
  delivery: { key: string; runId: number },
  channel: CardChannel,
): Promise<void> {
  const part = `${delivery.key}/0`;
  if (await messages.messageByDelivery(target, part)) return;
  const ref = await channel.post([reportCard(n.run, r)]);
  const m = { runId: delivery.runId, alertIds: [], payload: n, delivery: part };
  await messages.recordMessage(target, ref, m, Date.now());
}
