/**
 * `learning.log` of the OCaml GRPO trainer (as its learning-metrics guide describes it):
 * `[Epoch 0.28]  loss=-0.0469  grad=0.0838  lr=3.58e-06  reward=0.102±0.077  syntax_rew=0.102±0.078 ...`
 * No step numbers: the pipeline numbers the records.
 */
import type { FileInfo, LineFormat, LineParser, ParseResult, ShapedLineParser } from '../records.ts';
import { MAX_CACHED_KEY, canonicalName, decimalAt, detached, parseNumber } from '../metricNames.ts';
import {
  DETECT_LIMIT,
  NOISE,
  PARSER_ERROR,
  bad,
  baseName,
  cleanLine,
  isBlank,
  metricResult,
  splitHead,
  type Detection,
} from './common.ts';

/** The banner the trainer writes when it creates the file: a rule, a title, a rule. Tested on the trimmed
 * line: a leading `\s*` before `.*` backtracks quadratically over a long line. */
const RULE = /^[=\-#*~_]{3,}$/;
const TITLE = 'learning metrics log';
const isBanner = (line: string): boolean => {
  const t = line.trim();
  return RULE.test(t) || t.toLowerCase().endsWith(TITLE);
};
/** A data line for detection under another file name: epoch tag followed by a pair. */
const EPOCH_LINE = /^\s*\[Epoch\s[^\]]*\]\s+[A-Za-z_][\w/.-]*=\S/;
const PAIR_LINE = /(?:^|\s)[A-Za-z_][\w/.-]*=\S/;

/** `reward` -> `reward_std`, `rewards/<fn>` -> `rewards/<fn>/std` (the TRL spellings). */
function stdName(canonical: string): string {
  return canonical.startsWith('rewards/') ? `${canonical}/std` : `${canonical}_std`;
}

const isNameChar = (c: number): boolean =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 47 || c === 46 || c === 45;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

/** `\s` of a regex (and what String.trim removes). */
const isSpace = (c: number): boolean =>
  c === 32 ||
  (c >= 9 && c <= 13) ||
  (c >= 0xa0 &&
    (c === 0xa0 ||
      c === 0x1680 ||
      (c >= 0x2000 && c <= 0x200a) ||
      c === 0x2028 ||
      c === 0x2029 ||
      c === 0x202f ||
      c === 0x205f ||
      c === 0x3000 ||
      c === 0xfeff));
/** What `common.ts`'s BINARY finds: control characters other than tab, LF and CR. */
const isControl = (c: number): boolean => (c < 32 && c !== 9 && c !== 10 && c !== 13) || c === 127;

/**
 * Reads the token that starts at `from` (a non-space character) in one pass and returns where it ends: whether it
 * holds a control character (`binary`), and its `name=value` pair (`eq`, -1 for none; `nameStart`) as
 * `/([A-Za-z_][\w/.-]*)=(\S+)/` finds it, the leftmost `=` preceded by a name and followed by a value. That regex
 * retried from every letter of a long run of name characters without `=`, which made one 160 KB line cost seconds.
 * The value's mean ends at `meanEnd` and its std begins at `stdStart` (both the token's end when it has none):
 * `0.102±0.077`, `±` mis-encoded as `Â±` (UTF-8 read as Latin-1, as in the sample lines of a GRPO training analysis),
 * or the ASCII spellings `+-` and `+/-`; the first `±` first, else the first `+-`, else the first `+/-`.
 */
function scanToken(s: string, from: number): number {
  let run = -1; // first letter or `_` of the current run of name characters, before the pair's `=`
  let pair = -1;
  let plusMinus = -1; // ±
  let asciiPlusMinus = -1; // +-
  let plusSlashMinus = -1; // +/-
  binary = false;
  let i = from;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isSpace(c)) break;
    if (isControl(c)) binary = true;
    if (pair < 0) {
      if (c === 61 /* = */) {
        if (run >= 0) {
          pair = i;
          nameStart = run;
        }
        run = -1;
      } else if (!isNameChar(c)) run = -1;
      else if (run < 0 && isNameStart(c)) run = i;
    } else if (c === 0xb1 /* ± */) {
      if (plusMinus < 0) plusMinus = i;
    } else if (c === 43 /* + */ && asciiPlusMinus < 0) {
      const next = s.charCodeAt(i + 1); // `-` and `/` are not spaces: still in the token
      if (next === 45 /* - */) asciiPlusMinus = i;
      else if (next === 47 /* / */ && plusSlashMinus < 0 && s.charCodeAt(i + 2) === 45) plusSlashMinus = i;
    }
  }
  // an `=` that ends the token has no value; no other `=` follows it
  eq = pair === i - 1 ? -1 : pair;
  if (plusMinus >= 0) {
    meanEnd = plusMinus > pair + 1 && s.charCodeAt(plusMinus - 1) === 0xc2 /* Â */ ? plusMinus - 1 : plusMinus;
    stdStart = plusMinus + 1;
  } else if (asciiPlusMinus >= 0) {
    meanEnd = asciiPlusMinus;
    stdStart = asciiPlusMinus + 2;
  } else if (plusSlashMinus >= 0) {
    meanEnd = plusSlashMinus;
    stdStart = plusSlashMinus + 3;
  } else meanEnd = stdStart = i;
  return i;
}
// what scanToken found besides the token's end (module state: it runs for every token of every line)
let binary = false;
let eq = -1;
let nameStart = 0;
let meanEnd = 0;
let stdStart = 0;

/** The name and value of a token's pair. */
export function pairOf(token: string): [name: string, value: string] | undefined {
  scanToken(token, 0);
  return eq < 0 ? undefined : [token.slice(nameStart, eq), token.slice(eq + 1)];
}

/**
 * Whether the line has an epoch tag, as `/\[Epoch\s+([^\]\s]+)\s*\]/i` finds the first (without its match array):
 * its value is then `line[epochFrom, epochTo)`.
 */
function epochTag(s: string): boolean {
  for (let open = s.indexOf('['); open >= 0; open = s.indexOf('[', open + 1)) {
    let i = open + 1;
    if (!isWord(s, i, 'epoch') || !isSpace(s.charCodeAt((i += 5)))) continue;
    while (isSpace(s.charCodeAt(i))) i++;
    const from = i;
    for (let c = s.charCodeAt(i); i < s.length && c !== 93 /* ] */ && !isSpace(c); c = s.charCodeAt(++i));
    if (i === from) continue;
    const to = i;
    while (isSpace(s.charCodeAt(i))) i++;
    if (s.charCodeAt(i) !== 93 /* ] */) continue;
    epochFrom = from;
    epochTo = to;
    return true;
  }
  return false;
}
let epochFrom = 0;
let epochTo = 0;

/** `word` (lower-case ASCII letters) at `at` in `s`, in any case. */
function isWord(s: string, at: number, word: string): boolean {
  for (let k = 0; k < word.length; k++) if ((s.charCodeAt(at + k) | 0x20) !== word.charCodeAt(k)) return false;
  return true;
}

/** A raw key with the canonical names of its mean and std. */
interface Key {
  raw: string;
  name: string;
  std: string;
}

const KEYS = new Map<string, Key>();
const MAX_KEYS = 1024;

function keyOf(sliced: string): Key {
  let key = KEYS.get(sliced);
  if (!key) {
    const raw = detached(sliced); // a key kept must not keep its chunk of the file
    const name = canonicalName(raw);
    key = { raw, name, std: stdName(name) };
    if (raw.length > MAX_CACHED_KEY) return key;
    if (KEYS.size >= MAX_KEYS) KEYS.clear(); // bounded: a stream of new names cannot grow it
    KEYS.set(raw, key);
  }
  return key;
}

/** A number of the line, read in place when it is a plain decimal. */
function numberIn(s: string, from: number, to: number): number | undefined {
  return from >= to ? undefined : (decimalAt(s, from, to) ?? parseNumber(s.slice(from, to)));
}

/** What the pair at a place of a line held: its mean, its std. */
const MEAN = 1;
const STD = 2;

/**
 * The parser of one file. Lines are read in one pass over their characters, without a regex, a token string or a
 * name string per pair: each line of a learning.log repeats the keys of the line before, so a pair whose name
 * matches the key at its place on the last line takes that key (and its canonical names) as it is. Where its values
 * go (`names` and a slot per pair) is worked out once per line shape, not per line.
 */
class LearningLogParser implements ShapedLineParser {
  names: string[] = [];
  readonly values: number[] = [];
  // this line's pairs: key, what it held, mean, std
  private readonly keys: Key[] = [];
  private readonly held: number[] = [];
  private readonly means: number[] = [];
  private readonly stds: number[] = [];
  // the shape `names` is for: the keys and what they held, an epoch or not; the slot of each pair's mean and std
  private shapeKeys: Key[] = [];
  private shapeHeld: number[] = [];
  private shapeEpoch = false;
  private meanSlot: number[] = [];
  private stdSlot: number[] = [];

  read(raw: string): ParseResult | null {
    try {
      return this.readLine(cleanLine(raw));
    } catch {
      return bad(PARSER_ERROR);
    }
  }

  private readLine(line: string): ParseResult | null {
    const { keys, held, means, stds } = this;
    let pairs = 0;
    let blank = true;
    let spaceControl = false; // \v and \f are whitespace, and binary in a line that is not blank
    for (let i = 0; i < line.length; ) {
      const c = line.charCodeAt(i);
      if (isSpace(c)) {
        if (c === 11 || c === 12) spaceControl = true;
        i++;
        continue;
      }
      blank = false;
      const end = scanToken(line, i);
      if (binary) return bad('binary data');
      if (eq >= 0) {
        let key = keys[pairs];
        if (!key || key.raw.length !== eq - nameStart || !line.startsWith(key.raw, nameStart)) {
          keys[pairs] = key = keyOf(line.slice(nameStart, eq));
        }
        const mean = numberIn(line, eq + 1, meanEnd);
        const std = numberIn(line, stdStart, end);
        held[pairs] = (mean === undefined ? 0 : MEAN) | (std === undefined ? 0 : STD);
        means[pairs] = mean ?? 0;
        stds[pairs] = std ?? 0;
        pairs++;
      }
      i = end;
    }
    if (blank) return NOISE;
    if (spaceControl) return bad('binary data');
    if (keys.length !== pairs) keys.length = pairs;

    const tagged = epochTag(line);
    const epoch = tagged ? numberIn(line, epochFrom, epochTo) : undefined;
    if (!tagged && pairs === 0) return isBanner(line) ? NOISE : bad('unrecognised line');
    if (!this.isShape(pairs, epoch !== undefined)) this.shape(pairs, epoch !== undefined);
    if (this.names.length === 0) return bad('no numeric fields');
    const { values, meanSlot, stdSlot } = this;
    if (values.length !== this.names.length) values.length = this.names.length;
    if (epoch !== undefined) values[0] = epoch;
    for (let k = 0; k < pairs; k++) {
      if (meanSlot[k]! >= 0) values[meanSlot[k]!] = means[k]!;
      if (stdSlot[k]! >= 0) values[stdSlot[k]!] = stds[k]!;
    }
    return null;
  }

  private isShape(pairs: number, epoch: boolean): boolean {
    if (epoch !== this.shapeEpoch || pairs !== this.shapeKeys.length) return false;
    for (let k = 0; k < pairs; k++) {
      if (this.keys[k] !== this.shapeKeys[k] || this.held[k] !== this.shapeHeld[k]) return false;
    }
    return true;
  }

  /** Where this line's values go, in the order a Map would keep them: the epoch tag first, then each value in turn,
   * a later one of the same name taking the earlier one's place. setMetric's rule: a key that is the canonical name
   * beats an alias; among aliases the first wins. */
  private shape(pairs: number, epoch: boolean): void {
    const names: string[] = [];
    const slots = new Map<string, number>();
    const slot = (name: string): number => {
      let at = slots.get(name);
      if (at === undefined) slots.set(name, (at = names.push(name) - 1));
      return at;
    };
    if (epoch) slot('epoch');
    this.meanSlot = [];
    this.stdSlot = [];
    for (let k = 0; k < pairs; k++) {
      const key = this.keys[k]!;
      const mean = this.held[k]! & MEAN && (key.name === key.raw || !slots.has(key.name));
      this.meanSlot.push(mean ? slot(key.name) : -1);
      this.stdSlot.push(this.held[k]! & STD ? slot(key.std) : -1);
    }
    this.names = names;
    this.shapeKeys = this.keys.slice(0, pairs);
    this.shapeHeld = this.held.slice(0, pairs);
    this.shapeEpoch = epoch;
  }
}

/** The LineParser of a ShapedLineParser: its metric lines as records with a Map. */
function withMaps(parser: ShapedLineParser): LineParser {
  return (line) => {
    const r = parser.read(line);
    if (r) return r;
    const values = new Map<string, number>();
    parser.names.forEach((name, i) => {
      values.set(name, parser.values[i]!);
    });
    return metricResult(values);
  };
}

function detect(file: FileInfo, head: string): Detection {
  const named = baseName(file.relPath) === 'learning.log';
  const { lines } = splitHead(head);
  let sawBanner = false;
  for (const line of lines) {
    if (isBlank(line)) continue;
    if (isBanner(line)) {
      sawBanner = true;
      continue;
    }
    if (EPOCH_LINE.test(line) || (named && PAIR_LINE.test(line))) return 'yes';
    // under another name (the same trainer once wrote this format to metrics.jsonl) the first line decides
    if (!named) return 'no';
  }
  if (!named && !sawBanner) return 'no';
  return head.length >= DETECT_LIMIT ? 'no' : 'later';
}

export const learningLog: LineFormat = {
  id: 'learningLog',
  kind: 'lines',
  detect,
  open: () => withMaps(new LearningLogParser()),
  openShaped: () => new LearningLogParser(),
  independentLines: true,
};
