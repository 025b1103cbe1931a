/** Each metric's values over the window against its expected range: ✅ none outside, ⚠️ under half, 🔴 half or more. */
import type { MilestoneRule, Rule } from '../engine/rules.ts';
import type { StoreTx } from '../store/contract.ts';
import type { Mark, RangeRow } from './build.ts';
import type { ExpectedRange } from './ranges.ts';
import { finite, median, range } from './stats.ts';
import { valuesIn, type Window } from './window.ts';

/** How many records of the run's start make the baseline of a `baseline` range. */
const BASELINE_RECORDS = 20;

function floorLine(rules: readonly Rule[], metric: string): Array<[number, number]> {
  const marks = rules
    .filter((r): r is MilestoneRule => r.kind === 'milestone' && r.severity !== 'critical' && r.metric === metric)
    .filter((r) => r.op === '>' || r.op === '>=')
    .map((r): [number, number] => [r.epoch, r.value])
    .sort((a, b) => a[0] - b[0]);
  return marks.length === 0 ? [] : [[0, 0], ...marks];
}

function floorAt(line: ReadonlyArray<[number, number]>, epoch: number): number {
  for (let i = 1; i < line.length; i++) {
    const [e1, v1] = line[i] as [number, number];
    const [e0, v0] = line[i - 1] as [number, number];
    if (epoch <= e1) return v0 + ((v1 - v0) * (epoch - e0)) / (e1 - e0);
  }
  return (line[line.length - 1] as [number, number])[1];
}

/** What a range row says of the values whatever it judges them by. */
function summary(r: ExpectedRange, v: readonly number[]): Omit<RangeRow, 'baseline' | 'below' | 'above' | 'mark'> {
  if (v.length === 0) return { metric: r.metric, n: 0, min: null, max: null, median: null, range: r };
  const { min, max } = range(v);
  return { metric: r.metric, n: v.length, min, max, median: median(v), range: r };
}

/** Judged values: all in range, under half out, or half or more out. */
const markOf = (out: number, n: number): Mark => (out === 0 ? 'ok' : out * 2 < n ? 'warn' : 'bad');

/** A `milestones` range: each record against the floor at its epoch. */
async function trajectoryRow(
  store: StoreTx,
  runId: number,
  r: ExpectedRange,
  w: Window,
  line: Array<[number, number]>,
): Promise<RangeRow> {
  const epochs = new Map((await store.points.series(runId, 'epoch')).map((p) => [p.step, p.value]));
  const pts = (await store.points.series(runId, r.metric)).filter(
    (p) => p.step >= w.from && p.step <= w.to && Number.isFinite(p.value) && epochs.has(p.step),
  );
  const v = pts.map((p) => p.value);
  const below = pts.filter((p) => p.value < floorAt(line, epochs.get(p.step) as number)).length;
  return { ...summary(r, v), below, above: 0, mark: v.length === 0 ? 'none' : markOf(below, v.length) };
}

export async function rangeRow(
  store: StoreTx,
  runId: number,
  r: ExpectedRange,
  w: Window,
  rules: readonly Rule[],
): Promise<RangeRow> {
  if (r.basis === 'milestones') {
    const line = floorLine(rules, r.metric);
    const hasEpochs = (await store.points.series(runId, 'epoch', 1)).length > 0;
    if (line.length > 0 && hasEpochs) return trajectoryRow(store, runId, r, w, line);
    r = { ...r, basis: 'baseline', max: undefined, source: 'ours: at least its early median (no epochs to judge by)' };
  }
  const v = finite(await valuesIn(store, runId, r.metric, w));
  let lo = r.min;
  let hi = r.max;
  let baseline: number | undefined;
  if (r.basis === 'absolute' && r.fallback) {
    // a model that lives elsewhere from its start (verl GSM8K's entropy 0.03) is judged against itself
    const early = await earlyMedian(store, runId, r.metric);
    const outside =
      early !== undefined && ((r.min !== undefined && early < r.min) || (r.max !== undefined && early > r.max));
    if (outside)
      r = { ...r, basis: 'baseline', ...r.fallback, source: `ours: its early median lies outside ${r.source}` };
  }
  if (r.basis === 'baseline') {
    baseline = await earlyMedian(store, runId, r.metric);
    lo = baseline !== undefined && r.min !== undefined ? baseline * r.min : undefined;
    hi = baseline !== undefined && r.max !== undefined ? baseline * r.max : undefined;
  }
  const below = lo === undefined ? 0 : v.filter((x) => x < lo).length;
  const above = hi === undefined ? 0 : v.filter((x) => x > hi).length;
  const judged = v.length > 0 && (r.basis === 'absolute' || baseline !== undefined);
  return {
    ...summary(r, v),
    ...(baseline === undefined ? {} : { baseline }),
    below,
    above,
    mark: judged ? markOf(below + above, v.length) : 'none',
  };
}

async function earlyMedian(store: StoreTx, runId: number, metric: string): Promise<number | undefined> {
  const early = finite((await store.points.series(runId, metric)).slice(0, BASELINE_RECORDS).map((p) => p.value));
  return early.length >= 5 ? median(early) : undefined;
}
