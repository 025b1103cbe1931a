/**
 * CLI start-up: `rlwatch runs` and `rlwatch run status RUN` (through bin/rlwatch, as a user runs them) against
 * `node -e 0`, alternated on the same machine so that load hits all of them alike; min and median of each, in wall
 * time and in the CPU time of the process (user + system, which other load on the machine hardly changes).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export const STARTUP_TARGET_RATIO = 2.5;

export interface StartupFigure {
  label: string;
  minMs: number;
  medianMs: number;
  /** median ÷ the median of `node -e 0` */
  ratio: number;
  /** median CPU time of the process (user + system) and its ratio to `node -e 0`'s */
  cpuMedianMs: number;
  cpuRatio: number;
}

export interface StartupResult {
  node: StartupFigure;
  commands: StartupFigure[];
  pass: boolean;
}

interface Timed {
  ms: number;
  cpuMs: number;
}

/** One run of node with `args`, under bash, whose `times` gives the child's user and system time (getrusage). */
function timeOnce(args: readonly string[], cwd: string): Timed {
  const script = '"$0" "$@" >/dev/null; s=$?; times; exit $s';
  const t0 = performance.now();
  const r = spawnSync('bash', ['-c', script, process.execPath, ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  // the second line of `times`: the children's user and system time, e.g. `0m0.231s 0m0.024s`
  const m = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s\s*$/.exec(r.stdout);
  if (!m) throw new Error(`no CPU times from bash: ${r.stdout}`);
  const [, um, us, sm, ss] = m.map(Number) as [number, number, number, number, number];
  return { ms, cpuMs: (um * 60 + us + sm * 60 + ss) * 1000 };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** `db` must hold the run `run`. */
export function runStartupBench(opts: { repo: string; db: string; run: string; rounds?: number }): StartupResult {
  const bin = join(opts.repo, 'bin', 'rlwatch');
  const cases: Array<{ label: string; args: string[] }> = [
    { label: 'node -e 0', args: ['-e', '0'] },
    { label: 'rlwatch runs', args: [bin, 'runs', '--db', opts.db] },
    { label: `rlwatch run status ${opts.run}`, args: [bin, 'run', 'status', opts.run, '--db', opts.db] },
  ];
  const times = cases.map(() => [] as Timed[]);
  for (let round = 0; round < (opts.rounds ?? 15); round++) {
    cases.forEach((c, i) => {
      times[i]!.push(timeOnce(c.args, opts.repo));
    });
  }
  const figures = cases.map((c, i) => figure(c.label, times[i]!, times[0]!));
  const [node, ...commands] = figures as [StartupFigure, ...StartupFigure[]];
  return { node, commands, pass: commands.every((c) => c.ratio <= STARTUP_TARGET_RATIO) };
}

/** The first `reward history` of a run in a fresh process (so with a cold series cache), against `node -e 0`. */
export function runColdHistory(opts: {
  repo: string;
  db: string;
  run: string;
  metric: string;
  rounds?: number;
}): StartupFigure {
  const bin = join(opts.repo, 'bin', 'rlwatch');
  const node: Timed[] = [];
  const history: Timed[] = [];
  for (let round = 0; round < (opts.rounds ?? 5); round++) {
    node.push(timeOnce(['-e', '0'], opts.repo));
    history.push(timeOnce([bin, 'reward', 'history', opts.run, '--metric', opts.metric, '--db', opts.db], opts.repo));
  }
  return figure(`rlwatch reward history ${opts.run} --metric ${opts.metric}`, history, node);
}

function figure(label: string, runs: readonly Timed[], node: readonly Timed[]): StartupFigure {
  const wall = runs.map((t) => t.ms);
  const cpuMedianMs = median(runs.map((t) => t.cpuMs));
  return {
    label,
    minMs: Math.min(...wall),
    medianMs: median(wall),
    ratio: median(wall) / median(node.map((t) => t.ms)),
    cpuMedianMs,
    cpuRatio: cpuMedianMs / median(node.map((t) => t.cpuMs)),
  };
}
