/**
 * CLI start-up: `rlwatch runs` and `rlwatch run status RUN` (through bin/rlwatch, as a user runs them) against
 * `node -e 0`, alternated on the same machine so that load hits all of them alike; min and median of each.
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
}

export interface StartupResult {
  node: StartupFigure;
  commands: StartupFigure[];
  pass: boolean;
}

function timeOnce(args: readonly string[], cwd: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
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
  const times = cases.map(() => [] as number[]);
  for (let round = 0; round < (opts.rounds ?? 15); round++) {
    cases.forEach((c, i) => times[i]!.push(timeOnce(c.args, opts.repo)));
  }
  const nodeMedian = median(times[0]!);
  const figures = cases.map((c, i) => ({
    label: c.label,
    minMs: Math.min(...times[i]!),
    medianMs: median(times[i]!),
    ratio: median(times[i]!) / nodeMedian,
  }));
  const [node, ...commands] = figures as [StartupFigure, ...StartupFigure[]];
  return { node, commands, pass: commands.every((c) => c.ratio <= STARTUP_TARGET_RATIO) };
}

/** The first `reward history` of a run in a fresh process (so with a cold series cache), against `node -e 0`. */
export function runColdHistory(opts: { repo: string; db: string; run: string; metric: string; rounds?: number }): StartupFigure {
  const bin = join(opts.repo, 'bin', 'rlwatch');
  const node: number[] = [];
  const history: number[] = [];
  for (let round = 0; round < (opts.rounds ?? 5); round++) {
    node.push(timeOnce(['-e', '0'], opts.repo));
    history.push(timeOnce([bin, 'reward', 'history', opts.run, '--metric', opts.metric, '--db', opts.db], opts.repo));
  }
  return {
    label: `rlwatch reward history ${opts.run} --metric ${opts.metric}`,
    minMs: Math.min(...history),
    medianMs: median(history),
    ratio: median(history) / median(node),
  };
}
