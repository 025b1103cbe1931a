/**
 * What Points holds of a run's batches in memory (the batch's points for `after`, each series' tail for `upTo`)
 * answers as the database does: batches of shaped rows and of plain rows, with steps written again, out of order,
 * NaN, -0, a metric first seen mid-run and tails longer than what is kept. The expected answers come from a plain
 * model of the points written (the last value per metric and step), not from the store. And the steps a batch notes.
 */
import { describe, expect, it } from 'vitest';
import { ShapedRows, type MetricRow } from '../../src/store/metricRows.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

type Point = { step: number; value: number };

/** The points of every batch written so far, by metric: the last value written at each step wins. */
class Model {
  private readonly series = new Map<string, Map<number, number>>();

  add(step: number, metric: string, value: number): void {
    let s = this.series.get(metric);
    if (!s) this.series.set(metric, (s = new Map()));
    s.set(step, value === 0 ? 0 : value); // SQLite gives -0 back as 0
  }

  points(metric: string): Point[] {
    const points = [...(this.series.get(metric) ?? [])].map(([step, value]) => ({ step, value }));
    return points.sort((a, b) => a.step - b.step);
  }

  after(metric: string, step: number): Point[] {
    return this.points(metric).filter((p) => p.step > step);
  }

  upTo(metric: string, step: number, n: number, finite: boolean): Point[] {
    const kept = this.points(metric).filter((p) => p.step <= step && (!finite || Number.isFinite(p.value)));
    return kept.slice(Math.max(0, kept.length - n));
  }
}

function open(): { store: Store; runId: number; fileId: number } {
  const { store } = freshStore();
  const run = store.runs.ensure('r', '/x/r');
  const file = store.files.add(run.id, '/x/r/learning.log', 'learning-log');
  return { store, runId: run.id, fileId: file.id };
}

/** Rows as the parse worker sends them: one column of values per line shape. */
function shaped(rows: Array<[step: number, names: string[], values: number[]]>): ShapedRows {
  const shapes: string[][] = [];
  const shapeOf = rows.map(([, names]) => {
    const i = shapes.findIndex((s) => s.join() === names.join());
    return i >= 0 ? i : shapes.push(names) - 1;
  });
  return new ShapedRows(
    shapes,
    Float64Array.from(rows.map(([step]) => step)),
    Uint32Array.from(shapeOf),
    Float64Array.from(rows.flatMap(([, , values]) => values)),
  );
}

function commit(t: ReturnType<typeof open>, metrics: ShapedRows | MetricRow[], model: Model): void {
  const rows = metrics instanceof ShapedRows ? [...metrics] : metrics;
  for (const r of rows) for (const [name, v] of r.values) model.add(r.step, name, v);
  t.store.commit(
    {
      runId: t.runId,
      fileId: t.fileId,
      metrics,
      examples: [],
      skips: new Map(),
      progress: { dev: 1, ino: 1, offset: 0, size: 0, mtimeMs: 0, seq: 0, lines: rows.length, records: rows.length },
    },
    0,
  );
}

/** Every look-back the rules make, from `from` on: as the model has them. */
function expectAnswers(t: ReturnType<typeof open>, model: Model, metrics: string[], from: number, to: number): void {
  for (const metric of metrics) {
    for (let step = from; step <= to; step++) {
      expect(t.store.points.after(t.runId, metric, step), `${metric} after ${step}`).toEqual(model.after(metric, step));
      for (const n of [1, 3, 50]) {
        for (const finite of [false, true]) {
          const upTo = t.store.points.upTo(t.runId, metric, step, n, finite);
          expect(upTo, `${metric} upTo ${step} ${n} ${finite}`).toEqual(model.upTo(metric, step, n, finite));
        }
      }
    }
  }
}

describe('Points memory of the last batch and the series tails', () => {
  it('answers a batch of ascending shaped rows from memory, as written', () => {
    const t = open();
    const model = new Model();
    const names = ['reward', 'entropy'];
    commit(t, shaped(Array.from({ length: 30 }, (_, i) => [i + 1, names, [i / 10, i === 4 ? NaN : -0]])), model);
    // the points are gone from the database: what answers is the memory
    t.store.db.exec('DELETE FROM points');
    expectAnswers(t, model, names, 0, 31);
    expect(t.store.points.after(t.runId, 'reward', 27)).toEqual([
      { step: 28, value: 2.7 },
      { step: 29, value: 2.8 },
      { step: 30, value: 2.9 },
    ]);
    expect(t.store.points.upTo(t.runId, 'entropy', 7, 3, true)).toEqual([
      { step: 4, value: 0 },
      { step: 6, value: 0 },
      { step: 7, value: 0 },
    ]);
    t.store.close();
  });

  it('answers as the database after batches that repeat steps, go back, add a metric and outgrow the tail', () => {
    const t = open();
    const model = new Model();
    const ab = ['a', 'b'];
    // two shapes in one batch, a step written twice within it (the second value wins)
    commit(
      t,
      shaped([
        [1, ab, [1, 10]],
        [2, ab, [2, 20]],
        [2, ['a'], [2.5]],
        [3, ab, [3, NaN]],
      ]),
      model,
    );
    expectAnswers(t, model, ab, 0, 4);
    // the next batch goes back to step 2 (a restarted job), then on; `c` is new
    commit(
      t,
      shaped([
        [2, ['a', 'b', 'c'], [-2, -20, 0.5]],
        [4, ['a', 'b', 'c'], [4, 40, Infinity]],
      ]),
      model,
    );
    expectAnswers(t, model, ['a', 'b', 'c'], 0, 5);
    // a batch that goes back within itself: what follows the step back is not past the batch's own points
    commit(
      t,
      shaped([
        [7, ab, [7, 70]],
        [5, ab, [5, 50]],
        [6, ab, [6, 60]],
      ]),
      model,
    );
    expectAnswers(t, model, ab, 0, 8);
    // 3000 ascending steps in rows (a format without shapes): tails are cut back past what they keep
    const rows: MetricRow[] = Array.from({ length: 3000 }, (_, i) => ({
      step: 5 + i,
      values: new Map([
        ['a', i % 7 === 0 ? NaN : i],
        ['c', -i],
      ]),
    }));
    commit(t, rows, model);
    expectAnswers(t, model, ['a', 'b', 'c'], 2990, 3010);
    // and once more in shaped rows past them
    commit(t, shaped(Array.from({ length: 40 }, (_, i) => [3005 + i, ['c', 'a'], [i, -i]])), model);
    expectAnswers(t, model, ['a', 'c'], 2990, 3050);
    // everything read from the database (the memory dropped) gives the same
    t.store.points.forget(t.runId);
    expectAnswers(t, model, ['a', 'b', 'c'], 0, 12);
    expectAnswers(t, model, ['a', 'c'], 2990, 3050);
    t.store.close();
  });
});

describe('Points.writeSteps', () => {
  it('notes the steps of a batch once each, 64 to a statement and the rest one by one', () => {
    const t = open();
    const first = Array.from({ length: 150 }, (_, i) => 2 * i); // 0, 2, ... 298
    const again = Array.from({ length: 140 }, (_, i) => 200 + i); // 200 ... 339: the even ones up to 298 known
    const added = t.store.db.transaction(() => [
      t.store.points.writeSteps(t.runId, Float64Array.from(first), 1000),
      t.store.points.writeSteps(t.runId, again, 2000),
    ])();
    const known = new Set(first);
    expect(added).toEqual([150, again.filter((s) => !known.has(s)).length]);
    expect(t.store.points.steps(t.runId)).toEqual([...new Set([...first, ...again])].sort((a, b) => a - b));
    const at = t.store.db.prepare('SELECT step, at FROM steps WHERE run_id = ? AND step IN (298, 299)').all(t.runId);
    expect(at).toEqual([
      { step: 298, at: 1000 },
      { step: 299, at: 2000 },
    ]);
    t.store.close();
  });
});
