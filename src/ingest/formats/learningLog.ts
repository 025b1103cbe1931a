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
const PAIR = /([A-Za-z_][\w/.-]*)=(\S+)/g;
/** The banner the trainer writes when it creates the file: a rule, a title, a rule. */
const BANNER = /^\s*(?:[=\-#*~_]{3,}|.*Learning Metrics Log)\s*$/i;
/** A data line for detection under another file name: epoch tag followed by a pair. */
const EPOCH_LINE = /^\s*\[Epoch\s+[^\]]*\]\s+[A-Za-z_][\w/.-]*=\S/;
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
  PAIR.lastIndex = 0;
  for (let m = PAIR.exec(line); m !== null; m = PAIR.exec(line)) {
    pairs++;
    const [mean, std] = splitPlusMinus(m[2]!);
    const meanValue = parseNumber(mean);
    if (meanValue !== undefined) setMetric(values, m[1]!, meanValue);
    const stdValue = std === undefined ? undefined : parseNumber(std);
    if (stdValue !== undefined) values.set(stdName(canonicalName(m[1]!)), stdValue);
  }
  if (epoch || pairs > 0) return metricResult(values);
  return BANNER.test(line) ? NOISE : bad('unrecognised line');
}

function detect(file: FileInfo, head: string): Detection {
  const named = baseName(file.relPath) === 'learning.log';
  const { lines } = splitHead(head);
  let sawBanner = false;
  for (const line of lines) {
    if (isBlank(line)) continue;
    if (BANNER.test(line)) {
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
