import { basename, join, relative, sep } from 'node:path';

/** Sub-directories whose files belong to the run above them (reward logs, Trainer checkpoints, verl
 * rollout dumps, TRL completion tables). */
const ATTACHED_DIR = /^(reward_logs|checkpoint-\d+|global_step_?\d+|completions|rollouts?|rollout_data(_dir)?|generations|logs)$/;

/** Names worth opening to look for a known format; everything else (weights, configs) is never read. */
export const CANDIDATE_FILE = /(\.(log|out|txt|jsonl)|^trainer_state\.json)$/;

export interface RunLocation {
  /** path of the run relative to its watch root; the root's basename for logs in the root itself */
  name: string;
  dir: string;
  /** the file's path inside the run directory, `/`-separated */
  relPath: string;
}

/** A run is a directory: the one holding the file, or the one above an attached sub-directory. */
export function locateRun(root: string, file: string): RunLocation {
  const parts = relative(root, file).split(sep);
  parts.pop();
  while (parts.length > 0 && ATTACHED_DIR.test(parts[parts.length - 1] as string)) parts.pop();
  const dir = join(root, ...parts);
  return {
    name: parts.length > 0 ? parts.join('/') : basename(root),
    dir,
    relPath: relative(dir, file).split(sep).join('/'),
  };
}
