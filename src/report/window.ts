/** The report's window of steps and the values of a metric in it. */
import type { RunRow } from '../store/runs.ts';
import type { Store } from '../store/store.ts';
import type { ReportOptions } from './build.ts';

export interface Window {
  steps: number[];
  from: number;
  to: number;
  /** generations logged without a step are filed after the last one: a window to the end takes them in */
  examplesTo: number;
}

export function windowOf(store: Store, run: RunRow, opts: ReportOptions): Window {
  const all = store.points.steps(run.id);
  let steps: number[];
  if (opts.since && 'step' in opts.since) {
    const from = opts.since.step;
    steps = all.filter((s) => s >= from);
  } else if (opts.since) {
    const e = opts.since.epoch;
    const first = store.points.series(run.id, 'epoch').find((p) => p.value >= e - 1e-9);
    steps = first ? all.filter((s) => s >= first.step) : [];
  } else steps = all.slice(-opts.window);
  const to = steps[steps.length - 1] ?? -1;
  return { steps, from: steps[0] ?? 0, to, examplesTo: to === all[all.length - 1] ? Number.MAX_SAFE_INTEGER : to };
}

/** The values of a metric over the window, by step (reward_cv derived per record). */
export function valuesIn(store: Store, runId: number, metric: string, w: Window): number[] {
  const inW = (m: string) => store.points.series(runId, m).filter((p) => p.step >= w.from && p.step <= w.to);
  if (metric !== 'reward_cv') return inW(metric).map((p) => p.value);
  const std = new Map(inW('reward_std').map((p) => [p.step, p.value]));
  return inW('reward').flatMap((p) => {
    const s = std.get(p.step);
    return s === undefined || !(Math.abs(p.value) > 1e-9) ? [] : [s / Math.abs(p.value)];
  });
}

