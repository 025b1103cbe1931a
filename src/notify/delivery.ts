/**
 * Delivers a notification's cards to one channel: posts new cards and storms' summaries, edits the messages of
 * cards whose alert changed, and replies when one resolves.
 */
import { setImmediate } from 'node:timers';
import { isMuted, snapshotOf } from '../engine/capture.ts';
import {
  CARDS_PER_MESSAGE,
  type Notification,
  type NotificationItem,
  type ScheduledReport,
} from '../engine/notification.ts';
import { reportCard } from './reportCard.ts';
import type { ChatMessageRow, StoreContract } from '../store/contract.ts';
import { CRITICAL_URGENCY, urgencyOf } from '../store/outbox.ts';
import { alertCards, stateOf, type AlertCard } from './cards.ts';
import { cut } from './limits.ts';
import { parseNotification } from './payload.ts';
import { QUIET_SUMMARY } from './quietHours.ts';

/** What delivery reads and writes of a channel's own records of the messages it posted. */
export type MessageRecords = Pick<StoreContract['chat'], 'ofAlert' | 'byDelivery' | 'record' | 'setPayload'>;

/**
 * Lets timers and I/O run (a slash command, the watcher's next lines). The SQLite store answers within the turn, and
 * a storm's rows hold hundreds of items each: worked through without a pause, a command's 3 s to answer ran out.
 * Only big rows give way (every GIVE_WAY_EVERY items): a row of a few cards goes on as before, its platform's answer
 * being a turn anyway.
 */
export const giveWay = (): Promise<void> => new Promise<void>((turn) => setImmediate(turn));
const GIVE_WAY_EVERY = 25;

export { CARDS_PER_MESSAGE };

/** The id of a storm's summary card: no alert has it, so no button, chart name or reply is made for it. */
export const SUMMARY_CARD_ID = -1;

const critical = (i: NotificationItem): boolean => urgencyOf(i.severity) >= CRITICAL_URGENCY;

/**
 * The cards a message shows. Up to CARDS_PER_MESSAGE items, one card each. More (a storm: hundreds of alerts of a
 * run in one delivery) show the most severe first, every critical one in full and the others up to
 * CARDS_PER_MESSAGE, then one summary card of the rest (`+K more alerts on <run>: rule × count`). A storm message
 * draws one chart, or one per critical card, not one per card of hundreds. The summary counts the alerts by rule as
 * posted, and says when all have resolved: a resolution or ack of one of them alone changes nothing shown, so it
 * costs no edit. A function of the payload alone: an edit renders what the post did.
 */
export function messageCards(n: Notification): AlertCard[] {
  if (n.items.length <= CARDS_PER_MESSAGE) return cardsOf(n);
  const sorted = bySeverity(n.items);
  const shownCount = Math.max(CARDS_PER_MESSAGE, sorted.filter(critical).length);
  const shown = sorted.slice(0, shownCount);
  const charted = shown.some(critical) ? shown.map(critical) : shown.map((_, k) => k === 0);
  const cards = cardsOf({ run: n.run, items: shown }).map((c, k) => (charted[k] ? c : { ...c, chart: null }));
  const rest = sorted.slice(shownCount);
  return rest.length > 0 ? [...cards, summaryCard(n.run, rest)] : cards;
}

/** The cards of a notification sent whole, by a platform that posts and never edits: a scheduled report (no alert
 * behind it) as its own card, never an empty message; alerts as `messageCards` (a storm: five cards and a '+K more'
 * one). */
export function notificationCards(n: Notification): AlertCard[] {
  return n.report ? [scheduledCard(n.run, n.report)] : messageCards(n);
}

/** A report's card; the summary of alerts held in quiet hours has no note (muting the digest does not mute it). */
function scheduledCard(run: string, r: ScheduledReport): AlertCard {
  const card = reportCard(run, r);
  return r.title.startsWith(QUIET_SUMMARY) ? { ...card, note: null } : card;
}

/** `2026-03-01 03:12 UTC` */
const utc = (ms: number): string => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** The items' cards; a repeat of an alert nobody acked says so, and since when it fires: what a page at the
 * repeat interval is for. */
function cardsOf(n: Notification): AlertCard[] {
  return alertCards(n).map((c, k) => {
    const item = n.items[k]!;
    if (item.kind !== 'repeat' || c.status !== 'firing') return c;
    const since = item.state && item.state.startsAt > 0 ? `, since ${utc(item.state.startsAt)}` : '';
    return { ...c, note: [`Still firing, not acked${since}`, c.note].filter(Boolean).join(' · ') };
  });
}

/** The items, most severe first, in their order otherwise. */
function bySeverity(items: readonly NotificationItem[]): NotificationItem[] {
  return items
    .map((item, k) => ({ item, k, u: urgencyOf(item.severity) }))
    .sort((a, b) => b.u - a.u || a.k - b.k)
    .map((x) => x.item);
}

/** One card for the alerts a storm message does not show: how many, of which rules (most first), how severe. */
function summaryCard(run: string, rest: readonly NotificationItem[]): AlertCard {
  const perRule = new Map<string, number>();
  for (const i of rest) perRule.set(i.rule, (perRule.get(i.rule) ?? 0) + 1);
  const rules = [...perRule].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([r, k]) => `${r} × ${k}`);
  const severity = bySeverity(rest)[0]?.severity ?? 'info';
  const ids = rest.map((i) => i.alertId);
  const resolved = rest.every((i) => stateOf(i).resolved !== null);
  return {
    alertId: SUMMARY_CARD_ID,
    run,
    title: `+${rest.length} more alerts on ${run}${resolved ? ': all resolved' : ''}`,
    severity,
    status: resolved ? 'resolved' : 'firing',
    summary: cut(rules.join(', '), 900),
    fields: [
      { name: 'Run', value: run },
      { name: 'Alerts', value: `${rest.length}, #${Math.min(...ids)} to #${Math.max(...ids)} (/alerts lists them)` },
    ],
    note: null,
    sparkline: null,
    examples: [],
    evidence: null,
    chart: null,
    buttons: [],
  };
}

/** A summed-up item as a message's record keeps it: what its line in the summary needs, without the numbers,
 * generations and chart points of a card (hundreds of them per storm message). */
function summedUp(i: NotificationItem): NotificationItem {
  const { evidence: _e, finished: _f, ...rest } = i;
  return { ...rest, recent: [], examples: null, chart: null };
}

/** What a delivery's new alerts are posted as: up to CARDS_PER_MESSAGE together as they came; more (a storm) in
 * one message (`messageCards`), with further messages only for critical cards beyond its first CARDS_PER_MESSAGE,
 * CARDS_PER_MESSAGE each: a critical alert is never summed up. */
function messagesOf(fresh: readonly NotificationItem[]): NotificationItem[][] {
  if (fresh.length <= CARDS_PER_MESSAGE) return fresh.length === 0 ? [] : [[...fresh]];
  const sorted = bySeverity(fresh);
  const criticals = sorted.filter(critical);
  const parts: NotificationItem[][] = [];
  for (let i = CARDS_PER_MESSAGE; i < criticals.length; i += CARDS_PER_MESSAGE) {
    parts.push(criticals.slice(i, i + CARDS_PER_MESSAGE));
  }
  const first = [...criticals.slice(0, CARDS_PER_MESSAGE), ...sorted.filter((i) => !critical(i))];
  const kept = [...first.slice(0, CARDS_PER_MESSAGE), ...first.slice(CARDS_PER_MESSAGE).map(summedUp)];
  return [kept, ...parts];
}

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
  messages: Pick<StoreContract['chat'], 'byRef'>,
  target: string,
  ref: string,
): Promise<AlertCard[] | null> {
  const m = await messages.byRef(target, ref);
  const posted = m && postedOf(m);
  return posted ? messageCards(posted) : null;
}

/**
 * A button acked or muted alerts of a posted message: their states are captured now, at the change, and
 * kept with the message, so that later edits (a resolution) render from the message and the outbox row alone.
 * Returns the message's cards as they stand, or null for a message rlwatch did not post.
 */
export async function recapture(
  store: StoreContract,
  target: string,
  ref: string,
  now = Date.now(),
): Promise<AlertCard[] | null> {
  const m = await store.chat.byRef(target, ref);
  const posted = m && postedOf(m);
  if (!posted) return null; // nothing to re-render it from: the message stays as it is
  const silences = await store.silences.active(now);
  const items: NotificationItem[] = [];
  for (const item of posted.items) {
    const a = await store.alerts.byId(item.alertId);
    items.push(a ? { ...item, state: snapshotOf(a, isMuted(silences, posted.run, a)) } : item);
  }
  const n: Notification = { ...posted, items };
  await store.chat.setPayload(m.id, n);
  return messageCards(n);
}

/**
 * Delivers one outbox row to a chat channel: a resolution edits the messages that announced the alert
 * (each message once) and says so in the thread of the newest; an update (an ack or a mute) edits them and
 * nothing else, and a message already showing that state is left alone (the clicked one, re-rendered by its
 * button); everything else is posted, five alerts a message (a storm's as one message, `messageCards`), before
 * those edits; an edit goes out only when what the message shows changed. Each part is recorded under `key`, so a
 * retry of the row after a failure never posts a part twice. Reads only the channel's own records of what it posted:
 * the cards come from `n` and those messages. An edit keeps the message's charts as posted.
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
  for (const [k, item] of n.items.entries()) {
    if (k > 0 && k % GIVE_WAY_EVERY === 0) await giveWay();
    const edited = item.kind === 'resolved' || item.kind === 'update';
    const showing = edited ? await messages.ofAlert(item.alertId, target) : [];
    if (showing.length === 0 && item.kind !== 'update') fresh.push(item); // an update never posts
    showing.forEach((m, i) => {
      const e = edits.get(m.ref) ?? { message: m, changed: [], thread: false };
      e.changed.push(item);
      e.thread ||= item.kind === 'resolved' && i === 0; // the newest message of the alert hears that it ended
      edits.set(m.ref, e);
    });
  }
  // the new alerts first: a critical card never waits for the edits of older ones
  const parts = messagesOf(fresh);
  for (let i = 0; i < parts.length; i++) {
    const part = `${key}/${i * CARDS_PER_MESSAGE}`;
    if (await messages.byDelivery(target, part)) continue; // posted before a later part failed
    const posted: Notification = { run: n.run, items: parts[i]! };
    const cards = messageCards(posted);
    const ref = await channel.post(cards);
    const alertIds = posted.items.map((x) => x.alertId);
    await messages.record(target, ref, { runId, alertIds, payload: posted, delivery: part }, Date.now());
    await channel.afterPost?.(ref, cards);
  }
  for (const { message, changed, thread } of edits.values()) {
    // a payload that no longer reads is replaced by the alerts being changed, so that the edit still goes out
    const posted = postedOf(message);
    const shown = withStates(posted ?? { run: n.run, items: changed }, changed);
    const cards = messageCards(shown);
    // an edit only when what the message shows changed: a summed-up alert's own change is kept in its record
    if (!posted || JSON.stringify(cards) !== JSON.stringify(messageCards(posted)))
      await channel.edit(message.ref, cards);
    if (!posted || JSON.stringify(shown) !== JSON.stringify(posted)) await messages.setPayload(message.id, shown);
    const part = `${key}/reply/${message.id}`;
    if (!thread || !channel.replyResolved || (await messages.byDelivery(target, part))) continue;
    const ids = new Set(changed.filter((c) => c.kind === 'resolved').map((c) => c.alertId));
    const resolved = cards.filter((c) => ids.has(c.alertId) && c.status === 'resolved');
    if (resolved.length === 0) continue;
    const ref = await channel.replyResolved(message.ref, resolved);
    const reply = { runId, alertIds: [], payload: { run: n.run, items: [] }, delivery: part };
    await messages.record(target, ref, reply, Date.now());
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
  if (await messages.byDelivery(target, part)) return;
  const ref = await channel.post([scheduledCard(n.run, r)]);
  const m = { runId: delivery.runId, alertIds: [], payload: n, delivery: part };
  await messages.record(target, ref, m, Date.now());
}
