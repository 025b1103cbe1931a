/**
 * Training stdout captured to a file (`*.log`, `*.out`, `*.err`, `nohup.out`, `slurm-*.out`; `*.txt` once it
 * shows a metric line). One reader per file, because several shapes share one capture and some span lines:
 * - Hugging Face Trainer / TRL dict lines `{'loss': 0.0, 'reward': 0.5, 'epoch': 0.03}` (transformers 5 quotes
 *   the numbers), the global step from the tqdm counter in front (`5/50 [..]{'loss': ...}`) or from
 *   `logging_steps`; the closing `train_runtime` dict is the run's summary, not a step;
 * - TRL's `log_completions` rich tables (richTable.ts) and seed 002's ComprehensiveLoggingCallback blocks
 *   (callbackLog.ts);
 * - verl / TinyZero lines `(TaskRunner pid=1) step:34 - actor/entropy:0.22 - critic/score/mean:0.5`, with a
 *   fractional epoch derived from the integer `training/epoch` (verlEpoch.ts);
 * - OpenRLHF's tqdm postfix `pg=0.12, rm=0.5, ...` (tqdm.ts);
 * - home-grown `key: value` lines (keyValue.ts).
 * Everything else (bars, warnings, banners, tracebacks) is noise here; the failure scanner reads it.
 */
import type { FileInfo, LineFormat, LineParser, ParseResult } from '../records.ts';
import { canonicalName, isCanonicalMetric, parseNumber } from '../metricNames.ts';
import { CallbackLog } from './callbackLog.ts';
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
import { readKeyValueLine } from './keyValue.ts';
import { readPyDict } from './pyDict.ts';
import { RichTable } from './richTable.ts';
import { barAtEnd, episodeOf, type TqdmBar } from './tqdm.ts';
import { VerlEpoch } from './verlEpoch.ts';

/** Optional Ray actor prefix `(TaskRunner pid=1)` / `(main_task pid=1, ip=...)`, then `step:N - k:v - ...`. */
const VERL_LINE = /^\s*(?:\([^)]*\)\s*)?step:\s*(\d+)\s+-\s+(.*)$/;
const DICT_START = /\{\s*['"]/;
/** tqdm's `45%|████` or its rate `[00:20<09:40, 2.0s/it]`: a dict behind it is a Trainer log line. */
const TQDM = /\d%\||(?:it\/s|s\/it)\]/;
const STEP_KEY_SET: ReadonlySet<string> = new Set(STEP_KEYS);
/** verl's start-up line, and the Trainer's `Total optimization steps = 500` banner. */
const TOTAL_STEPS = /(?:Total training steps|Total optimization steps)\s*[:=]\s*([\d,]+)\s*$/;
/** `logging_steps=5` (TrainingArguments repr), `'logging_steps': 5` (dict), `logging_steps: 5` (YAML) */
const LOGGING_STEPS = /\blogging_steps['"]?\s*[:=]\s*(\d+)\b/;
/** `'total_epochs': 15` in verl's printed config */
const TOTAL_EPOCHS = /'total_epochs':\s*(\d+)\b/;
/** a lone key-value line joins the step of a metric line this few lines before it (DeepSpeed-Chat's reward) */
const CONTINUATION_LINES = 5;
/** Bars that count training steps: the Trainer's has no description, verl's says so. */
const TRAIN_BAR_DESC: ReadonlySet<string> = new Set(['', 'Training Progress', 'Training']);

function unquote(s: string): string {
  return s.length >= 2 && (s[0] === "'" || s[0] === '"') && s[s.length - 1] === s[0] ? s.slice(1, -1) : s;
}

const meta = (title: string, text: string, values: Record<string, number>): ParseResult => ({
  kind: 'event',
  record: { kind: 'meta', title, text, values },
});

/** The per-file state of one captured stdout. */
class ConsoleReader {
  private readonly verlEpoch = new VerlEpoch();
  private readonly table = new RichTable();
  private readonly callback = new CallbackLog();
  /** total of the first training bar: later bars with another total (evaluation) do not number steps */
  private trainTotal: number | undefined;
  private announcedTotal: number | undefined;
  private loggingSteps: number | undefined;
  private dictLogs = 0;
  /** steps between two train logs, as seen (when `logging_steps` was not printed) */
  private interval: number | undefined;
  private lastDictStep: number | undefined;
  private keyValueStep: number | undefined;
  private linesSinceKeyValue = 0;

  parse(raw: string): ParseResult {
    const line = cleanLine(raw);
    // a blank line (tqdm clearing its bar) leaves a table open, and ends a callback section
    if (isBlank(line)) return (this.table.active ? NOISE : this.callback.feed(line)) ?? NOISE;
    if (isBinary(line)) return bad('binary data');
    this.linesSinceKeyValue++;

    const tabled = this.table.feed(line);
    if (tabled !== undefined) return tabled;
    const block = this.callback.feed(line);
    if (block !== undefined) return block;

    const verl = VERL_LINE.exec(line);
    if (verl) return this.parseVerl(Number(verl[1]), verl[2]!);
    const dict = DICT_START.exec(line);
    if (dict) return this.parseDict(line, dict.index);
    const bar = line.includes('%|') ? barAtEnd(line) : undefined;
    if (bar) return this.parseBar(bar, line);
    return this.parseKeyValue(line) ?? this.parseFacts(line);
  }

  private parseVerl(step: number, rest: string): ParseResult {
    const values = new Map<string, number>();
    for (const part of rest.split(' - ')) {
      // split at the first colon: keys have none, values may (`tensor(0.5, device='cuda:0')`)
      const colon = part.indexOf(':');
      if (colon <= 0) continue;
      const value = parseNumber(part.slice(colon + 1));
      if (value !== undefined) setMetric(values, part.slice(0, colon), value);
    }
    if (!values.has('epoch')) {
      const epoch = this.verlEpoch.epochAt(step, values.get('training/epoch'));
      if (epoch !== undefined) values.set('epoch', epoch);
    }
    return metricResult(values, step);
  }

  private parseDict(line: string, at: number): ParseResult {
    const entries = readPyDict(line, at);
    const prefix = line.slice(0, at);
    if (entries === undefined) {
      // a dict at the start of the line or behind a progress bar was meant as a log line; elsewhere it is prose
      return isBlank(prefix) || TQDM.test(prefix) ? bad('unparseable dict line') : this.parseFacts(line);
    }
    const values = new Map<string, number>();
    const steps: Record<string, unknown> = {};
    const raw: Record<string, number> = {};
    let known = false;
    let evaluation = false;
    for (const [key, text] of entries) {
      if (STEP_KEY_SET.has(key)) {
        steps[key] = parseNumber(text) ?? unquote(text);
        continue;
      }
      const value = parseNumber(text);
      if (value === undefined) continue;
      raw[key] = value;
      if (key.startsWith('eval_')) evaluation = true;
      known = isCanonicalMetric(setMetric(values, key, value)) || known;
    }
    const bar = barAtEnd(prefix);
    const counted = bar !== undefined && this.isTrainBar(bar) ? bar.done : undefined;
    if ('train_runtime' in raw) {
      const record = { kind: 'finished' as const, title: 'training finished', text: line, values: raw };
      return { kind: 'event', record: counted === undefined ? record : { ...record, step: counted } };
    }
    let step = readStep(steps);
    // config and kwargs dicts are printed too: a metric line names a step, an epoch or a known metric
    if (!known && step === undefined) return this.parseFacts(line);
    if (step === undefined && evaluation) step = this.lastDictStep;
    if (step === undefined) step = this.trainStep(counted);
    if (!evaluation) this.dictLogs++;
    if (step !== undefined && !evaluation) {
      if (this.lastDictStep !== undefined && step > this.lastDictStep) this.interval ??= step - this.lastDictStep;
      this.lastDictStep = step;
    }
    return metricResult(values, step);
  }

  /**
   * The global step of a train log line. The Trainer logs every `logging_steps`, so a counter that ran ahead
   * before the line was printed (AsyncGRPO prints step 45's dict behind `46/50`) is rounded down to the
   * interval, and a dict without a bar (the last one) is the step after the previous log.
   */
  private trainStep(counted: number | undefined): number | undefined {
    const interval = this.loggingSteps ?? this.interval;
    if (counted !== undefined) {
      const rounded = interval === undefined ? counted : counted - (counted % interval);
      return rounded > (this.lastDictStep ?? 0) ? rounded : counted;
    }
    if (this.lastDictStep !== undefined && interval !== undefined) return this.lastDictStep + interval;
    if (this.loggingSteps !== undefined) return (this.dictLogs + 1) * this.loggingSteps;
    return undefined;
  }

  private isTrainBar(bar: TqdmBar): boolean {
    if (!TRAIN_BAR_DESC.has(bar.desc)) return false;
    this.trainTotal ??= bar.total;
    return bar.total === this.trainTotal;
  }

  private parseBar(bar: TqdmBar, line: string): ParseResult {
    if (bar.postfix.length > 0) {
      const values = new Map<string, number>();
      for (const [key, text] of bar.postfix) {
        const value = parseNumber(text);
        if (value !== undefined) setMetric(values, OPENRLHF_POSTFIX.get(key) ?? key, value);
      }
      if (values.size > 0) return metricResult(values, stepOfEpisodeBar(bar));
    }
    if (!this.isTrainBar(bar)) return NOISE;
    this.verlEpoch.setTotalSteps(bar.total);
    return this.announceTotal(bar.total, line);
  }

  private announceTotal(total: number, line: string): ParseResult {
    if (total <= 0 || total === this.announcedTotal) return NOISE;
    this.announcedTotal = total;
    return meta('total steps', line, { total_steps: total });
  }

  private parseKeyValue(line: string): ParseResult | undefined {
    if (!line.includes(':') && !line.includes('=')) return undefined;
    const kv = readKeyValueLine(line, parseNumber);
    if (kv === undefined || kv.pairs.length === 0) return undefined;
    const values = new Map<string, number>();
    for (const [key, value] of kv.pairs) setMetric(values, key, value);
    if (kv.epoch !== undefined) values.set('epoch', kv.epoch);
    let step = kv.step;
    if (step === undefined && kv.pairs.length < 2) {
      // one pair alone is a setting, unless it follows a metric line: DeepSpeed-Chat prints the step's reward
      // on its own line (`average reward score: -0.679`)
      const name = canonicalName(kv.pairs[0]![0]);
      if (this.keyValueStep === undefined || this.linesSinceKeyValue > CONTINUATION_LINES) return undefined;
      if (!isCanonicalMetric(name)) return undefined;
      step = this.keyValueStep;
    }
    if (step !== undefined && kv.step !== undefined) {
      this.keyValueStep = step;
      this.linesSinceKeyValue = 0;
    }
    return metricResult(values, step);
  }

  /** Lines that say something about the run rather than a step: totals, logging interval, epochs. */
  private parseFacts(line: string): ParseResult {
    if (line.includes('logging_steps')) {
      const m = LOGGING_STEPS.exec(line);
      if (m) this.loggingSteps = Number(m[1]) || undefined;
    }
    if (line.includes('total_epochs')) {
      const m = TOTAL_EPOCHS.exec(line);
      if (m) this.verlEpoch.setTotalEpochs(Number(m[1]));
    }
    if (line.includes('Total ')) {
      const m = TOTAL_STEPS.exec(line);
      if (m) {
        const total = Number(m[1]!.replaceAll(',', ''));
        this.verlEpoch.setTotalSteps(total);
        this.trainTotal ??= total;
        return this.announceTotal(total, line);
      }
    }
    return NOISE;
  }
}

/** OpenRLHF's short postfix names; `ret`, `tlen` and the rest keep their own. */
const OPENRLHF_POSTFIX: ReadonlyMap<string, string> = new Map([
  ['pg', 'loss'],
  ['rm', 'reward'],
  ['kl', 'kl'],
  ['glen', 'completion_length'],
  ['act_lr', 'lr'],
]);

/** The global step of an OpenRLHF bar: episodes restart the counter. */
function stepOfEpisodeBar(bar: TqdmBar): number {
  const ep = episodeOf(bar.desc);
  if (ep === undefined) return bar.done;
  return (ep.oneBased ? ep.episode - 1 : ep.episode) * bar.total + bar.done;
}

/** Names claimed as captured stdout before any metric line shows. */
const STDOUT_NAME = /\.(?:log|out|err)$/i;
/** wandb's own debug logs sit in run folders too; they are not the job's output. */
const NOT_STDOUT = /^debug(?:-internal|-core|-cli\..*)?\.log$/;

function detect(file: FileInfo, head: string): Detection {
  const name = baseName(file.relPath);
  if (name === 'learning.log' || NOT_STDOUT.test(name)) return 'no';
  const byName = STDOUT_NAME.test(name);
  if (!byName && !/\.txt$/i.test(name)) return 'no';
  const { lines, partial } = splitHead(head);
  if (byName) {
    // any text: a long preamble (TRL's completion tables) or a crash before the first step is still read
    if (isBlank(partial) && lines.every(isBlank)) return 'later';
    return [...lines.slice(0, 20), partial].some(isBinary) ? 'no' : 'yes';
  }
  const parse = open();
  if (lines.some((line) => parse(line).kind === 'metric')) return 'yes';
  return head.length >= DETECT_LIMIT ? 'no' : 'later';
}


function open(): LineParser {
  const reader = new ConsoleReader();
  return guardedLineParser((line) => reader.parse(line));
}

/** Not named `console`: that would shadow the global in every importer. */
export const consoleLog: LineFormat = {
  id: 'console',
  kind: 'lines',
  detect,
  open,
  textLog: true,
};
