/** The report's window of steps and the values of a metric in it. */
import type { RunRow, StoreTx } from '../store/contract.ts';
import type { ReportOptions } from './build.ts';

export interface Window {
  steps: number[];
  from: number;
  to: number;
  /** generations logged without a step are filed after the last one: a window to the end takes them in */
  examplesTo: number;
}

export async function windowOf(store: StoreTx, run: RunRow, opts: ReportOptions): Promise<Window> {
  const logged = await store.points.steps(run.id);
  const until = opts.until;
  // as of `until`: the steps logged after it are not there yet
  const all = until === undefined ? logged : logged.filter((s) => s <= until);
  let steps: number[];
  if (opts.since && 'step' in opts.since) {
    const from = opts.since.step;
    steps = all.filter((s) => s >= from);
  } else if (opts.since) {
    const e = opts.since.epoch;
    const first = (await store.points.series(run.id, 'epoch')).find((p) => p.value >= e - 1e-9);
    steps = first ? all.filter((s) => s >= first.step) : [];
  } else steps = all.slice(-opts.window);
  const to = steps[steps.length - 1] ?? -1;
  const toTheEnd = to === logged[logged.length - 1];
  return { steps, from: steps[0] ?? 0, to, examplesTo: toTheEnd ? Number.MAX_SAFE_INTEGER : to };
}

/** The values of a metric over the window, by step (reward_cv derived per record). */
export async function valuesIn(store: StoreTx, runId: number, metric: string, w: Window): Promise<number[]> {
  const inW = async (m: string) =>
    (await store.points.series(runId, m)).filter((p) => p.step >= w.from && p.step <= w.to);
  if (metric !== 'reward_cv') return (await inW(metric)).map((p) => p.value);
  const std = new Map((await inW('reward_std')).map((p) => [p.step, p.value]));
  return (await inW('reward')).flatMap((p) => {
    const s = std.get(p.step);
    return s === undefined || !(Math.abs(p.value) > 1e-9) ? [] : [s / Math.abs(p.value)];
  });
}
