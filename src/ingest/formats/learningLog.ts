/**
 * `learning.log` of the OCaml GRPO trainer (seed 000):
 * `[Epoch 0.28]  loss=-0.0469  grad=0.0838  lr=3.58e-06  reward=0.102±0.077  syntax_rew=0.102±0.078 ...`
 * No step numbers: the pipeline numbers the records.
 */
import type { FileInfo, LineFormat, ParseResult } from '../records.ts';
import { canonicalName, parseNumber } from '../metricNames.ts';
import {
  DETECT_LIMIT,
  NOISE,
  bad,
  baseName,
  cleanLine,
  guardedLineParser,
  isBinary,
  isBlank,
  metricResult,
  setMetric,
  splitHead,
  type Detection,
} from './common.ts';

const EPOCH = /\[Epoch\s+([^\]\s]+)\s*\]/i;
/** Whitespace-separated tokens; `name=value` pairs are found inside each by `pairOf` (linear time). */
const TOKEN = /\S+/g;
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

/**
 * Splits `0.102±0.077` into mean and std. Also reads `Â±` (UTF-8 `±` decoded as Latin-1, seed 001) and the
 * ASCII spellings `+-` and `+/-`. indexOf rather than a regex: this runs for every value of every line.
 */
function splitPlusMinus(value: string): [mean: string, std: string | undefined] {
  let at = value.indexOf('±');
  if (at >= 0) return [value.slice(0, at > 0 && value[at - 1] === 'Â' ? at - 1 : at), value.slice(at + 1)];
  at = value.indexOf('+-');
  if (at >= 0) return [value.slice(0, at), value.slice(at + 2)];
  at = value.indexOf('+/-');
  if (at >= 0) return [value.slice(0, at), value.slice(at + 3)];
  return [value, undefined];
}

/** `reward` -> `reward_std`, `rewards/<fn>` -> `rewards/<fn>/std` (the TRL spellings). */
function stdName(canonical: string): string {
  return canonical.startsWith('rewards/') ? `${canonical}/std` : `${canonical}_std`;
}

const isNameChar = (c: number): boolean =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 47 || c === 46 || c === 45;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

/**
 * The `name=value` pair of one token, as `/([A-Za-z_][\w/.-]*)=(\S+)/` finds it (the leftmost `=` preceded by a
 * name and followed by a value), in one pass: that regex retries from every letter of a long run of name
 * characters without `=`, which made one 160 KB line cost seconds.
 */
export function pairOf(token: string): [name: string, value: string] | undefined {
  let nameStart = -1; // first letter or `_` of the current run of name characters
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c === 61 /* = */) {
      if (nameStart >= 0 && i + 1 < token.length) return [token.slice(nameStart, i), token.slice(i + 1)];
      nameStart = -1;
    } else if (!isNameChar(c)) nameStart = -1;
    else if (nameStart < 0 && isNameStart(c)) nameStart = i;
  }
  return undefined;
}

function parseLine(raw: string): ParseResult {
  const line = cleanLine(raw);
  if (isBlank(line)) return NOISE;
  if (isBinary(line)) return bad('binary data');

  const values = new Map<string, number>();
  const epoch = EPOCH.exec(line);
  if (epoch) {
    const value = parseNumber(epoch[1]!);
    if (value !== undefined) values.set('epoch', value);
  }
  let pairs = 0;
  for (const [token] of line.matchAll(TOKEN)) {
    const pair = pairOf(token);
    if (!pair) continue;
    pairs++;
    const [mean, std] = splitPlusMinus(pair[1]);
    const meanValue = parseNumber(mean);
    if (meanValue !== undefined) setMetric(values, pair[0], meanValue);
    const stdValue = std === undefined ? undefined : parseNumber(std);
    if (stdValue !== undefined) values.set(stdName(canonicalName(pair[0])), stdValue);
  }
  if (epoch || pairs > 0) return metricResult(values);
  return isBanner(line) ? NOISE : bad('unrecognised line');
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
  open: () => guardedLineParser(parseLine),
};
