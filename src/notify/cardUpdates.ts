/**
 * An ack or a mute changes what every card of the alert shows, wherever it was posted and wherever the change
 * came from (a button on another platform, a slash command, the CLI). The change is queued in the outbox, in
 * the transaction that made it: per target showing the alert, one row of 'update' items. Each item is the
 * alert's item as the target's newest message of it shows it (numbers, generations, chart data) with the state
 * captured now, so the row is self-contained; delivery edits those messages in place and never posts
 * (src/notify/delivery.ts), and targets that cannot edit what they sent mark the row done (dispatcher.ts).
 * A target whose card of the alert still waits in the outbox gets its update too: rows of a target go out in
 * order, so the update follows the post and edits the card it made (an ack before delivery is not lost). A card still
 * in a platform-neutral row (`ROUTED`, not routed yet) gets a neutral update: the dispatcher routes the two in order,
 * by the alert's severity, so the edit goes wherever the card goes.
 */
import { isMuted, snapshotOf } from '../engine/capture.ts';
import type { Notification, NotificationItem } from '../engine/notification.ts';
import type { OpenOutboxRow, StoreContract, StoreTx } from '../store/contract.ts';
import { silenceMatches, type SilenceRow } from '../store/silences.ts';
import { parseNotification } from './payload.ts';

/** The item of `alertId` in a posted message's payload; undefined when the payload no longer reads. */
function itemIn(payload: string, alertId: number): NotificationItem | undefined {
  try {
    return parseNotification(payload).items.find((i) => i.alertId === alertId);
  } catch {
    return undefined;
  }
}

/** Whether an outbox row will post a card of the alert (an update or a resolution only edits). */
function postsAlert(payload: string, alertId: number): boolean {
  const kind = itemIn(payload, alertId)?.kind;
  return kind === 'firing' || kind === 'repeat';
}

/**
 * Queues the edits that show the alerts' current ack and mute state on every card of them: one outbox row
 * per target and run. Call it inside the transaction that changed them. Returns the rows written.
 */
export async function queueCardUpdates(store: StoreTx, alertIds: Iterable<number>, now: number): Promise<number> {
  const silences = await store.silences.active(now);
  const rows = new Map<string, { runId: number; target: string; n: Notification }>();
  let waiting: OpenOutboxRow[] | undefined;
  for (const id of new Set(alertIds)) {
    const a = await store.alerts.byId(id);
    const run = a && (await store.runs.byId(a.run_id));
    if (!a || !run) continue;
    const state = snapshotOf(a, isMuted(silences, run.name, a));
    // read once, and only when an alert changed: posts not delivered yet, newest first like the messages
    waiting ??= (await store.outbox.open()).filter((r) => r.dead_at === null).reverse();
    const posts = waiting.filter((r) => r.run_id === a.run_id && postsAlert(r.payload, id));
    for (const m of [...(await store.chat.showing(id)), ...posts]) {
      const key = `${m.target}\n${a.run_id}`;
      const row = rows.get(key) ?? { runId: a.run_id, target: m.target, n: { run: run.name, items: [] } };
      if (row.n.items.some((i) => i.alertId === id)) continue; // the target's newest message of it gave the item
      const shown = itemIn(m.payload, id);
      if (!shown) continue;
      row.n.items.push({ ...shown, kind: 'update', state });
      rows.set(key, row);
    }
  }
  for (const { runId, target, n } of rows.values()) await store.outbox.add(runId, target, n, now);
  return rows.size;
}

/** The firing alerts a mute matches (or matched, once ended): their cards show whether they are muted. */
export async function alertsUnder(store: StoreTx, s: SilenceRow): Promise<number[]> {
  const names = new Map((await store.runs.list()).map((r) => [r.id, r.name]));
  return (await store.alerts.list({}))
    .filter((a) => silenceMatches(s, { run: names.get(a.run_id) ?? '', rule: a.rule, severity: a.severity }))
    .map((a) => a.id);
}

/**
 * Mutes whose time ran out since the last look: each is marked ended at its end, and the cards of what it held
 * no longer say muted (unless another mute holds them). The app calls it on its tick. Returns the mutes ended.
 */
export function endExpiredMutes(store: StoreContract, now: number): Promise<number> {
  return store.transaction(async (tx) => {
    const expired = await tx.silences.expired(now);
    const held: number[] = [];
    for (const s of expired) {
      await tx.silences.end(s.id, s.ends_at);
      held.push(...(await alertsUnder(tx, s)));
    }
    await queueCardUpdates(tx, held, now);
    return expired.length;
  });
}
