/**
 * Training stdout captured to a file (`*.log`, `*.out`, `*.err`, `nohup.out`, `slurm-*.out`; `*.txt` once it
 * shows a metric line). One reader per file, because several shapes share one capture and some span lines:
 * - Hugging Face Trainer / TRL dict lines `{'loss': 0.0, 'reward': 0.5, 'epoch': 0.03}` (transformers 5 quotes
 *   the numbers): a whole line (or behind a progress bar) naming a training quantity; a dict quoted in a message,
 *   a logger line or a config print is not a step. The global step: see `placeTrainDict`. The closing
 *   `train_runtime` dict is the run's summary, not a step;
 * - TRL's `log_completions` rich tables (richTable.ts) and the R1-Zero GRPO logging guide's
 *   ComprehensiveLoggingCallback blocks (callbackLog.ts);
 * - verl / TinyZero lines `(TaskRunner pid=1) step:34 - actor/entropy:0.22 - critic/score/mean:0.5`, with a
 *   fractional epoch derived from the integer `training/epoch` (verlEpoch.ts);
 * - OpenRLHF's tqdm postfix `pg=0.12, rm=0.5, ...` (tqdm.ts);
 * - home-grown `key: value` lines (keyValue.ts).
 * Everything else (bars, warnings, banners, tracebacks) is noise here; the failure scanner reads it.
 */
import type { FileInfo, LineFormat, LineParser, ParseResult } from '../../records.ts';
import { canonicalName, isCanonicalMetric, isCounter, parseNumber } from '../../metricNames.ts';
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
} from '../common.ts';
import { readKeyValueLine } from './keyValue.ts';
import { readPyDict } from './pyDict.ts';
import { RichTable } from './richTable.ts';
import { barAtEnd, barAtStart, episodeOf, type TqdmBar } from './tqdm.ts';
import { VerlEpoch } from './verlEpoch.ts';

/** Optional Ray actor prefix `(TaskRunner pid=1)` / `(main_task pid=1, ip=...)`, then `step:N - k:v - ...`. */
const VERL_LINE = /^\s*(?:\([^)]*\)\s*)?step:\s*(\d+)\s+-\s+(.*)$/;
const DICT_START = /\{\s*['"]/;
/** what a launcher puts before each line of a process: Ray's `(TrainerActor pid=7)`, torchrun's `[rank0]:` */
const PROCESS_PREFIX = /^\s*(?:(?:\([^()]*\bpid=\d+[^()]*\)|\[(?:rank|default)\d+\]:)\s*)+$/;
const STEP_KEY_SET: ReadonlySet<string> = new Set(STEP_KEYS);
/** verl's start-up line, and the Trainer's `Total optimization steps = 500` banner. */
const TOTAL_STEPS = /(?:Total training steps|Total optimization steps)\s*[:=]\s*([\d,]+)\s*$/;
/** `logging_steps=5` (TrainingArguments repr), `'logging_steps': 5` (dict), `logging_steps: 5` (YAML) */
const LOGGING_STEPS = /\blogging_steps['"]?\s*[:=]\s*(\d+)\b/;
/** `'total_epochs': 15` in verl's printed config */
const TOTAL_EPOCHS = /'total_epochs':\s*(\d+)\b/;
/** the Trainer's banner `Num Epochs = 3` (Unsloth's: `Num Epochs = 4 | Total steps = 250`) */
const NUM_EPOCHS = /\bNum Epochs\s*=\s*([\d,]+)/;
/** Unsloth's banner puts its total mid-line: `Num examples = 80 | Num Epochs = 4 | Total steps = 250` */
const TOTAL_STEPS_MID = /\|\s*Total steps\s*=\s*([\d,]+)/;
/** `Step 5: loss=...`, `[step 11] acc=...`: a line that means to give a step's metrics */
const STEP_LINE = /^\s*\[?step\b[\s:=]*\d+\]?[\s:,|-]*[A-Za-z_][\w/ .-]*\s*[:=]\s*[-+.\d]/i;
/** Skip reasons (constant: skips are counted per reason, with one example line each). */
export const DICT_NOT_READ = 'dict line not read (cut off or nested)';
export const STEP_LINE_NOT_READ = 'step line not read';
/** a lone key-value line joins the step of a metric line this few lines before it (DeepSpeed-Chat's reward) */
const CONTINUATION_LINES = 5;
/** Bars that count training steps: the Trainer's has no description, verl's says so. */
const TRAIN_BAR_DESC: ReadonlySet<string> = new Set(['', 'Training Progress', 'Training']);
/** Canonical names a training record carries (a config dict has numbers too, but none of these). */
const TRAINING_METRICS: ReadonlySet<string> = new Set([
  'loss',
  'reward',
  'reward_std',
  'grad_norm',
  'lr',
  'kl',
  'entropy',
  'frac_zero_std',
  'value_loss',
  'clipped_ratio',
]);
const isTrainingMetric = (name: string): boolean => TRAINING_METRICS.has(name) || name.startsWith('rewards/');
/** queued log steps kept at most: a bar redrawn for other messages must not grow memory */
const MAX_LOGGED = 4096;

/** Half a unit of the last digit a number was printed with: `0.01` -> 0.005, `'6.691e-03'` -> 5e-7. */
function halfUnit(text: string): number {
  const t = unquote(text.trim());
  const e = t.search(/[eE]/);
  const mantissa = e < 0 ? t : t.slice(0, e);
  const exponent = e < 0 ? 0 : Number(t.slice(e + 1)) || 0;
  const dot = mantissa.indexOf('.');
  const decimals = dot < 0 ? 0 : mantissa.length - dot - 1;
  return 0.5 * 10 ** (exponent - decimals);
}

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
  /** the count of the training bar last drawn, and what it was when the last train dict was placed */
  private counter: number | undefined;
  private counterAtDict: number | undefined;
  /** the count of the bar on the line before, while only tqdm's clear (a line of spaces) has followed it */
  private barBefore: number | undefined;
  private clearedAt: number | undefined;
  /** Steps at which tqdm cleared the bar and drew it again with no dict between: the Trainer logged there (its
   * tqdm.write), but block-buffered stdout (`nohup`) holds the dict back; the dicts come later in a burst, in order. */
  private readonly logged: number[] = [];
  /** the furthest train dict placed by exact evidence, with its epoch as printed: steps per epoch = step / epoch */
  private anchor: { step: number; epoch: number; half: number } | undefined;
  private numEpochs: number | undefined;
  private keyValueStep: number | undefined;
  private linesSinceKeyValue = 0;

  parse(raw: string): ParseResult {
    const line = cleanLine(raw);
    // a blank line (tqdm clearing its bar) leaves a table open, and ends a callback section
    if (isBlank(line)) {
      if (line.length > 0 && this.barBefore !== undefined) this.clearedAt = this.barBefore;
      return (this.table.active ? NOISE : this.callback.feed(line)) ?? NOISE;
    }
    if (isBinary(line)) return bad('binary data');
    this.linesSinceKeyValue++;
    this.noteBar(line);

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

  /**
   * Watches the training bar: its count, and tqdm.write's clear-and-redraw. A bar drawn again at the count it was
   * cleared at, with no dict behind it, marks a log whose dict stdout has not written yet.
   */
  private noteBar(line: string): void {
    const lead = line.includes('%|') ? barAtStart(line) : undefined;
    const count = lead !== undefined && this.isTrainBar(lead) ? lead.done : undefined;
    if (count !== undefined) {
      const dictBehind = DICT_START.test(line.slice(line.indexOf(']', line.indexOf('%|'))));
      if (this.clearedAt === count && !dictBehind && this.logged.length < MAX_LOGGED) this.logged.push(count);
      this.counter = count;
    }
    this.barBefore = count;
    this.clearedAt = undefined;
  }

  private parseDict(line: string, at: number): ParseResult {
    const prefix = line.slice(0, at);
    // a training record is a line of its own (a process's, maybe), or the rest of a progress bar's; a dict inside
    // a message, a logger line or a config print (`config: {...}`, `kwargs: {...}`) is text
    const own = isBlank(prefix) || PROCESS_PREFIX.test(prefix);
    const bar = own ? undefined : barAtEnd(prefix);
    if (!own && bar === undefined) return this.parseFacts(line);
    const read = readPyDict(line, at);
    // a cut-off dict on a line of its own was meant as a record; behind a process's prefix it may be a config dump
    // printed over many lines (verl's `(TaskRunner pid=1) {'actor_rollout_ref': {'actor': {...`)
    if (read === undefined) return isBlank(prefix) || bar !== undefined ? bad(DICT_NOT_READ) : this.parseFacts(line);
    // a dict quoted with more text after it: `{'step': 0, 'reward': 2.6} of type {...}` in an error message
    if (!isBlank(line.slice(read.end + 1))) return this.parseFacts(line);
    const values = new Map<string, number>();
    const steps: Record<string, unknown> = {};
    const raw: Record<string, number> = {};
    let training = false;
    let evaluation = false;
    let epochText: string | undefined;
    for (const [key, text] of read.entries) {
      if (STEP_KEY_SET.has(key)) {
        steps[key] = parseNumber(text) ?? unquote(text);
        continue;
      }
      const value = parseNumber(text);
      if (value === undefined || isCounter(key)) continue;
      raw[key] = value;
      if (key === 'epoch') epochText = text;
      if (key.startsWith('eval_')) evaluation = true;
      training = isTrainingMetric(setMetric(values, key, value)) || training;
    }
    const counted = bar !== undefined && this.isTrainBar(bar) ? bar.done : undefined;
    if ('train_runtime' in raw) {
      const record = { kind: 'finished' as const, title: 'training finished', text: line, values: raw };
      return { kind: 'event', record: counted === undefined ? record : { ...record, step: counted } };
    }
    // a config or kwargs dict has numbers too, but names no training quantity (`logging_steps` may be among them)
    if (!training && !evaluation) return this.parseFacts(line);
    let step = readStep(steps);
    if (evaluation) return metricResult(values, step ?? this.logged.shift() ?? this.lastDictStep);
    const epochValue = raw['epoch'];
    const epoch =
      epochText === undefined || !Number.isFinite(epochValue)
        ? undefined
        : { value: epochValue!, half: halfUnit(epochText) };
    if (step === undefined) {
      const placed = this.placeTrainDict(counted, epoch);
      step = placed.step;
      if (
        placed.exact &&
        step !== undefined &&
        epoch !== undefined &&
        epoch.value > 0 &&
        step >= (this.anchor?.step ?? 0)
      )
        this.anchor = { step, epoch: epoch.value, half: epoch.half };
    } else if (epoch !== undefined && epoch.value > 0) {
      this.anchor = { step, epoch: epoch.value, half: epoch.half };
    }
    this.dictLogs++;
    this.counterAtDict = this.counter;
    if (step !== undefined) {
      if (this.lastDictStep !== undefined && step > this.lastDictStep) this.interval ??= step - this.lastDictStep;
      this.lastDictStep = step;
    }
    return metricResult(values, step);
  }

  /**
   * The global step of a train dict without one, from the best evidence before it (never after it: a live read
   * stops anywhere): the bar's marks of logs still buffered (checked against the epoch), a progress bar in front of
   * the dict, the bar's count when it moved since the last dict (a count that did not move while the epochs did is
   * stale), the epoch times the steps per epoch (learned from a dict placed exactly, else the `Num Epochs` banner),
   * the step after the last numbered line of a home-grown loop, then `logging_steps` spacing. `exact`: the step came
   * from the bar.
   */
  private placeTrainDict(
    counted: number | undefined,
    epoch: { value: number; half: number } | undefined,
  ): { step: number | undefined; exact: boolean } {
    const window = this.epochWindow(epoch);
    const last = this.lastDictStep ?? 0;
    while (this.logged.length > 0 && (this.logged[0]! <= last || (window && this.logged[0]! < window.lo))) {
      this.logged.shift();
    }
    const queued = this.logged[0];
    if (queued !== undefined && (!window || queued <= window.hi)) return { step: this.logged.shift(), exact: true };
    if (counted !== undefined) return { step: this.trainStep(counted), exact: true };
    const counter = this.counter;
    const moved = counter !== undefined && counter !== this.counterAtDict && counter > last;
    if (moved && (!window || (counter >= window.lo && counter - (this.interval ?? 0) <= window.hi))) {
      return { step: this.trainStep(counter), exact: true };
    }
    if (window) return { step: this.snapped(window), exact: false };
    const guess = this.bannerWindow(epoch);
    if (guess) return { step: this.snapped(guess), exact: false };
    if (counter === undefined && epoch === undefined && this.keyValueStep !== undefined) {
      // a home-grown loop's debug dict, printed before the line that numbers its step
      return { step: Math.max(this.keyValueStep + 1, last + 1), exact: false };
    }
    return { step: this.trainStep(undefined), exact: false };
  }

  /** The steps an epoch value can mean given the anchor's steps per epoch, both as rounded as they were printed. */
  private epochWindow(
    epoch: { value: number; half: number } | undefined,
  ): { lo: number; hi: number; at: number } | undefined {
    const a = this.anchor;
    if (!epoch || !a || epoch.value <= 0) return undefined;
    const at = (epoch.value * a.step) / a.epoch;
    const spread = at * (epoch.half / epoch.value + a.half / a.epoch) + 0.5;
    return { lo: at - spread, hi: at + spread, at };
  }

  /** The same from the banner's total and `Num Epochs`: a guess (a run cut by max_steps has more steps per epoch). */
  private bannerWindow(
    epoch: { value: number; half: number } | undefined,
  ): { lo: number; hi: number; at: number } | undefined {
    const total = this.announcedTotal;
    if (!epoch || epoch.value <= 0 || total === undefined || this.numEpochs === undefined) return undefined;
    const at = (epoch.value * total) / this.numEpochs;
    return { lo: at, hi: at, at };
  }

  /** The step a window points at: a multiple of the logging interval in it when there is one, after the last. */
  private snapped(w: { lo: number; hi: number; at: number }): number | undefined {
    const interval = this.loggingSteps ?? this.interval;
    let step = Math.round(w.at);
    if (interval !== undefined) {
      const multiple = Math.round(w.at / interval) * interval;
      if (multiple >= w.lo && multiple <= w.hi) step = multiple;
    }
    return Number.isSafeInteger(step) && step > (this.lastDictStep ?? 0) ? step : undefined;
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
    if (kv === undefined || kv.pairs.length === 0) return STEP_LINE.test(line) ? bad(STEP_LINE_NOT_READ) : undefined;
    const values = new Map<string, number>();
    for (const [key, value] of kv.pairs) if (!isCounter(key)) setMetric(values, key, value);
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
    if (line.includes('Num Epochs')) {
      const m = NUM_EPOCHS.exec(line);
      if (m) this.numEpochs = Number(m[1]!.replaceAll(',', '')) || undefined;
    }
    if (line.includes('Total ')) {
      const m = TOTAL_STEPS.exec(line) ?? TOTAL_STEPS_MID.exec(line);
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
