/**
 * The one way Telegram reaches the command tree: words in, a Reply out (a UserError for a bad command or a
 * refused right). Messages and buttons both come through here, so a button says what its command says.
 */
import { UserError } from '../../config/load.ts';
import { findCommand, groupUsage, knownNames, parseText } from '../../commands/registry.ts';
import type { Reply } from '../../commands/reply.ts';
import type { Store } from '../../store/store.ts';

/**
 * Runs `words` (`run status grpo`, `ack 12 looking`) as `user`. `/status` and the other run subcommands work
 * without their group word. A write command needs `mayWrite`.
 */
export function runWords(store: Store, words: readonly string[], user: string, mayWrite: boolean): Reply {
  const found = findCommand(words) ?? findCommand(['run', ...words]);
  if (!found) {
    const group = words[0] ? groupUsage(words[0]) : '';
    throw new UserError(group || `unknown command '${words[0] ?? ''}': try /alerts, /status, /ack ID, /mute RUN 1h`);
  }
  const { spec, rest } = found;
  if (spec.access === 'write' && !mayWrite) {
    throw new UserError(`You may not use /${spec.path.join(' ')}: ask for the ack/mute right (telegram.allow in rlwatch.yaml).`);
  }
  return spec.run({ store, user }, parseText(spec, rest, knownNames(store)));
}

/** What a button means as a command: `ack 12`, or a mute of the alert's run (and rule) for 1 h (24 h). */
export function buttonWords(store: Store, action: 'ack' | 'muteRun' | 'muteRule', alertId: number): string[] {
  if (action === 'ack') return ['ack', String(alertId)];
  const alert = store.alerts.byId(alertId);
  const run = alert ? store.runs.byId(alert.run_id)?.name : undefined;
  if (!alert || run === undefined) throw new UserError(`Alert #${alertId} no longer exists.`);
  const rule = action === 'muteRule' ? [`rule=${alert.rule}`] : [];
  return ['mute', `run=${run}`, ...rule, `duration=${action === 'muteRule' ? '24h' : '1h'}`, `reason=from Telegram, alert #${alertId}`];
}
