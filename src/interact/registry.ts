/**
 * The command tree, defined once for every chat platform and the CLI: each command's name, arguments and handler,
 * and the checking of arguments given by name.
 */
import { UserError } from '../lib/errors.ts';
import { parseDuration } from '../lib/duration.ts';
import type { StoreContract } from '../store/contract.ts';
import { DEFAULT_LINES, MAX_LINES, type CommandContext } from '../commands/context.ts';
import type { Reply } from '../render/reply.ts';

// Each command's implementation is imported when it runs: the CLI starts one command per process, and loading
// them all (the report, its rules and ranges, the log formats) would cost every command their start-up.

export type ArgValue = string | number | boolean | undefined;

/** Names in the store, to read free text: is `entropy` a run or a metric? */
export interface Known {
  runs: readonly string[];
  metrics: readonly string[];
}
export type Args = Record<string, ArgValue>;

export interface OptionSpec {
  name: string;
  description: string;
  type: 'string' | 'integer' | 'boolean';
  required?: boolean;
  choices?: readonly string[];
  /** chat front ends suggest values as the user types */
  autocomplete?: 'run' | 'metric';
  /** in the CLI: a positional argument rather than a `--flag` (chat text is always positional) */
  positional?: boolean;
  /** the CLI flag when it differs from the name (`mute --for 2h`) */
  flag?: string;
  /** in free text: whether a word can be this option (lets `/mute grpo-7b 2h` skip rule and severity) */
  accepts?: (word: string, known: Known) => boolean;
  /** in free text: takes the rest of the words */
  rest?: boolean;
  /** given by name only (`alert=12`, `--alert 12`, a button): never bound from free words, not in usage lines */
  named?: boolean;
}

/** Who is asking: the front end fills it in; commands that change state record it. */
export interface Caller extends CommandContext {
  /** as their platform knows them (`<@U0001>`, `@ana`, `$USER`): recorded for audit */
  user: string;
  /** as readers know them (`ana`, `Ana Silva`): recorded beside `user` and shown (untrusted text) */
  userName: string;
  now?: number;
}

export interface CommandSpec {
  /** `['run', 'status']`: a group and a subcommand, or one word */
  path: readonly [string] | readonly [string, string];
  description: string;
  options: readonly OptionSpec[];
  /** write commands need the ack/mute right in chat */
  access: 'read' | 'write';
  /** may take more than a moment (reads a whole series, renders a chart): chat front ends answer first */
  slow?: boolean;
  /** the reply carries a file (Reply.attachment): the CLI writes it with `--markdown FILE` */
  attaches?: boolean;
  /** what is wrong with arguments each valid alone (answered with the usage line), or undefined */
  check?: (args: Args) => string | undefined;
  run(caller: Caller, args: Args): Promise<Reply>;
}

const str = (a: Args, k: string): string | undefined => (a[k] === undefined ? undefined : String(a[k]));
const num = (a: Args, k: string): number | undefined => (a[k] === undefined ? undefined : Number(a[k]));
const isDuration = (w: string): boolean => parseDuration(w) !== undefined;
const SEVERITIES = ['info', 'warning', 'critical'] as const;
const isSince = (w: string): boolean => /^\d*\.?\d+$/.test(w);

/** A known run, or a word that is nothing else (so that a typo gets "unknown run", not "did not understand"). */
const looksLikeRun = (w: string, k: Known): boolean =>
  k.runs.includes(w) || (!k.metrics.includes(w) && !/^\d+$/.test(w));
const runOption: OptionSpec = {
  name: 'run',
  description: 'run name (may be left out when there is only one)',
  type: 'string',
  autocomplete: 'run',
  positional: true,
  accepts: looksLikeRun,
};

/** The command tree, defined once for every chat platform and the CLI. */
export const COMMANDS: readonly CommandSpec[] = [
  {
    path: ['run', 'status'],
    description: 'latest step, epoch and the latest value of each canonical metric',
    options: [runOption],
    access: 'read',
    run: async (c, a) => (await import('../commands/runStatus.ts')).runStatus(c, { run: str(a, 'run') }, c.now),
  },
  {
    path: ['run', 'list'],
    description: 'every run: steps, last epoch, records, last update',
    options: [],
    access: 'read',
    run: async (c) => (await import('../commands/runList.ts')).runList(c, c.now),
  },
  {
    path: ['run', 'logs'],
    description: "the tail of the run's console log",
    options: [
      runOption,
      {
        name: 'lines',
        description: `how many lines (default ${DEFAULT_LINES}, at most ${MAX_LINES})`,
        type: 'integer',
        accepts: (w) => /^\d+$/.test(w),
      },
      {
        name: 'file',
        description: 'which console log (e.g. job.err), when the run has several',
        type: 'string',
        named: true,
      },
    ],
    access: 'read',
    run: async (c, a) =>
      (await import('../commands/runLogs.ts')).runLogs(c, {
        run: str(a, 'run'),
        lines: num(a, 'lines'),
        file: str(a, 'file'),
      }),
  },
  {
    path: ['run', 'report'],
    description: 'status, ranges against expected, issues, actions, milestones, stop verdict',
    options: [
      { ...runOption, accepts: (w, k) => !isSince(w) && looksLikeRun(w, k) },
      {
        name: 'since',
        description: 'window start: a step (120) or an epoch (0.5); default the last records',
        type: 'string',
        accepts: isSince,
      },
    ],
    access: 'read',
    slow: true,
    attaches: true,
    run: async (c, a) =>
      (await import('../commands/runReport.ts')).runReport(c, { run: str(a, 'run'), since: str(a, 'since') }, c.now),
  },
  {
    path: ['run', 'compare'],
    description: 'two runs aligned by epoch (else step): which is ahead on each metric, a chart of both',
    options: [
      { ...runOption, name: 'a', description: 'the first run', required: true },
      { ...runOption, name: 'b', description: 'the second run', required: true },
      {
        name: 'metric',
        description: 'one metric (default: reward, entropy, frac_zero_std, ...)',
        type: 'string',
        autocomplete: 'metric',
      },
    ],
    access: 'read',
    slow: true,
    run: async (c, a) =>
      (await import('../commands/runCompare.ts')).runCompare(c, {
        a: String(a.a),
        b: String(a.b),
        metric: str(a, 'metric'),
      }),
  },
  {
    path: ['reward', 'history'],
    description: 'a metric over time (default reward): chart, sparkline, min/max/last',
    options: [
      runOption,
      {
        name: 'metric',
        description: 'metric name (default reward)',
        type: 'string',
        autocomplete: 'metric',
        accepts: (w) => !/^\d+$/.test(w),
      },
      { name: 'last', description: 'only the newest N points', type: 'integer', accepts: (w) => /^\d+$/.test(w) },
    ],
    access: 'read',
    slow: true,
    run: async (c, a) =>
      (await import('../commands/rewardHistory.ts')).rewardHistory(c, {
        run: str(a, 'run'),
        metric: str(a, 'metric'),
        last: num(a, 'last'),
      }),
  },
  {
    path: ['alerts'],
    description: 'firing alerts (all incidents with all)',
    options: [
      { ...runOption, positional: false, accepts: (w, k) => w !== 'all' && looksLikeRun(w, k) },
      { name: 'all', description: 'resolved incidents too', type: 'boolean', accepts: (w) => w === 'all' },
    ],
    access: 'read',
    run: async (c, a) =>
      (await import('../commands/alerts.ts')).alertList(c, { run: str(a, 'run'), all: a.all === true }, c.now),
  },
  {
    path: ['ack'],
    description: 'acknowledge an alert: no repeats until it resolves',
    options: [
      { name: 'id', description: 'alert id', type: 'integer', required: true, positional: true },
      { name: 'comment', description: 'what you are doing about it', type: 'string', rest: true },
    ],
    access: 'write',
    run: async (c, a) =>
      (await import('../commands/alerts.ts')).ackAlert(
        c,
        { id: Number(a.id), by: { id: c.user, name: c.userName }, comment: str(a, 'comment') },
        c.now,
      ),
  },
  {
    path: ['mute'],
    description: 'record but do not post matching alerts for a while',
    options: [
      {
        name: 'run',
        description: 'run name or glob, or all: every run',
        type: 'string',
        autocomplete: 'run',
        accepts: (w) => !isDuration(w) && !SEVERITIES.includes(w as never),
      },
      {
        name: 'rule',
        description: 'rule id',
        type: 'string',
        accepts: (w) => !isDuration(w) && !SEVERITIES.includes(w as never),
      },
      {
        name: 'severity',
        description: 'info, warning or critical',
        type: 'string',
        choices: SEVERITIES,
        accepts: (w) => SEVERITIES.includes(w as never),
      },
      {
        name: 'duration',
        description: 'how long, e.g. 30m, 2h, 1d',
        type: 'string',
        required: true,
        flag: 'for',
        accepts: isDuration,
      },
      // what an alert's Mute buttons run
      { name: 'alert', description: "an alert id: mute that alert's run", type: 'integer', named: true },
      {
        name: 'scope',
        description: 'with alert: its whole run (default) or only its rule',
        type: 'string',
        choices: ['run', 'rule'],
        named: true,
      },
      { name: 'reason', description: 'why', type: 'string', rest: true },
    ],
    access: 'write',
    // a mute of every run is said so: `/mute 2h` alone is more likely a slip than a wish to silence everything
    check: (a) =>
      a.run === undefined && a.rule === undefined && a.alert === undefined
        ? 'name a run or a rule, or add all to mute every run'
        : undefined,
    run: async (c, a) =>
      (await import('../commands/alerts.ts')).muteAlerts(
        c,
        {
          run: str(a, 'run'),
          rule: str(a, 'rule'),
          severity: str(a, 'severity'),
          for: String(a.duration),
          reason: str(a, 'reason'),
          by: { id: c.user, name: c.userName },
          alert: num(a, 'alert'),
          scope: str(a, 'scope') as 'run' | 'rule' | undefined,
        },
        c.now,
      ),
  },
  {
    path: ['unmute'],
    description: 'end a mute now',
    options: [{ name: 'id', description: 'mute id', type: 'integer', required: true, positional: true }],
    access: 'write',
    run: async (c, a) => (await import('../commands/alerts.ts')).unmute(c, { id: Number(a.id) }, c.now),
  },
  {
    path: ['mutes'],
    description: 'the mutes in force',
    options: [],
    access: 'read',
    run: async (c) => (await import('../commands/alerts.ts')).muteList(c, c.now),
  },
  {
    path: ['examples'],
    description: 'the best and worst generations of a step',
    options: [
      { ...runOption, accepts: (w, k) => w !== 'best' && w !== 'worst' && looksLikeRun(w, k) },
      {
        name: 'which',
        description: 'best or worst',
        type: 'string',
        choices: ['best', 'worst'],
        positional: true,
        accepts: (w) => w === 'best' || w === 'worst',
      },
      {
        name: 'step',
        description: 'step (default: the latest)',
        type: 'integer',
        positional: true,
        accepts: (w) => /^\d+$/.test(w),
      },
    ],
    access: 'read',
    run: async (c, a) =>
      (await import('../commands/examples.ts')).examples(c, {
        run: str(a, 'run'),
        which: str(a, 'which') as 'best' | 'worst' | undefined,
        step: num(a, 'step'),
      }),
  },
  {
    path: ['files'],
    description: "each run's files: format, offset, records, skipped lines, and the files not read",
    options: [runOption],
    access: 'read',
    run: async (c, a) => (await import('../commands/files.ts')).files(c, { run: str(a, 'run') }),
  },
];

/** The names a caller may see: runs their channel sees (`seesRun`, absent: all), every metric name. */
export async function knownNames(store: StoreContract, seesRun?: (run: string) => boolean): Promise<Known> {
  const runs = (await store.runs.list()).map((r) => r.name);
  return { runs: seesRun ? runs.filter(seesRun) : runs, metrics: await store.points.allNames() };
}

/** A wrong argument: answered with the command's usage line. */
export class UsageError extends UserError {}

export function usage(spec: CommandSpec, prefix = '/'): string {
  const opts = spec.options
    .filter((o) => !o.named)
    .map((o) => (o.required ? `<${o.name}>` : `[${o.choices ? o.choices.join('|') : o.name}]`));
  return `usage: ${prefix}${[...spec.path, ...opts].join(' ')}`;
}

/** Checks and converts arguments given by name (slash-command options, CLI flags). */
export function checkArgs(spec: CommandSpec, given: Args, prefix = '/'): Args {
  const fail = (why: string): never => {
    throw new UsageError(`${usage(spec, prefix)}: ${why}`);
  };
  const out: Args = {};
  for (const o of spec.options) {
    const v = given[o.name];
    if (v === undefined || v === '') {
      if (o.required) fail(`${o.name} is required`);
      continue;
    }
    if (o.type === 'integer') {
      const n = typeof v === 'number' ? v : Number(v);
      if (!Number.isSafeInteger(n) || n < 0) fail(`${o.name} must be a whole number, not '${v}'`);
      out[o.name] = n;
    } else if (o.type === 'boolean') {
      out[o.name] = v === true || v === 'true' || v === o.name;
    } else {
      const str = String(v);
      if (o.choices && !o.choices.includes(str)) fail(`${o.name} must be one of ${o.choices.join(', ')}`);
      out[o.name] = str;
    }
  }
  for (const k of Object.keys(given)) if (!spec.options.some((o) => o.name === k)) fail(`unknown option '${k}'`);
  const wrong = spec.check?.(out);
  if (wrong !== undefined) fail(wrong);
  return out;
}

/**
 * Binds free words (`grpo-7b 2h too noisy`) to options: `name=value` words by name; other words fill the
 * options in order, skipping an optional one that cannot take the word; a `rest` option takes the rest.
 */
export function bindWords(spec: CommandSpec, words: readonly string[], known: Known, prefix = '/'): Args {
  const fail = (why: string): never => {
    throw new UsageError(`${usage(spec, prefix)}: ${why}`);
  };
  const given: Args = {};
  const free: string[] = [];
  for (const w of words) {
    const m = /^([a-z]+)=(.*)$/.exec(w);
    if (m && spec.options.some((o) => o.name === m[1])) given[m[1] as string] = m[2];
    else free.push(w);
  }
  let i = 0;
  for (const o of spec.options) {
    if (i >= free.length) break;
    if (given[o.name] !== undefined || o.named) continue;
    if (o.rest) {
      given[o.name] = free.slice(i).join(' ');
      i = free.length;
      break;
    }
    const w = free[i] as string;
    if (o.accepts && !o.accepts(w, known)) {
      if (o.required) fail(`'${w}' is not a valid ${o.name}`);
      continue;
    }
    given[o.name] = w;
    i++;
  }
  if (i < free.length) fail(`did not understand '${free.slice(i).join(' ')}'`);
  return given;
}

/** Free text, as a slash command sends it: bound, then checked. */
export function parseText(spec: CommandSpec, words: readonly string[], known: Known): Args {
  return checkArgs(spec, bindWords(spec, words, known));
}

/** Finds the command for `run status ...` words; returns it with the words left for its options. */
export function findCommand(words: readonly string[]): { spec: CommandSpec; rest: string[] } | null {
  const [a, b, ...more] = words;
  const two = COMMANDS.find((c) => c.path.length === 2 && c.path[0] === a && c.path[1] === b);
  if (two) return { spec: two, rest: more };
  const one = COMMANDS.find((c) => c.path.length === 1 && c.path[0] === a);
  return one ? { spec: one, rest: words.slice(1) } : null;
}

/** The sub-commands of a group word (`run` → status, list), for usage replies. */
export function groupUsage(group: string): string {
  const subs = COMMANDS.filter((c) => c.path[0] === group);
  return subs.map((s) => usage(s)).join('\n');
}
