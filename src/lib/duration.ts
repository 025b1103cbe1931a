/** Durations (`90s`, `2h`, `1h30m`) read and written within a year's cap, and globs over run names. */
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The longest span a user may give (a mute, a stall, a repeat interval): a year. Beyond it nothing is meant, and
 * far beyond it (`99999999999999d`) the end is no valid date at all. */
export const MAX_DURATION_MS = 365 * 86_400_000;
export const MAX_DURATION = '365d';

/** `90s`, `15m`, `2h`, `1d`, `1h30m` -> milliseconds, however long; undefined when it is not a duration. */
export function durationMs(text: string): number | undefined {
  const t = text.trim();
  if (!/^(\d+(\.\d+)?[smhd])+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)([smhd])/g)) ms += Number(m[1]) * (UNITS[m[2] as string] as number);
  return ms > 0 ? ms : undefined;
}

/** A duration of at most a year, in milliseconds; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  const ms = durationMs(text);
  return ms !== undefined && ms <= MAX_DURATION_MS ? ms : undefined;
}

/** What a config or command says when a duration is refused: it names the year's cap, which `100d` passes and
 * `400d` does not. */
export const DURATION_EXPECTED = `expected a duration of at most ${MAX_DURATION}, such as 90s, 15m, 2h or 1d`;

export function formatDuration(ms: number): string {
  if (ms % UNITS.d! === 0) return `${ms / UNITS.d!}d`;
  if (ms % UNITS.h! === 0) return `${ms / UNITS.h!}h`;
  if (ms % UNITS.m! === 0) return `${ms / UNITS.m!}m`;
  return `${Math.round(ms / 1000)}s`;
}

/** A glob over run names: `*` any run of characters, `?` one character. */
export function globMatch(glob: string, name: string): boolean {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(name);
}
