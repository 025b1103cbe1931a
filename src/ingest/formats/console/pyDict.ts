/**
 * Reads the repr of a flat Python dict as Trainer.log prints it:
 * `{'loss': 0.1, 'lr': np.float64(1e-06), 'kl': tensor(0.5, device='cuda:0'), 'loss_q': '0.06166', 'x': None}`.
 * Values come back as source text for `parseNumber`; nested containers are skipped over, not read.
 * Character codes rather than one-character strings: this scans every dict line of a console log.
 */

export type PyDictEntries = Array<[key: string, value: string]>;

const SQUOTE = 39;
const DQUOTE = 34;
const BACKSLASH = 92;
const COLON = 58;
const COMMA = 44;
const CLOSE_BRACE = 125;

/** Index of the quote closing the string that opens at `start`, or -1. */
function stringEnd(s: string, start: number): number {
  const quote = s.charCodeAt(start);
  for (let i = start + 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === quote) return i;
  }
  return -1;
}

function skipSpace(s: string, i: number): number {
  while (i < s.length && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
  return i;
}

/** Parses the dict whose `{` is at `start`: its entries and the index of its closing `}`; undefined if it is not a
 * complete, flat-keyed dict. */
export function readPyDict(s: string, start: number): { entries: PyDictEntries; end: number } | undefined {
  const entries: PyDictEntries = [];
  let i = skipSpace(s, start + 1);
  while (s.charCodeAt(i) !== CLOSE_BRACE) {
    const q = s.charCodeAt(i);
    if (q !== SQUOTE && q !== DQUOTE) return undefined; // also the end of a truncated line (NaN)
    const keyEnd = stringEnd(s, i);
    if (keyEnd < 0) return undefined;
    const key = s.slice(i + 1, keyEnd);
    i = skipSpace(s, keyEnd + 1);
    if (s.charCodeAt(i) !== COLON) return undefined;

    // the value runs to the next top-level `,` or `}`; tensor(0.5, device='cuda:0') has both inside
    const valueStart = i + 1;
    let depth = 0;
    for (i = valueStart; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === SQUOTE || c === DQUOTE) {
        i = stringEnd(s, i);
        if (i < 0) return undefined;
      } else if (c === 40 /* ( */ || c === 91 /* [ */ || c === 123 /* { */) depth++;
      else if (c === 41 /* ) */ || c === 93 /* ] */ || c === CLOSE_BRACE) {
        if (depth === 0) break;
        depth--;
      } else if (c === COMMA && depth === 0) break;
    }
    if (i >= s.length) return undefined; // truncated
    const value = s.slice(valueStart, i).trim();
    if (value.length === 0) return undefined;
    entries.push([key, value]);
    if (s.charCodeAt(i) === COMMA) i = skipSpace(s, i + 1);
  }
  return { entries, end: i };
}
