/** Helpers shared by the format modules: line cleaning, lenient JSON, value extraction, example keys. */
import { createHash } from 'node:crypto';
import type { ExampleRecord, FileInfo, LineParser, MetricRecord, ParseResult } from '../records.ts';
import { canonicalName, parseNumber } from '../metricNames.ts';

export type Detection = 'yes' | 'no' | 'later';

/** A head this long that still shows no data line will not show one later: give up on the file. */
export const DETECT_LIMIT = 64 * 1024;

export const NOISE: ParseResult = Object.freeze({ kind: 'noise' });

export function bad(reason: string): ParseResult {
  return { kind: 'bad', reason };
}

/** Reason for a line a parser threw on. Constant, because bad lines are counted per reason. */
export const PARSER_ERROR = 'parser error';

/** Parsers must never throw: a bug in one format costs one line, not the tailer. */
export function guardedLineParser(parser: LineParser): LineParser {
  return (line) => {
    try {
      return parser(line);
    } catch {
      return bad(PARSER_ERROR);
    }
  };
}

// ---------------------------------------------------------------------------------------------- lines

/** CSI (colours, tqdm's cursor moves), OSC (hyperlinks, titles), charset selection (`tput sgr0`), 2-byte escapes. */
const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[()*+][ -~]|[@-Z\\-_])/g;
/** Control characters no text log contains (tab, LF, CR excepted). Checked after ANSI stripping. */
const BINARY = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/** Strips a BOM, ANSI escapes and line-end leftovers (`\r` of CRLF files). */
export function cleanLine(line: string): string {
  let s = line.charCodeAt(0) === 0xfeff ? line.slice(1) : line;
  if (s.includes('\x1b')) s = s.replace(ANSI, '');
  let end = s.length;
  while (end > 0) {
    const c = s.charCodeAt(end - 1);
    if (c !== 13 && c !== 10) break;
    end--;
  }
  return end === s.length ? s : s.slice(0, end);
}

export function isBinary(line: string): boolean {
  return BINARY.test(line);
}

export function isBlank(line: string): boolean {
  return line.trim().length === 0;
}

export interface Head {
  /** cleaned lines that ended with a line break */
  lines: string[];
  /** cleaned text after the last line break ('' if none): possibly half a line */
  partial: string;
}

/** Splits a file head the way the tailer splits a file: on `\n`, `\r\n` and tqdm's bare `\r`. */
export function splitHead(head: string): Head {
  const parts = head.split(/\r\n|\r|\n/);
  const partial = parts.pop() ?? '';
  return { lines: parts.map(cleanLine), partial: cleanLine(partial) };
}

export function baseName(relPath: string): string {
  return relPath.slice(relPath.lastIndexOf('/') + 1);
}

/** `rollouts/34.jsonl`, `completions_0034.jsonl` -> 34. */
export function stepFromFileName(relPath: string): number | undefined {
  const m = /(?:^|[_-])(\d+)\.jsonl$/.exec(baseName(relPath));
  return m ? Number(m[1]) : undefined;
}

// ----------------------------------------------------------------------------------------------- JSON

const NAN_TOKEN = '\u0000rlwatch:NaN';
const INF_TOKEN = '\u0000rlwatch:Infinity';
const NEG_INF_TOKEN = '\u0000rlwatch:-Infinity';
const NON_FINITE_TOKENS: ReadonlyArray<readonly [string, string]> = [
  ['NaN', JSON.stringify(NAN_TOKEN)],
  ['Infinity', JSON.stringify(INF_TOKEN)],
  ['-Infinity', JSON.stringify(NEG_INF_TOKEN)],
];

/**
 * JSON.parse that also reads Python's `NaN`, `Infinity` and `-Infinity` (json.dump writes them).
 * Returns undefined for invalid JSON. Strict parse first: the rewrite only runs on lines that fail.
 */
export function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    if (!text.includes('NaN') && !text.includes('Infinity')) return undefined;
  }
  try {
    return { value: JSON.parse(replaceNonFinite(text), reviveNonFinite) };
  } catch {
    return undefined;
  }
}

/** Replaces bare NaN/Infinity tokens outside strings with string sentinels that the reviver turns back. */
function replaceNonFinite(text: string): string {
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    if (c === 34) inString = true;
    if (c !== 78 /* N */ && c !== 73 /* I */ && c !== 45 /* - */) continue;
    for (const [token, sentinel] of NON_FINITE_TOKENS) {
      if (!text.startsWith(token, i)) continue;
      out += text.slice(last, i) + sentinel;
      i += token.length - 1;
      last = i + 1;
      break;
    }
  }
  return out + text.slice(last);
}

function reviveNonFinite(_key: string, value: unknown): unknown {
  if (typeof value !== 'string' || value.charCodeAt(0) !== 0) return value;
  if (value === NAN_TOKEN) return NaN;
  if (value === INF_TOKEN) return Infinity;
  if (value === NEG_INF_TOKEN) return -Infinity;
  return value;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** No log line nests deeper; V8's JSON.parse spends ~0.4 s per MB of nested brackets (bench/worstCase.ts). */
const MAX_JSON_DEPTH = 512;

/** Whether brackets outside strings nest deeper than MAX_JSON_DEPTH: one pass, stopping there. */
function nestsTooDeep(text: string): boolean {
  if (text.length <= 2 * MAX_JSON_DEPTH) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

/** Line parser for JSON-lines files: cleaning, blank lines and JSON errors handled once for all formats. */
export function jsonLines(handle: (obj: Record<string, unknown>) => ParseResult): LineParser {
  return guardedLineParser((raw) => {
    const line = cleanLine(raw);
    if (isBlank(line)) return NOISE;
    if (nestsTooDeep(line)) return bad('JSON nested too deep');
    const parsed = parseJson(line);
    // valid JSON never holds raw control characters, so only a failed line needs the binary check
    if (parsed === undefined) return bad(isBinary(line) ? 'binary data' : 'invalid JSON');
    if (!isRecord(parsed.value)) return bad('not a JSON object');
    return handle(parsed.value);
  });
}

/**
 * Detection for JSON-lines formats: the first non-blank line decides. With no complete line yet the answer
 * is `later`, unless the head already holds a whole object (an object cannot be extended). A first line
 * longer than the detection window (a long generation) is accepted on the file name alone if `byName`.
 */
export function detectJsonl(
  head: string,
  accept: (obj: Record<string, unknown>) => boolean,
  byName = false,
): Detection {
  const { lines, partial } = splitHead(head);
  const first = lines.find((l) => !isBlank(l));
  if (first === undefined) {
    if (isBlank(partial)) return 'later';
    const parsed = parseJson(partial);
    if (parsed !== undefined) return isRecord(parsed.value) && accept(parsed.value) ? 'yes' : 'no';
    if (head.length < DETECT_LIMIT) return 'later';
    return byName && partial.trimStart().startsWith('{') ? 'yes' : 'no';
  }
  const parsed = parseJson(first);
  return parsed !== undefined && isRecord(parsed.value) && accept(parsed.value) ? 'yes' : 'no';
}

// ------------------------------------------------------------------------------------- values, steps

/** Keys that number a logging step, by preference. ms-swift writes `"global_step/max_steps": "10/1000"`. */
export const STEP_KEYS: readonly string[] = ['step', 'global_step', 'global_step/max_steps', 'iteration', '_step'];

export function toStep(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'string') return undefined;
  const m = /^\s*(\d+)\s*(?:\/\s*\d+\s*)?$/.exec(v);
  return m ? Number(m[1]) : undefined;
}

export function readStep(obj: Record<string, unknown>): number | undefined {
  for (const key of STEP_KEYS) {
    const step = toStep(obj[key]);
    if (step !== undefined) return step;
  }
  return undefined;
}

export interface NumberOptions {
  /** read `"0.5"` as 0.5 (ms-swift, transformers 5); off where strings are ids or text */
  numericStrings: boolean;
  /** descend into nested objects, joining keys with `/` */
  flatten: boolean;
  /** top-level keys to leave out */
  skip?: ReadonlySet<string>;
}

/** Calls `fn` for every numeric field. Booleans, null, arrays and non-numeric strings are skipped. */
export function forEachNumber(
  obj: Record<string, unknown>,
  opts: NumberOptions,
  fn: (key: string, value: number) => void,
  prefix = '',
): void {
  for (const key of Object.keys(obj)) {
    if (key === '__proto__' || (prefix === '' && opts.skip?.has(key))) continue;
    const v = obj[key];
    if (typeof v === 'number') fn(prefix + key, v);
    else if (typeof v === 'string') {
      if (!opts.numericStrings) continue;
      const n = parseNumber(v);
      if (n !== undefined) fn(prefix + key, n);
    } else if (opts.flatten && isRecord(v)) forEachNumber(v, opts, fn, `${prefix}${key}/`);
  }
}

/**
 * Stores a value under its canonical name. When two keys of one record map onto the same name, a key that
 * already is the canonical name beats an alias (`reward` over `train/reward`); among aliases the first wins.
 * Returns the canonical name.
 */
export function setMetric(values: Map<string, number>, rawKey: string, value: number): string {
  const name = canonicalName(rawKey);
  if (name === rawKey || !values.has(name)) values.set(name, value);
  return name;
}

export function metricResult(values: Map<string, number>, step?: number): ParseResult {
  if (values.size === 0) return bad('no numeric fields');
  const record: MetricRecord = { values };
  if (step !== undefined) record.step = step;
  const epoch = values.get('epoch');
  if (epoch !== undefined) record.epoch = epoch;
  return { kind: 'metric', record };
}

const SKIP_STEPS: ReadonlySet<string> = new Set(STEP_KEYS);
const SKIP_STEPS_AND_DATA: ReadonlySet<string> = new Set([...STEP_KEYS, 'data']);

/**
 * A JSON metric object: TRL keys, ms-swift quoted numbers, nested objects flattened with `/`, and verl's
 * file logger `{"step": N, "data": {...}}` whose `data` is read without a prefix.
 */
export function metricFromObject(obj: Record<string, unknown>): ParseResult {
  const values = new Map<string, number>();
  const add = (key: string, value: number) => setMetric(values, key, value);
  const data = obj['data'];
  if (isRecord(data)) {
    forEachNumber(obj, { numericStrings: true, flatten: true, skip: SKIP_STEPS_AND_DATA }, add);
    forEachNumber(data, { numericStrings: true, flatten: true, skip: SKIP_STEPS }, add);
    return metricResult(values, readStep(obj) ?? readStep(data));
  }
  forEachNumber(obj, { numericStrings: true, flatten: true, skip: SKIP_STEPS }, add);
  return metricResult(values, readStep(obj));
}

// ------------------------------------------------------------------------------------------- examples

/** Keys whose string value is generation text: a line holding one is an example, not a metric log. */
const TEXT_KEYS = ['completion', 'output', 'response', 'preview', 'prompt', 'input', 'generation'];

export function looksLikeExample(obj: Record<string, unknown>): boolean {
  return TEXT_KEYS.some((k) => textOf(obj[k]) !== undefined);
}

/** A string, or chat messages (`[{role, content}]`, TRL's conversational format) joined into one. */
export function textOf(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (!Array.isArray(v)) return undefined;
  const parts: string[] = [];
  for (const m of v) {
    if (typeof m === 'string') parts.push(m);
    else if (isRecord(m) && typeof m['content'] === 'string') parts.push(m['content']);
    else return undefined;
  }
  return parts.join('\n\n');
}

/** The first `n` code points: Python's `completion[:200]` counts code points, JS strings count UTF-16 units. */
export function firstCodePoints(s: string, n: number): string {
  if (s.length <= n) return s;
  let i = 0;
  for (let count = 0; count < n && i < s.length; count++) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
  }
  return s.slice(0, i);
}

export function shortHash(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 12);
}

/**
 * Identity of a generation across files: the breakdown file only has `preview` = the first 200 characters
 * of the completion, so both sides hash exactly that.
 */
export function exampleKey(problemId: string, completion: string): string {
  return `${problemId}:${shortHash(firstCodePoints(completion, 200))}`;
}

/** The first of `keys` that `read` accepts, with the key it came from. */
function firstOf<T>(
  obj: Record<string, unknown>,
  keys: readonly string[],
  read: (v: unknown) => T | undefined,
): [string, T] | undefined {
  for (const key of keys) {
    const value = read(obj[key]);
    if (value !== undefined) return [key, value];
  }
  return undefined;
}

const numberOf = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const idOf = (v: unknown): string | undefined =>
  typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;

/** Never part of a breakdown: they identify or place a generation rather than score it. */
const NOT_BREAKDOWN = ['timestamp', 'time', 'gts', 'ground_truth', ...STEP_KEYS];

export interface ExampleFields {
  completion: readonly string[];
  reward: readonly string[];
  prompt?: readonly string[];
  id: readonly string[];
  /** without an id field, identify the problem by a hash of its prompt (verl dumps carry no id) */
  idFromPrompt?: boolean;
}

/** The line parser of a generations file: one example per JSON line, the step from the line or else
 * from a file named by its step (`rollout_data/34.jsonl`). */
export function exampleLines(fields: ExampleFields): (file: FileInfo) => LineParser {
  return (file) => {
    const fileStep = stepFromFileName(file.relPath);
    return jsonLines((obj) => exampleFromObject(obj, fields, fileStep));
  };
}

/** Builds an example record: text and reward from the first present field of each list, other numbers as breakdown. */
export function exampleFromObject(obj: Record<string, unknown>, fields: ExampleFields, fileStep?: number): ParseResult {
  const completion = firstOf(obj, fields.completion, textOf)?.[1];
  if (completion === undefined) return bad('no completion text');
  const reward = firstOf(obj, fields.reward, numberOf);
  if (reward === undefined) return bad('no reward');
  const prompt = firstOf(obj, fields.prompt ?? [], textOf)?.[1];
  let id = firstOf(obj, fields.id, idOf)?.[1];
  if (id === undefined && fields.idFromPrompt && prompt !== undefined) id = shortHash(prompt);

  const skip = new Set([...NOT_BREAKDOWN, ...fields.id, reward[0]]);
  const breakdown: Record<string, number> = {};
  forEachNumber(obj, { numericStrings: false, flatten: false, skip }, (key, value) => {
    breakdown[key] = value;
  });

  const record: ExampleRecord = { key: exampleKey(id ?? '', completion), completion, reward: reward[1], breakdown };
  const step = readStep(obj) ?? fileStep;
  if (step !== undefined) record.step = step;
  if (prompt !== undefined) record.prompt = prompt;
  return { kind: 'example', record };
}
