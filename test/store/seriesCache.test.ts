import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

function commit(store: Store, runId: number, fileId: number, steps: Array<[number, number]>): void {
  store.commit(
    {
      runId,
      fileId,
      metrics: steps.map(([step, v]) => ({ step, values: new Map([['reward', v]]) })),
      examples: [],
      skips: new Map(),
      progress: { dev: 1, ino: 1, offset: 0, size: 0, mtimeMs: 0, seq: 0, lines: steps.length, records: steps.length },
    },
    2,
  );
}

describe('series columns, kept in memory between requests', () => {
  it('are topped up with new steps and dropped when a batch rewrites cached steps', () => {
    const { store } = freshStore();
    const run = store.runs.ensure('r', '/r');
    const file = store.files.add(run.id, '/r/trainer_state.json', 'trainerState');
    commit(store, run.id, file.id, [
      [1, 0.1],
      [2, NaN],
      [3, 0.3],
    ]);
    const first = store.points.columns(run.id, 'reward');
    expect([...first.steps.subarray(0, first.length)]).toEqual([1, 2, 3]);
    expect([...first.values.subarray(0, first.length)]).toEqual([0.1, NaN, 0.3]);
    commit(store, run.id, file.id, [[4, 0.4]]);
    const more = store.points.columns(run.id, 'reward');
    expect([...more.values.subarray(0, more.length)]).toEqual([0.1, NaN, 0.3, 0.4]);
    commit(store, run.id, file.id, [[2, 0.2]]); // an old step rewritten (a re-read trainer_state.json)
    const again = store.points.columns(run.id, 'reward');
    expect([...again.values.subarray(0, again.length)]).toEqual([0.1, 0.2, 0.3, 0.4]);
    store.close();
  });

  it('grow past their first allocation', () => {
    const { store } = freshStore();
    const run = store.runs.ensure('r', '/r');
    const file = store.files.add(run.id, '/r/learning.log', 'learningLog');
    commit(
      store,
      run.id,
      file.id,
      Array.from({ length: 5000 }, (_, i) => [i + 1, i] as [number, number]),
    );
    const c = store.points.columns(run.id, 'reward');
    expect(c.length).toBe(5000);
    expect(c.values[4999]).toBe(4999);
    store.close();
  });
});
