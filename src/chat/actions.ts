import { UserError } from '../config/load.ts';
import type { Store } from '../store/store.ts';
import type { ButtonAction } from './cards.ts';

const HOUR = 3_600_000;

/** Whether a chat user may ack and mute: listed by id or by one of their roles/groups; nobody listed
 * means anyone in the channel may. */
export function mayAct(users: readonly string[], roles: readonly string[], userId: string, userRoles: readonly string[]): boolean {
  if (users.length === 0 && roles.length === 0) return true;
  return users.includes(userId) || userRoles.some((r) => roles.includes(r));
}

/** What an alert's buttons do: ack it, mute its run for an hour, or its rule (in its run) for a day. */
export function act(store: Store, b: { action: ButtonAction; alertId: number }, by: string, where: string, now = Date.now()): void {
  const alert = store.alerts.byId(b.alertId);
  if (!alert) throw new UserError(`Alert #${b.alertId} no longer exists.`);
  const run = store.runs.byId(alert.run_id)?.name ?? null;
  if (b.action === 'ack') {
    if (alert.state === 'resolved') throw new UserError(`Alert #${alert.id} has already resolved.`);
    if (!alert.acked_by) store.alerts.ack(alert.id, by, null, now);
    return;
  }
  const rule = b.action === 'muteRule' ? alert.rule : null;
  const span = b.action === 'muteRule' ? 24 * HOUR : HOUR;
  store.silences.add({ run, rule, severity: null, starts_at: now, ends_at: now + span, author: by, reason: `from ${where}, alert #${alert.id}` });
}
