/**
 * Which files are candidate logs, which run a file belongs to (its folder relative to the root), and run names made
 * visible (no invisible or bidi characters).
 */
import { basename, join, relative, sep } from 'node:path';

/** Sub-directories whose files belong to the run above them (reward logs, Trainer checkpoints, verl
 * rollout dumps, TRL completion tables). */
const ATTACHED_DIR =
  /^(reward_logs|checkpoint-\d+|global_step_?\d+|completions|rollouts?|rollout_data(_dir)?|generations|logs)$/;

/** Names worth opening to look for a known format; everything else (weights, configs) is never read.
 * `.err`: a job's captured stderr; TensorBoard event files carry a timestamp, host and pid after the prefix. */
export const CANDIDATE_FILE =
  /(\.(log|out|err|txt|jsonl)$|^trainer_state\.json$|^events\.out\.tfevents\.|^completions.*\.parquet$)/;

/** The HF Trainer's TensorBoard folder, `output_dir/runs/<date>_<host>/`: its event files belong to `output_dir`. */
const TENSORBOARD_FILE = /^events\.out\.tfevents\./;

/** What would not show as itself in a card, a list or a subject line: control characters, zero-width and bidi
 * formatting characters (U+200B, U+202E), line and paragraph separators, lone surrogates and the other
 * default-ignorable code points. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

/** `text` with each invisible character written as `\u{200b}` (its code point in lower-case hex), so that a folder
 * named `prod-gr\u200Bpo` does not pass for `prod-grpo`, nor a right-to-left override turn a name around. */
export const visibleName = (text: string): string =>
  text.replace(INVISIBLE, (c) => `\\u{${(c.codePointAt(0) as number).toString(16)}}`);

export interface RunLocation {
  /** path of the run relative to its watch root; the root's basename for logs in the root itself; after
   * `<prefix>/` when there is a prefix (`watch.prefix`); invisible characters written out (`visibleName`) */
  name: string;
  dir: string;
  /** the file's path inside the run directory, `/`-separated */
  relPath: string;
}

/** A run is a directory: the one holding the file, or the one above an attached sub-directory. Its name starts
 * with `<prefix>/` when `prefix` is not empty (hosts sharing one database: src/store/open.ts `runPrefix`). */
export function locateRun(root: string, file: string, prefix = ''): RunLocation {
  const parts = relative(root, file).split(sep);
  const name = parts.pop() ?? '';
  if (TENSORBOARD_FILE.test(name) && parts.length >= 2 && parts[parts.length - 2] === 'runs') parts.splice(-2);
  while (parts.length > 0 && ATTACHED_DIR.test(parts[parts.length - 1] as string)) parts.pop();
  const dir = join(root, ...parts);
  const run = visibleName(parts.length > 0 ? parts.join('/') : basename(root));
  return {
    name: prefix === '' ? run : `${prefix}/${run}`,
    dir,
    relPath: relative(dir, file).split(sep).join('/'),
  };
}
