/**
 * The generic reader of home-grown training loops: one line of `key: value` / `key=value` pairs, separated by
 * `,`, `|`, `;`, tabs or spaces, with the step from a `step` pair, a leading `Step N`, `[step N]`, `[k/N]` or
 * `(k/N)`, and the epoch from an `epoch` pair or `Epoch:[e/E](k/N)` (minimind), after an optional logging prefix
 * (`2024-05-01 12:00:00,123 - INFO - `):
 *   Epoch:[1/1](12/9751), Reward: -1.6523, KL_ref: -0.0069, Actor Loss: 0.0000, Learning Rate: 0.00000030
 *   epoch: 0|step: 7|ppo_ep: 1|act_loss: 0.2099|cri_loss: 0.1204|unsuper_loss: 0.0
 * A line is read only when every part of it is such a pair (or a step marker) and every value is a number:
 * prose, config dumps, warnings and tracebacks fail on their first word. One pass of character codes, no
 * regex over the line: linear in its length.
 */

export interface KeyValueLine {
  /** raw keys as written (`Actor Loss`), in order; the caller maps them to canonical names */
  pairs: Array<[key: string, value: number]>;
  step?: number;
  /** `Epoch:[e/E](k/N)` gives (e-1) + k/N; an `epoch` pair gives its value */
  epoch?: number;
  /** N of a `(k/N)` or `[k/N]` step counter */
  total?: number;
}

/** Longer keys are sentences, not metric names. */
const MAX_KEY = 48;
const MAX_KEY_WORDS = 4;

const SPACE = 32;
const TAB = 9;
const COMMA = 44;
const PIPE = 124;
const SEMICOLON = 59;
const COLON = 58;
const EQUALS = 61;

const isSeparator = (c: number): boolean => c === SPACE || c === TAB || c === COMMA || c === PIPE || c === SEMICOLON;
const isLetter = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
/** letters, digits, `_ / . - @` and single spaces between words */
const isKeyChar = (c: number): boolean =>
  isLetter(c) || isDigit(c) || c === 95 || c === 47 || c === 46 || c === 45 || c === 64 || c === SPACE;

const STEP_KEYS: ReadonlySet<string> = new Set(['step', 'global_step', 'global step', 'iter', 'iteration']);

function skipSeparators(s: string, i: number): number {
  while (i < s.length && isSeparator(s.charCodeAt(i))) i++;
  return i;
}

function skipSpaces(s: string, i: number): number {
  while (i < s.length && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
  return i;
}

/** Reads digits at `i`; [value, end] or undefined. */
function readInt(s: string, i: number): [number, number] | undefined {
  const start = i;
  while (i < s.length && isDigit(s.charCodeAt(i))) i++;
  return i > start && i - start <= 15 ? [Number(s.slice(start, i)), i] : undefined;
}

/** `k/N` followed by `close` at `i` (just after the opening bracket): [k, N, index after close]. */
function readCounter(s: string, i: number, close: number): [number, number, number] | undefined {
  const k = readInt(s, skipSpaces(s, i));
  if (!k || s.charCodeAt(k[1]) !== 47 /* / */) return undefined;
  const n = readInt(s, k[1] + 1);
  if (!n || s.charCodeAt(n[1]) !== close) return undefined;
  return [k[0], n[0], n[1] + 1];
}

/** `step 11]` after a `[` (a loop's epoch summary `[step 11] avg_loss=0.0002 acc=0.4773`): [N, index after `]`]. */
function readStepMarker(s: string, i: number): [number, number] | undefined {
  if (s.slice(i, i + 4).toLowerCase() !== 'step') return undefined;
  const j = skipSpaces(s, i + 4);
  if (j === i + 4) return undefined;
  const n = readInt(s, j);
  return n && s.charCodeAt(n[1]) === 93 /* ] */ ? [n[0], n[1] + 1] : undefined;
}

const closeOf = (open: number): number => (open === 91 /* [ */ ? 93 : open === 40 /* ( */ ? 41 : -1);

/**
 * A leading `Step N`, `Step N:` or `Step N/M` (the R1-Zero GRPO logging guide's callback, many loops), `[step N]`,
 * `[k/N]` or `(k/N)`.
 */
function readLeadingStep(s: string, i: number, out: KeyValueLine): number {
  const c = s.charCodeAt(i);
  const close = closeOf(c);
  if (close > 0) {
    const marked = c === 91 ? readStepMarker(s, i + 1) : undefined;
    if (marked) {
      out.step = marked[0];
      return marked[1];
    }
    const counter = readCounter(s, i + 1, close);
    if (!counter) return i;
    out.step = counter[0];
    out.total = counter[1];
    return counter[2];
  }
  if ((c === 83 || c === 115) && s.slice(i, i + 4).toLowerCase() === 'step') {
    const j = skipSpaces(s, i + 4);
    if (j === i + 4) return i; // `Step:` and `steps` are pairs or prose, not this marker
    const n = readInt(s, j);
    if (!n) return i;
    let end = n[1];
    const total = s.charCodeAt(end) === 47 /* / */ ? readInt(s, end + 1) : undefined;
    if (total) end = total[1];
    if (s.charCodeAt(end) === COLON) end++;
    if (end < s.length && !isSeparator(s.charCodeAt(end))) return i;
    out.step = n[0];
    if (total) out.total = total[0];
    return end;
  }
  return i;
}

/** Reads exactly `n` digits at `i`; the index after them, or -1. */
function digits(s: string, i: number, n: number): number {
  for (let k = 0; k < n; k++) if (!isDigit(s.charCodeAt(i + k))) return -1;
  return i + n;
}

const LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR'];

/**
 * Python logging's prefix: `2024-05-01 12:00:00,123 - INFO - ` or `[2024-05-01 12:00:00] INFO ` (the date and
 * time, then optionally a level). Returns the index after it, or `i` when the line has none.
 */
function skipLoggerPrefix(s: string, i: number): number {
  let j = s.charCodeAt(i) === 91 /* [ */ ? i + 1 : i;
  j = digits(s, j, 4);
  if (j < 0 || s.charCodeAt(j) !== 45 /* - */) return i;
  j = digits(s, j + 1, 2);
  if (j < 0 || s.charCodeAt(j) !== 45) return i;
  j = digits(s, j + 1, 2);
  if (j < 0 || (s.charCodeAt(j) !== SPACE && s.charCodeAt(j) !== 84) /* T */) return i;
  j = digits(s, j + 1, 2);
  if (j < 0 || s.charCodeAt(j) !== COLON) return i;
  j = digits(s, j + 1, 2);
  if (j < 0 || s.charCodeAt(j) !== COLON) return i;
  j = digits(s, j + 1, 2);
  if (j < 0) return i;
  if (s.charCodeAt(j) === COMMA || s.charCodeAt(j) === 46 /* . */) {
    const ms = readInt(s, j + 1);
    if (!ms) return i;
    j = ms[1];
  }
  if (s.charCodeAt(i) === 91) {
    if (s.charCodeAt(j) !== 93 /* ] */) return i;
    j++;
  }
  // ` - INFO - `, ` INFO `, ` [INFO] `, ` INFO: `
  let k = skipSpaces(s, j);
  if (s.charCodeAt(k) === 45 && s.charCodeAt(k + 1) === SPACE) k = skipSpaces(s, k + 1);
  const bracket = s.charCodeAt(k) === 91;
  const at = bracket ? k + 1 : k;
  const level = LEVELS.find((l) => s.startsWith(l, at) && !isLetter(s.charCodeAt(at + l.length)));
  if (level === undefined) return skipSpaces(s, j);
  k += level.length + (bracket ? 1 : 0);
  if (bracket && s.charCodeAt(k++) !== 93 /* ] */) return skipSpaces(s, j);
  if (s.charCodeAt(k) === COLON) k++;
  k = skipSpaces(s, k);
  if (s.charCodeAt(k) === 45 && s.charCodeAt(k + 1) === SPACE) k = skipSpaces(s, k + 1);
  return k;
}

/** The value token after `:`/`=`: up to the next separator. */
function valueEnd(s: string, i: number): number {
  while (i < s.length && !isSeparator(s.charCodeAt(i))) i++;
  return i;
}

/** minimind's `Epoch:[e/E](k/N)`: the value token of an epoch key. */
function readEpochCounter(token: string, out: KeyValueLine): boolean {
  const epoch = token.charCodeAt(0) === 91 ? readCounter(token, 1, 93) : undefined;
  if (!epoch) return false;
  const close = closeOf(token.charCodeAt(epoch[2]));
  const step = close > 0 ? readCounter(token, epoch[2] + 1, close) : undefined;
  if (step) {
    if (step[2] !== token.length || step[1] === 0) return false;
    out.step = (epoch[0] - 1) * step[1] + step[0];
    out.total = epoch[1] * step[1];
    out.epoch = epoch[0] - 1 + step[0] / step[1];
    return true;
  }
  if (epoch[2] !== token.length) return false;
  out.epoch = epoch[0];
  return true;
}

/**
 * Reads a pairs line; undefined when any part of it is not a pair with a numeric value. `parseValue` reads
 * one value token (the caller's number syntax: nan, inf, np.float64(...)).
 */
export function readKeyValueLine(
  line: string,
  parseValue: (token: string) => number | undefined,
): KeyValueLine | undefined {
  const out: KeyValueLine = { pairs: [] };
  let i = skipSpaces(line, 0);
  i = skipSeparators(line, readLeadingStep(line, skipLoggerPrefix(line, i), out));
  while (i < line.length) {
    // key: up to `:` or `=`, letters first, single spaces between words
    const keyStart = i;
    if (!isLetter(line.charCodeAt(i))) return undefined;
    let words = 1;
    while (i < line.length) {
      const c = line.charCodeAt(i);
      if (c === COLON || c === EQUALS) break;
      if (!isKeyChar(c) || i - keyStart >= MAX_KEY) return undefined;
      if (c === SPACE) {
        const next = line.charCodeAt(i + 1);
        if (next === COLON || next === EQUALS) {
          // `accuracy   :` aligned keys: spaces before the colon end the key
          i++;
          continue;
        }
        if (next === SPACE || !isKeyChar(next) || ++words > MAX_KEY_WORDS) {
          const j = skipSpaces(line, i);
          if (line.charCodeAt(j) !== COLON && line.charCodeAt(j) !== EQUALS) return undefined;
          i = j;
          break;
        }
      }
      i++;
    }
    if (i >= line.length) return undefined;
    const key = line.slice(keyStart, i).trimEnd();
    const start = skipSpaces(line, i + 1);
    const end = valueEnd(line, start);
    if (end === start) return undefined;
    const token = line.slice(start, end);
    const lower = key.toLowerCase();
    if (lower === 'epoch' && readEpochCounter(token, out)) {
      i = skipSeparators(line, end);
      continue;
    }
    const value = parseValue(token);
    if (value === undefined) return undefined;
    if (STEP_KEYS.has(lower) && out.step === undefined && Number.isInteger(value) && value >= 0) out.step = value;
    else if (lower === 'epoch') out.epoch = value;
    else out.pairs.push([key, value]);
    i = skipSeparators(line, end);
  }
  return out;
}
