import { Store } from '../../src/store/sqlite/store.ts';

/** Series for the digest's tests (test/store/seriesDigest.test.ts, test/commands/rewardHistory.test.ts). */
export interface Series {
  steps: number[];
  values: number[];
}

/** A noisy rising series with nan, +inf and -inf here and there, a spike at `spikeAt` and a dip right after it, and
 * a plateau of ten equal highs at steps 2000-2009 (the chart takes the first of tied points). */
export function series(steps: number[], spikeAt: number): Series {
  let seed = 12345;
  const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const values = steps.map((s, i) => {
    if (s === spikeAt) return 9.5;
    if (s === spikeAt + 1) return -4.25;
    if (s >= 2000 && s < 2010) return 0.9;
    if (i % 997 === 13) return NaN;
    if (i % 1999 === 7) return Infinity;
    if (i % 2503 === 11) return -Infinity;
    return 0.1 + 0.6 * (i / steps.length) + 0.05 * (rand() * 2 - 1);
  });
  return { steps, values };
}

export function write(path: string, s: Series): void {
  const store = Store.open(path);
  const run = store.runs.ensure('r', '/r');
  const file = store.files.add(run.id, '/r/learning.log', 'learningLog');
  store.commit(
    {
      runId: run.id,
      fileId: file.id,
      metrics: s.steps.map((step, i) => ({ step, values: new Map([['reward', s.values[i]!]]) })),
      examples: [],
      skips: new Map(),
      progress: {
        dev: 1,
        ino: 1,
        offset: 0,
        size: 0,
        mtimeMs: 0,
        seq: 0,
        lines: s.steps.length,
        records: s.steps.length,
      },
    },
    2,
  );
  store.close();
}
