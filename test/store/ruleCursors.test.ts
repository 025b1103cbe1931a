/**
 * The rule cursors the store holds in memory (heldCursors.ts) are exactly the rule_cursors table: after a backfill of
 * the sample runs, after a rule that throws (its evaluation rolled back and done again without it), after a
 * batch whose transaction rolled back, and after a run is removed. Real SQLite file, Ingestor and engine.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { tempDir } from '../helpers.ts';
import { CURSOR_ROWS } from './tableRows.ts';

const SAMPLES = join(import.meta.dirname, '..', '..', 'samples');
const config = ConfigSchema.parse({});
const NOW = 1_800_000_000_000;

type Row = { run_id: number; rule: string; metric: string; step: number; state: string };

/** What the store holds in memory, as rows. */
function held(store: Store): Array<{ key: string; row: Row }> {
  type Held = Map<number, Map<string, Map<string, { step: number; state: string }>>>;
  const cursors = (store.alerts as unknown as { cursors: { runs: Held } }).cursors.runs;
  return [...cursors].flatMap(([runId, byRule]) =>
    [...byRule].flatMap(([rule, byMetric]) =>
      [...byMetric].map(([metric, c]) => ({
        key: `${runId} ${rule} ${metric}`,
        row: { run_id: runId, rule, metric, step: c.step, state: c.state },
      })),
    ),
  );
}

/** The cursors as the database holds them, as rows. */
function tableRows(store: Store): Row[] {
  return store.db.prepare(`SELECT run_id, rule, metric, step, state FROM ${CURSOR_ROWS}`).all() as Row[];
}

/** Every cursor held in memory is the table's row, and every run held has all its rows held; returns how many were
 * held. */
function expectExact(store: Store): number {
  const table = new Map(tableRows(store).map((r) => [`${r.run_id} ${r.rule} ${r.metric}`, r]));
  const mine = held(store);
  for (const { key, row } of mine) expect([key, row]).toEqual([key, table.get(key) ?? null]);
  const runsHeld = new Set(mine.map((m) => m.row.run_id));
  const rowsOfRunsHeld = [...table.values()].filter((r) => runsHeld.has(r.run_id));
  expect(mine).toHaveLength(rowsOfRunsHeld.length);
  return mine.length;
}

describe('rule cursors held in memory', () => {
  it('are the table after a backfill of the sample runs', async () => {
    const { store } = freshStore({ now: () => NOW });
    const engine = makeEngine(store, config, { terminal: true, now: () => NOW });
    const opts = { ...config.ingest, chunkBytes: 4096 };
    await backfill(
      new Ingestor(
        store,
        opts,
        () => {},
        (r) => engine.evaluate(r.runId, false),
      ),
      [SAMPLES],
      config.watch,
    );
    const rows = tableRows(store).length;
    expect(rows).toBeGreaterThan(10);
    expect(expectExact(store)).toBeGreaterThanOrEqual(rows);
    store.close();
  });

  it('are the table after a rule throws and the evaluation is done again without it', async () => {
    const root = tempDir();
    const dir = join(root, 'runs', 'job');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'metrics.jsonl');
    writeFileSync(path, '');
    const write = (from: number, to: number): void => {
      for (let step = from; step <= to; step++) {
        appendFileSync(
          path,
          `${JSON.stringify({ step, reward: 0.5 + step / 100, frac_reward_zero_std: 0.95, grad_norm: 50 })}\n`,
        );
      }
    };
    const { store } = freshStore({ dir: root });
    // the last rule of the book throws: every other rule has saved its cursors in the transaction rolled back
    const book = ruleBookFor(config);
    const last = book.forRun('job').at(-1)!.id;
    let broken = true;
    const cursor = store.alerts.cursor.bind(store.alerts);
    store.alerts.cursor = (runId, rule, metric) => {
      if (broken && rule === last) throw new TypeError('boom');
      return cursor(runId, rule, metric);
    };
    const warnings: string[] = [];
    const engine = new Engine(store, book, {
      repeatIntervalMs: 3_600_000,
      targets: ['console'],
      log: { info: () => {}, warn: (m) => warnings.push(m) },
    });
    const ingestor = new Ingestor(store, config.ingest, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId);
    });
    write(1, 10);
    await ingestor.ingest(path, join(root, 'runs'));
    expect(warnings).toHaveLength(1);
    expect(expectExact(store)).toBeGreaterThan(3);
    const runId = store.runs.byName('job')!.id;
    const reward = store.db.prepare(`SELECT step FROM ${CURSOR_ROWS} WHERE run_id = ? AND metric = 'reward'`).pluck();
    expect(reward.all(runId)).toContain(10);

    broken = false;
    write(11, 12);
    await ingestor.ingest(path, join(root, 'runs'));
    expect(warnings).toHaveLength(1);
    expect(expectExact(store)).toBeGreaterThan(3);
    expect(reward.all(runId)).toContain(12);
    store.close();
  });

  it('are the table after a batch whose transaction rolled back, and after the run is removed', () => {
    const { store } = freshStore();
    const run = store.runs.ensure('job', '/logs/job');
    const file = store.files.add(run.id, '/logs/job/metrics.jsonl', 'jsonl');
    store.alerts.saveCursor(run.id, 'r', 'reward', 3, { streak: 1 });
    store.alerts.flushCursors();
    const progress = { dev: 1, ino: 1, offset: 20, size: 20, mtimeMs: NOW, seq: 1, lines: 1, records: 1 };
    const metrics = [{ step: 7, values: new Map([['reward', 0.5]]) }];
    const batch = { runId: run.id, fileId: file.id, metrics, examples: [], skips: new Map(), progress };
    expect(() =>
      store.commit(batch, 0, () => {
        store.alerts.saveCursor(run.id, 'r', 'reward', 7, { streak: 5 });
        store.alerts.saveCursor(run.id, 'r', 'kl', 7, {});
        store.alerts.flushCursors();
        throw new Error('the rules failed');
      }),
    ).toThrow();
    expect(store.alerts.cursor(run.id, 'r', 'reward')).toEqual({ step: 3, state: { streak: 1 } });
    expect(store.alerts.cursor(run.id, 'r', 'kl')).toBeUndefined();
    expect(expectExact(store)).toBe(1);

    store.runs.remove(run.id);
    expect(held(store)).toEqual([]);
    expect(tableRows(store)).toEqual([]);
    store.close();
  });
});
