/**
 * Telegram's words for the shared interaction path (src/notify/interaction.ts): `/status` and the other run
 * subcommands work without their group word, as people type them in Telegram.
 */
import { findCommand } from '../../commands/registry.ts';

/** `['status', 'grpo']` -> `['run', 'status', 'grpo']`; words that already name a command stay as they are. */
export function commandWords(words: readonly string[]): string[] {
  return findCommand(words) || !findCommand(['run', ...words]) ? [...words] : ['run', ...words];
}
