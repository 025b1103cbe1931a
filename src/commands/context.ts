/**
 * The context a command runs in, and what the handlers share: the run asked about, the wording of times
 * (`12 min ago`), the bounds of `run logs`. The Reply they answer is render/reply.ts.
 */
import { UserError } from '../lib/errors.ts';
import type { Config } from '../config/schema.ts';
import type { RunRow, StoreContract, StoreTx } from '../store/contract.ts';

export interface CommandContext {
  store: StoreContract;
  /** the reader is on this machine (the CLI): server paths may be shown; a channel never gets them */
  local?: boolean;
  /** the loaded config, where the front end has it (report ranges, rule overrides); else the defaults */
  config?: Config;
  /** the runs the caller may read about and act on (a chat channel sees the runs routed to it); absent: all */
  seesRun?: (run: string) => boolean;
}

/** The named run; with no name, the only run there is. Only runs `seesRun` admits are found: another is answered
 * exactly as a run that does not exist, so that its name does not leak. */
export async function resolveRun(
  store: StoreTx,
  name: string | undefined,
  seesRun?: (run: string) => boolean,
): Promise<RunRow> {
  const all = await store.runs.list();
  const runs = seesRun ? all.filter((r) => seesRun(r.name)) : all;
  if (name === undefined || name === '') {
    if (runs.length === 1) return runs[0] as RunRow;
    if (runs.length === 0) throw new UserError('no runs yet: run `rlwatch backfill DIR` or `rlwatch start` first');
    throw new UserError(`which run? one of: ${runs.map((r) => r.name).join(', ')}`);
  }
  const run = await store.runs.byName(name);
  if (run && (!seesRun || seesRun(run.name))) return run;
  const known = runs.map((r) => r.name);
  throw new UserError(
    `unknown run '${name}'` + (known.length > 0 ? ` (known: ${known.join(', ')})` : ' (no runs yet)'),
  );
}

/** `run logs`: lines shown by default, and at most (the registry's option says them) */
export const DEFAULT_LINES = 20;
export const MAX_LINES = 200;

export const isoTime = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A span in the reader's terms (`12 min`, `3 h`, `2 d`), rounded down or up; under a minute, null. */
function span(ms: number, round: (n: number) => number): string | null {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return null;
  if (s < 3600) return `${round(s / 60)} min`;
  if (s < 86_400) return `${round(s / 3600)} h`;
  return `${round(s / 86_400)} d`;
}

/** A past time in the reader's terms: `just now`, `12 min ago`, `3 h ago`, `2 d ago`; `never` for none. */
export function ago(ms: number | null, now: number): string {
  if (ms === null) return 'never';
  const d = span(now - ms, Math.floor);
  return d === null ? 'just now' : `${d} ago`;
}

/** A time to come in the reader's terms: `in 12 min`, `in 2 h`, `in under a minute`. Rounded up: a mute
 * with 1 h 59 min left says `in 2 h`, not `in 1 h`. */
export function fromNow(ms: number, now: number): string {
  return `in ${span(ms - now, Math.ceil) ?? 'under a minute'}`;
}
