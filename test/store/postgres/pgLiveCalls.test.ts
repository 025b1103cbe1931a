/**
 * The round trips a live line costs a PostgreSQL watcher (PgLiveStore.calls): lines appended one at a time to three
 * runs, each read by the real Ingestor and evaluated and announced by the real Engine, as `rlwatch start` does. A
 * count, not a time: what the watcher thread waits for per line (the batch with what the rules read first of its
 * run and the alerts its announcement reads, the COMMIT); the writes go without waiting.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ConfigSchema } from '../../../src/config/schema.ts';
import { parseDuration } from '../../../src/lib/duration.ts';
import { Engine } from '../../../src/engine/engine.ts';
import { ruleBookFor } from '../../../src/engine/presets/index.ts';
import { Ingestor } from '../../../src/ingest/ingestor.ts';
import { PgLiveStore } from '../../../src/store/postgres/pgLiveStore.ts';
import { tempDir } from '../../helpers.ts';
import { freshPgDatabase } from '../../pg/pgTest.ts';
import { learningLine } from '../../learningLines.ts';

const config = ConfigSchema.parse({});

it('a live line waits for about two answers of the worker, and posts its writes; a tick for two', async () => {
  const store = await PgLiveStore.open(await freshPgDatabase(), { scope: 'gpu-a' });
  try {
    const root = join(tempDir(), 'runs');
    const engine = new Engine(store, ruleBookFor(config), {
      repeatIntervalMs: parseDuration(config.alerts.repeatInterval) as number,
      targets: ['console'],
    });
    const ingestor = new Ingestor(
      store,
      { ...config.ingest, runPrefix: 'gpu-a' },
      () => {},
      (r) => {
        engine.evaluate(r.runId, true);
      },
    );
    const runs = ['a', 'b', 'c'];
    for (const r of runs) mkdirSync(join(root, r), { recursive: true });
    engine.caughtUp();
    const append = async (step: number): Promise<void> => {
      for (const r of runs) {
        appendFileSync(join(root, r, 'learning.log'), `${learningLine(step)}\n`);
        await ingestor.ingest(join(root, r, 'learning.log'), root);
      }
    };
    for (let step = 1; step <= 30; step++) await append(step); // past each run's first reads and rules' warm-up
    const before = store.calls;
    for (let step = 31; step <= 60; step++) await append(step);
    const lines = 30 * runs.length;
    const waited = (store.calls.waited - before.waited) / lines;
    const posted = (store.calls.posted - before.posted) / lines;
    // 13 before writes were posted and the batch brought the run's row, attempts and metrics back with it; 3 before
    // it brought the alerts to announce too (a line whose rules change an alert reads them again)
    expect(waited).toBeGreaterThanOrEqual(2);
    expect(waited).toBeLessThan(2.5);
    expect(posted).toBeGreaterThanOrEqual(5); // BEGIN, savepoint, markLive, the cursors, markEvaluated, release
    // a tick (stalls, repeats, announcements) reads every run's facts with the list of runs, not four reads per run
    const beforeTick = store.calls.waited;
    engine.tick();
    expect(store.calls.waited - beforeTick).toBe(2); // the list and the COMMIT
    // and every line is stored, evaluated and read up to its end
    for (const r of runs) {
      const run = store.runs.list().find((x) => x.name === `gpu-a/${r}`)!;
      expect(run).toMatchObject({ last_step: 60, records: 60 });
      expect(store.runs.unevaluated()).not.toContain(run.id);
      expect(store.points.series(run.id, 'loss', 100).map((p) => p.step)).toEqual(
        Array.from({ length: 60 }, (_, k) => k + 1),
      );
    }
  } finally {
    await store.close();
  }
}, 120_000);
