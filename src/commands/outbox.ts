/**
 * `outbox` and `outbox retry`: the operator's view of notifications not yet delivered, and a way to resend one set
 * aside.
 */
import { UserError } from '../lib/errors.ts';
import type { Notification } from '../engine/notification.ts';
import { queueCardUpdates } from '../notify/cardUpdates.ts';
import { parseNotification } from '../notify/payload.ts';
import { isoTime, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/** The alerts a row's cards show; none when its payload no longer reads (it is set aside again on delivery). */
function alertsIn(payload: string): number[] {
  try {
    return parseNotification(payload).items.map((i) => i.alertId);
  } catch {
    return [];
  }
}

/**
 * `outbox`: the notifications not delivered yet, pending (waiting their turn or a retry) and set aside (a
 * target refused them for good). CLI only: it is the operator's view of delivery, needed exactly when a chat
 * platform is unreachable or refuses rlwatch, so it is not a slash command.
 */
export async function outboxList({ store }: CommandContext): Promise<Reply> {
  const rows = (await store.outbox.open()).map((r) => {
    const n = JSON.parse(r.payload) as Notification;
    return {
      id: r.id,
      target: r.target,
      state: r.dead_at === null ? 'pending' : 'dead',
      run: n.run,
      alerts: n.items.map((i) => `${i.kind} ${i.rule}`),
      createdAt: isoTime(r.created_at),
      attempts: r.attempts,
      nextAttemptAt: isoTime(r.next_attempt_at),
      lastError: r.last_error,
      deadAt: isoTime(r.dead_at),
      deadReason: r.dead_reason,
    };
  });
  const dead = rows.filter((r) => r.state === 'dead').length;
  return {
    title:
      rows.length === 0
        ? 'Outbox empty: every notification was delivered'
        : `Outbox: ${rows.length - dead} pending, ${dead} set aside`,
    fields: [],
    lines: rows.map(
      (r) =>
        `#${r.id} ${r.state.padEnd(7)} ${r.target} ${r.run}: ${r.alerts.join(', ')} (${r.attempts} attempts)` +
        (r.state === 'dead' ? `: ${r.deadReason}` : r.lastError ? `, last error: ${r.lastError}` : ''),
    ),
    data: rows,
  };
}

/**
 * `outbox retry ID`: puts a set-aside row back in line; a running `start` delivers it within its next tick. Its
 * cards show what their alerts were when it was queued: an update queued behind it (rows of a target go out in
 * order) shows an ack or mute made since.
 */
export async function outboxRetry({ store }: CommandContext, args: { id: number }): Promise<Reply> {
  const back = await store.transaction(async (tx) => {
    const row = (await tx.outbox.open()).find((r) => r.id === args.id);
    if (!(await tx.outbox.requeue(args.id))) return row ? 'pending' : 'gone';
    await queueCardUpdates(tx, alertsIn(row!.payload), Date.now());
    return 'back';
  });
  if (back !== 'back') {
    throw new UserError(
      back === 'pending'
        ? `outbox row #${args.id} is pending, not set aside`
        : `no undelivered outbox row #${args.id} (see \`rlwatch outbox\`)`,
    );
  }
  return {
    title: `Outbox row #${args.id} is back in line`,
    fields: [],
    lines: ['a running `rlwatch start` tries it within 10 s (or the next start does)'],
    data: { id: args.id, state: 'pending' },
  };
}
