const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `15m`, `2h`, `1d`, `1h30m` -> milliseconds; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!/^(\d+(\.\d+)?[smhd])+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)([smhd])/g)) ms += Number(m[1]) * (UNITS[m[2] as string] as number);
  return ms > 0 ? ms : undefined;
}

export function formatDuration(ms: number): string {
  if (ms % UNITS.d! === 0) return `${ms / UNITS.d!}d`;
  if (ms % UNITS.h! === 0) return `${ms / UNITS.h!}h`;
  if (ms % UNITS.m! === 0) return `${ms / UNITS.m!}m`;
  return `${Math.round(ms / 1000)}s`;
}

/** A glob over run names: `*` any run of characters, `?` one character. */
export function globMatch(glob: string, name: string): boolean {
  const re = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(name);
}
