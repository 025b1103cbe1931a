/**
 * Training stdout captured to `*.log`, `*.out`, `*.txt`:
 * - Hugging Face Trainer / TRL dict lines `{'loss': 0.0, 'reward': 0.5, 'epoch': 0.03}` (transformers 5 quotes
 *   the numbers), possibly behind tqdm progress text;
 * - verl / TinyZero lines `(TaskRunner pid=1) step:34 - actor/entropy:0.22 - critic/score/mean:0.5`.
 * Everything else (bars, warnings, banners, tracebacks) is noise.
 */
import type { FileInfo, LineFormat, ParseResult } from '../records.ts';
import { isCanonicalMetric, parseNumber } from '../metricNames.ts';
import {
  DETECT_LIMIT,
  NOISE,
  STEP_KEYS,
  bad,
  baseName,
  cleanLine,
  guardedLineParser,
  isBinary,
  isBlank,
  metricResult,
  readStep,
  setMetric,
  splitHead,
  type Detection,
} from './common.ts';
import { readPyDict } from './pyDict.ts';

/** Optional Ray actor prefix `(TaskRunner pid=1)` / `(main_task pid=1, ip=...)`, then `step:N - k:v - ...`. */
const VERL_LINE = /^\s*(?:\([^)]*\)\s*)?step:\s*(\d+)\s+-\s+(.*)$/;
const DICT_START = /\{\s*['"]/;
/** tqdm's `45%|████` or its rate `[00:20<09:40, 2.0s/it]`: a dict behind it is a Trainer log line. */
const TQDM = /\d%\||(?:it\/s|s\/it)\]/;
const STEP_KEY_SET: ReadonlySet<string> = new Set(STEP_KEYS);

function parseVerl(step: number, rest: string): ParseResult {
  const values = new Map<string, number>();
  for (const part of rest.split(' - ')) {
    // split at the first colon: keys have none, values may (`tensor(0.5, device='cuda:0')`)
    const colon = part.indexOf(':');
    if (colon <= 0) continue;
    const value = parseNumber(part.slice(colon + 1));
    if (value !== undefined) setMetric(values, part.slice(0, colon), value);
  }
  return metricResult(values, step);
}

function unquote(s: string): string {
  return s.length >= 2 && (s[0] === "'" || s[0] === '"') && s[s.length - 1] === s[0] ? s.slice(1, -1) : s;
}

function parseDict(line: string, at: number): ParseResult {
  const entries = readPyDict(line, at);
  if (entries === undefined) {
    // a dict at the start of the line or behind a progress bar was meant as a log line; elsewhere it is prose
    const prefix = line.slice(0, at);
    return isBlank(prefix) || TQDM.test(prefix) ? bad('unparseable dict line') : NOISE;
  }
  const values = new Map<string, number>();
  const steps: Record<string, unknown> = {};
  let known = false;
  for (const [key, text] of entries) {
    if (STEP_KEY_SET.has(key)) {
      steps[key] = parseNumber(text) ?? unquote(text);
      continue;
    }
    const value = parseNumber(text);
    if (value === undefined) continue;
    known = isCanonicalMetric(setMetric(values, key, value)) || known;
  }
  const step = readStep(steps);
  // config and kwargs dicts are printed too: a metric line names a step, an epoch or a known metric
  if (!known && step === undefined) return NOISE;
  return metricResult(values, step);
}

function parseLine(raw: string): ParseResult {
  const line = cleanLine(raw);
  if (isBlank(line)) return NOISE;
  if (isBinary(line)) return bad('binary data');
  const verl = VERL_LINE.exec(line);
  if (verl) return parseVerl(Number(verl[1]), verl[2]!);
  const dict = DICT_START.exec(line);
  if (dict) return parseDict(line, dict.index);
  return NOISE;
}

const parser = guardedLineParser(parseLine);

function detect(file: FileInfo, head: string): Detection {
  const name = baseName(file.relPath);
  if (name === 'learning.log' || !/\.(?:log|out|txt)$/i.test(name)) return 'no';
  if (splitHead(head).lines.some((line) => parser(line).kind === 'metric')) return 'yes';
  return head.length >= DETECT_LIMIT ? 'no' : 'later';
}

/** Not named `console`: that would shadow the global in every importer. */
export const consoleLog: LineFormat = {
  id: 'console',
  kind: 'lines',
  detect,
  // stateless, so one parser serves every file
  open: () => parser,
  textLog: true,
};
