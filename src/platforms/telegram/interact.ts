/**
 * Telegram's words for the shared interaction path (src/interact/interaction.ts): `/status` and the other run
 * subcommands work without their group word, as people type them in Telegram.
 */
import { findCommand } from '../../interact/registry.ts';

/** `['status', 'grpo']` -> `['run', 'status', 'grpo']`; words that already name a command stay as they are. */
export function commandWords(words: readonly string[]): string[] {
  return findCommand(words) || !findCommand(['run', ...words]) ? [...words] : ['run', ...words];
}
