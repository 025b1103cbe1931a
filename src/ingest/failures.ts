/**
 * The failure scanner: reads every line of a captured stdout/stderr file (formats with `textLog`) before
 * the format's own parser and recognises what the training job says about itself: Python tracebacks with
 * their final exception line, CUDA out-of-memory, NCCL watchdog timeouts, torchrun's ChildFailedError,
 * Ray's ActorDiedError, `Killed`, segmentation faults, and trainer warnings worth a look.
 *
 * An event's `text` is its whole line without ANSI colours (the Ray prefix kept: it names the process).
 * One scanner per file: it keeps the last lines (the evidence) and the tracebacks still open, per Ray
 * actor, since Ray interleaves the output of many processes. Only the first `SCAN_CHARS` of a line are
 * looked at, with plain string searches: a 1 MB line costs no more than a short one.
 */
import { cleanLine } from './formats/common.ts';
import type { EventRecord } from './records.ts';

/** what is looked at of each line: every pattern below sits near the start of its line */
const SCAN_CHARS = 4096;
/** lines kept as evidence before an error */
export const CONTEXT_LINES = 20;
/** characters kept of each evidence line */
const CONTEXT_CHARS = 500;
const TITLE_CHARS = 120;
/** a traceback longer than this (frames) was not one, or is beyond saving */
const MAX_FRAMES = 1000;
/** lines of other output tolerated inside an open traceback before it is given up */
const MAX_STRAY = 5;
/** Ray actors with an open traceback at once */
const MAX_OPEN = 64;

const TRACEBACK = 'Traceback (most recent call last):';
const CHAINED = ['During handling of the above exception', 'The above exception was the direct cause'];
/** the last part of an exception's name that marks it as one (`torch.OutOfMemoryError`, `SystemExit`) */
const EXCEPTION_NAME = /^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure|Fault|Timeout)$/;
const IDENTIFIER = /^[A-Za-z_][\w.]*$/;
/** bash / slurm reporting a killed child: `script.sh: line 12: 4567 Killed   python train.py` */
const SHELL_SIGNAL = /: line \d+: +\d+ (Killed|Segmentation fault)\b/;
const KILLED = 'Killed (out of host memory, or by the scheduler)';
const RAY_REPEATED = /\s*\[repeated \d+x across cluster\]\s*$/;

interface Warning {
  needle: string;
  title: string;
}
/** Trainer warnings that become a `warning` event; the title names the kind (one incident per kind). */
const WARNINGS: readonly Warning[] = [
  { needle: 'KL divergence is starting to become negative', title: 'KL divergence is negative' },
  { needle: 'Generated too many', title: 'DAPO generated too many batches' },
  { needle: ' NCCL WARN ', title: 'NCCL warning' },
  { needle: 'CUDA warning:', title: 'CUDA warning' },
];

interface OpenTraceback {
  stray: number;
  frames: number;
}

/** The Ray actor prefix `(TaskRunner pid=1)` / `(WorkerDict pid=2, ip=...)` / `(raylet)` and torch's
 * `[rank0]:` / `[default0]:`, split from the line; the key tells interleaved processes apart. */
function splitPrefix(line: string): { key: string; body: string } {
  let key = '';
  let body = line;
  if (body.startsWith('(')) {
    const close = body.indexOf(')');
    const inner = close > 0 && close < 200 ? body.slice(1, close) : '';
    if (inner.includes('pid=') || inner === 'raylet') {
      key = inner;
      // Ray puts one space after the prefix; the rest is the process's own indentation (traceback frames)
      body = body.slice(body[close + 1] === ' ' ? close + 2 : close + 1);
    }
  }
  if (body.startsWith('[rank') || body.startsWith('[default')) {
    const close = body.indexOf(']:');
    if (close > 0 && close < 20) {
      key += body.slice(0, close + 1);
      body = body.slice(body[close + 2] === ' ' ? close + 3 : close + 2);
    }
  }
  return { key, body };
}

/** `ValueError: bad` -> { name: 'ValueError', message: 'bad' }; null when the line is not an exception line. */
function exceptionOf(body: string): { name: string; message: string } | null {
  const colon = body.indexOf(':');
  const name = colon < 0 ? body.trimEnd() : body.slice(0, colon);
  if (name.length === 0 || name.length > 200) return null;
  if (!IDENTIFIER.test(name)) return null;
  if (!EXCEPTION_NAME.test(name) && name !== 'KeyboardInterrupt') return null;
  return { name, message: colon < 0 ? '' : body.slice(colon + 1).trim() };
}

const shortName = (name: string): string => name.slice(name.lastIndexOf('.') + 1);
const cutTo = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** What an exception line means: OOM and a failed torchrun worker end the job; others may be survived. */
function classify(name: string, message: string): { title: string; fatal: boolean } {
  const short = shortName(name);
  if (short === 'OutOfMemoryError' || message.startsWith('CUDA out of memory')) {
    return {
      title: cutTo(`CUDA out of memory: ${message.replace(/^CUDA out of memory\.?\s*/, '')}`, TITLE_CHARS),
      fatal: true,
    };
  }
  if (short === 'ChildFailedError')
    return { title: 'torchrun: a worker process failed (ChildFailedError)', fatal: true };
  return { title: cutTo(message ? `${short}: ${message}` : short, TITLE_CHARS), fatal: false };
}

/** A line outside a traceback that says the job died, or may have. */
function standalone(body: string): { title: string; fatal: boolean } | null {
  // the watchdog then takes the whole process down ("To avoid data inconsistency, we are taking the
  // entire process down"): it is as final as an OOM
  if (body.includes('Watchdog caught collective operation timeout'))
    return { title: 'NCCL watchdog timeout', fatal: true };
  const trimmed = body.trim();
  if (trimmed === 'Killed') return { title: KILLED, fatal: true };
  if (trimmed.startsWith('Segmentation fault') || trimmed.startsWith('Fatal Python error: Segmentation fault')) {
    return { title: 'Segmentation fault', fatal: true };
  }
  if (body.includes('oom_kill event')) return { title: 'Killed by the out-of-memory killer', fatal: true };
  // slurmstepd: `*** JOB 42 ON n1 CANCELLED AT 2025-05-01T10:00:00 DUE TO PREEMPTION ***` (or TIME LIMIT, or none)
  if (body.includes(' CANCELLED AT ') && body.includes('***')) {
    const why = body.includes('DUE TO PREEMPTION')
      ? 'preempted'
      : body.includes('DUE TO TIME LIMIT')
        ? 'time limit reached'
        : 'cancelled';
    return { title: `SLURM: job ${why}`, fatal: true };
  }
  if (body.includes(': line ')) {
    const shell = SHELL_SIGNAL.exec(body);
    if (shell) return { title: shell[1] === 'Killed' ? KILLED : 'Segmentation fault', fatal: true };
  }
  const exc = exceptionOf(body);
  if (!exc) return null;
  const short = shortName(exc.name);
  // an exception line printed without its traceback (a logger, Ray's summary of a dead actor)
  if (
    short === 'OutOfMemoryError' ||
    short === 'ChildFailedError' ||
    short === 'ActorDiedError' ||
    short === 'RuntimeError'
  ) {
    return classify(exc.name, exc.message);
  }
  return null;
}

export type FailureScanner = (line: string) => EventRecord | null;

/** A scanner for one file; feed it every line in order. */
export function failureScanner(): FailureScanner {
  const recent: string[] = [];
  const open = new Map<string, OpenTraceback>();

  const remember = (line: string): void => {
    recent.push(line.length > CONTEXT_CHARS ? `${line.slice(0, CONTEXT_CHARS)}…` : line);
    if (recent.length > CONTEXT_LINES) recent.shift();
  };
  const error = (title: string, fatal: boolean, text: string): EventRecord => ({
    kind: 'error',
    title,
    text: cutTo(text, CONTEXT_CHARS),
    fatal,
    context: [...recent],
  });

  return (raw) => {
    const line = cleanLine(raw.length > SCAN_CHARS ? raw.slice(0, SCAN_CHARS) : raw);
    const { key, body } = splitPrefix(line);
    let event: EventRecord | null = null;
    const tb = open.get(key);
    if (body.includes(TRACEBACK)) {
      if (!tb && open.size >= MAX_OPEN) open.delete(open.keys().next().value as string);
      open.set(key, { stray: 0, frames: 0 });
    } else if (tb) {
      const frame =
        body.length === 0 || body.startsWith(' ') || body.startsWith('\t') || CHAINED.some((c) => body.startsWith(c));
      const exc = frame ? null : exceptionOf(body.replace(RAY_REPEATED, ''));
      if (exc) {
        open.delete(key);
        const { title, fatal } = classify(exc.name, exc.message);
        event = error(title, fatal, line);
      } else if (frame ? ++tb.frames > MAX_FRAMES : ++tb.stray > MAX_STRAY) {
        open.delete(key);
      }
    } else {
      const found = standalone(body.replace(RAY_REPEATED, ''));
      if (found) event = error(found.title, found.fatal, line);
      else {
        const w = WARNINGS.find((x) => body.includes(x.needle));
        if (w) event = { kind: 'warning', title: w.title, text: cutTo(line, CONTEXT_CHARS) };
      }
    }
    remember(line);
    return event;
  };
}
