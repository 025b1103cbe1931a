/**
 * One interaction path for every front end (the CLI, slash commands, buttons): rights check → parse → run →
 * reply, with one error path. A button is a command with its arguments filled in, so its wording, rights and
 * errors are the command's. Platform-neutral: a bot hands over the words and options it received and renders
 * the answer.
 */
import { randomBytes } from 'node:crypto';
import { UserError } from '../lib/errors.ts';
import { bindWords, checkArgs, findCommand, groupUsage, knownNames, type Args, type CommandSpec } from './registry.ts';
import type { Reply } from '../render/reply.ts';
import type { Config } from '../config/schema.ts';
import type { Log } from '../lib/log.ts';
import type { StoreContract } from '../store/contract.ts';
import { redactorOf } from '../notify/redact.ts';
import { BUTTON_ID } from '../notify/buttons.ts';

/** Who asks, and what the front end knows about them. */
export interface Asker {
  store: StoreContract;
  /** the loaded config, where the front end has it (report ranges, rule overrides); else the defaults */
  config?: Config;
  log: Log;
  /** who, as the platform knows them (`<@U0001>`, `@ana`, `$USER`): recorded for audit */
  user: string;
  /** who, as readers know them (the name the platform's payload carries: a user name, a server nickname, a
   * first name; the OS user): recorded beside `user` and shown on every platform. Untrusted text, made one
   * short line here. */
  userName: string;
  /** whether the caller holds the ack/mute right; asked for write commands only (see `mayAct`) */
  mayWrite(): boolean | Promise<boolean>;
  /** why no command is taken from where the caller is (a DM, another server or workspace, a channel rlwatch
   * does not take commands from): said to the caller alone, and nothing is parsed or run */
  refused?: string;
  /** the runs the caller's channel may read about and act on (src/notify/routing.ts, `commandPlaces`); absent:
   * every run (the CLI). An unseen run is answered as an unknown one. */
  seesRun?: (run: string) => boolean;
  /** where the right is granted, for the refusal (`<platform>.allow in rlwatch.yaml`) */
  rightsHint: string;
  /** how usage lines start: `/` in chat (the default), `rlwatch ` in the CLI */
  prefix?: string;
  /** the reader is on this machine (the CLI): replies may show server paths */
  local?: boolean;
  now?: number;
}

/** A command as received: its words from the command name on (`['mute', 'grpo', '2h']`), and options by name. */
export interface Request {
  words: readonly string[];
  args?: Args;
}

/** The command a card's button stands for (its id, notify/buttons.ts): ack the alert, or mute its run for
 * an hour or its rule for a day; null for an id of no button of ours. */
export function buttonRequest(id: string): Request | null {
  const m = BUTTON_ID.exec(id);
  if (!m) return null;
  const alert = Number(m[2]);
  if (m[1] === 'ack') return { words: ['ack'], args: { id: alert } };
  if (m[1] === 'muteRun') return { words: ['mute'], args: { alert, duration: '1h' } };
  return { words: ['mute'], args: { alert, scope: 'rule', duration: '24h' } };
}

export type Answer =
  | { ok: true; spec: CommandSpec; reply: Reply }
  /** `message` goes to the caller only; `error` when it was rlwatch's fault (logged with the reference) */
  | { ok: false; message: string; error?: unknown };

/**
 * Runs one command for one caller. `beforeRun` lets a front end say "thinking" before a slow command (the
 * checks are done by then, so a refusal is never public). Never throws: a UserError becomes a private
 * message; anything else a short apology with a reference, and a log line with the same reference.
 *
 * @example
 *   const asker = { store, log, user: '@ana', userName: 'Ana', mayWrite: () => true, rightsHint };
 *   const a = await interact({ words: ['ack', '12'] }, asker);
 *   if (a.ok) show(a.reply); else whisper(a.message);
 */
export async function interact(
  req: Request,
  asker: Asker,
  beforeRun?: (spec: CommandSpec) => Promise<void>,
): Promise<Answer> {
  const prefix = asker.prefix ?? '/';
  try {
    if (asker.refused !== undefined) throw new UserError(asker.refused);
    const found = findCommand(req.words);
    if (!found) {
      const group = groupUsage(req.words[0] ?? '');
      throw new UserError(group || `unknown command ${prefix}${req.words.join(' ')}`);
    }
    const { spec, rest } = found;
    if (spec.access === 'write' && !(await asker.mayWrite())) {
      throw new UserError(
        `You may not use ${prefix}${spec.path.join(' ')}: ask for the ack/mute right (${asker.rightsHint}).`,
      );
    }
    const { store, config, user, now, local, seesRun } = asker;
    const bound = rest.length > 0 ? bindWords(spec, rest, await knownNames(store, seesRun), prefix) : {};
    const args = checkArgs(spec, { ...bound, ...req.args }, prefix);
    await beforeRun?.(spec);
    const userName = displayName(asker.userName, user);
    const reply = await spec.run({ store, config, user, userName, now, local, seesRun }, args);
    return { ok: true, spec, reply: redactorOf(config).reply(reply) };
  } catch (err) {
    if (err instanceof UserError) return { ok: false, message: err.message };
    const ref = randomBytes(3).toString('hex');
    asker.log.warn(`command '${req.words.join(' ')}' failed (ref ${ref}): ${(err as Error).stack ?? String(err)}`);
    return { ok: false, message: `Sorry, that failed on rlwatch's side (ref ${ref}); its log says why.`, error: err };
  }
}

/** Whether the answer is that of a command that changed something (an ack, a mute): the cards it queued edits
 * of (src/notify/cardUpdates.ts) may go out now. */
export const changedSomething = (a: Answer): boolean => a.ok && a.spec.access === 'write';

/** Longest display name kept: a name is a label beside an ack, not a place for a message. */
const NAME_CHARS = 64;

/**
 * A display name as readers see it: one line (newlines, control and invisible format characters such as a
 * right-to-left override become a space), at most 64 characters; the platform id when the name is empty.
 * Still untrusted text: each front end escapes it where it shows it, as it does a run name.
 */
export function displayName(name: string, id: string): string {
  // U+200D (zero-width joiner) is kept: it glues emoji sequences together
  const line = name.replace(/(?:(?!\u200d)[\p{Cc}\p{Cf}\p{Z}\s])+/gu, ' ').trim();
  return line === '' ? id : [...line].slice(0, NAME_CHARS).join('').trim();
}

/**
 * Whether a chat user may ack and mute: listed by id or by one of their roles/groups; nobody listed means anyone
 * who can use a channel rlwatch takes commands from (the bot answers nothing from elsewhere: `Asker.refused`), so
 * a seat in the team's alert channel is the right, not a seat anywhere.
 */
export function mayAct(
  users: readonly string[],
  roles: readonly string[],
  userId: string,
  userRoles: readonly string[],
): boolean {
  if (users.length === 0 && roles.length === 0) return true;
  return users.includes(userId) || userRoles.some((r) => roles.includes(r));
}
