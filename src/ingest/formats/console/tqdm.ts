/**
 * tqdm progress bars as they reach a captured stdout: `desc:  12%|█▏        | 6/50 [01:02<07:30, 1.2s/it, pg=0.12]`.
 * The counter `k/N` numbers the Trainer's global steps (a TRL dict printed right behind it belongs to step k),
 * and a `set_postfix` (OpenRLHF: `pg`, `rm`, `ret`, `glen`, `tlen`, `kl`, `act_lr`) carries metrics.
 * Scanned from the closing `]` backwards with indexOf: linear in the line length.
 */

export interface TqdmBar {
  /** text before the percentage, without its colon: `Train step of episode 0`, `Training Progress`, '' */
  desc: string;
  done: number;
  total: number;
  /** `key=value` items of the bracket after the timing (set_postfix), raw */
  postfix: Array<[key: string, value: string]>;
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** The bar that `s` ends with (trailing spaces allowed), or undefined. */
export function barAtEnd(s: string): TqdmBar | undefined {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 32) end--;
  if (end === 0 || s.charCodeAt(end - 1) !== 93 /* ] */) return undefined;
  const open = s.lastIndexOf('[', end - 1);
  if (open < 0) return undefined;
  const bracket = s.slice(open + 1, end - 1);
  // `01:02<07:30`, `00:00<?`: tqdm's elapsed<remaining always comes first
  if (!bracket.includes('<')) return undefined;

  // `k/N ` right before the bracket
  let i = open;
  while (i > 0 && s.charCodeAt(i - 1) === 32) i--;
  const nEnd = i;
  while (i > 0 && isDigit(s.charCodeAt(i - 1))) i--;
  if (i === nEnd || s.charCodeAt(i - 1) !== 47 /* / */) return undefined;
  const total = Number(s.slice(i, nEnd));
  const kEnd = i - 1;
  i = kEnd;
  while (i > 0 && isDigit(s.charCodeAt(i - 1))) i--;
  if (i === kEnd) return undefined;
  const done = Number(s.slice(i, kEnd));

  const bar = s.lastIndexOf('|', i);
  const percentBar = bar < 0 ? -1 : s.lastIndexOf('%|', bar);
  let desc = '';
  if (percentBar >= 0) {
    let d = percentBar;
    while (d > 0 && isDigit(s.charCodeAt(d - 1))) d--;
    desc = s.slice(0, d).trim();
    if (desc.endsWith(':')) desc = desc.slice(0, -1).trimEnd();
  }
  const postfix: Array<[string, string]> = [];
  for (const item of bracket.split(',')) {
    const eq = item.indexOf('=');
    if (eq > 0) postfix.push([item.slice(0, eq).trim(), item.slice(eq + 1).trim()]);
  }
  return { desc, done, total, postfix };
}

/** The bar that `s` starts with, followed by other text: a bar redrawn after tqdm.write, with a warning printed
 * behind it before its newline (`  2%|▏   | 5/250 [02:26<1:53:51, 27.88s/it]Both \`max_new_tokens\` ...`). */
export function barAtStart(s: string): TqdmBar | undefined {
  const percent = s.indexOf('%|');
  if (percent < 0) return undefined;
  const close = s.indexOf(']', percent);
  return close < 0 ? undefined : barAtEnd(s.slice(0, close + 1));
}

/** OpenRLHF's bar names its episode: `Train step of episode 2`, `Episode [3/10]`; 0 when it does not. */
export function episodeOf(desc: string): { episode: number; oneBased: boolean } | undefined {
  const lower = desc.toLowerCase();
  const at = lower.lastIndexOf('episode');
  if (at < 0) return undefined;
  let i = at + 7;
  while (i < desc.length && (desc.charCodeAt(i) === 32 || desc.charCodeAt(i) === 91)) i++;
  const start = i;
  while (i < desc.length && isDigit(desc.charCodeAt(i))) i++;
  if (i === start) return undefined;
  return { episode: Number(desc.slice(start, i)), oneBased: desc.charCodeAt(start - 1) === 91 };
}
