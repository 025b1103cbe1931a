/**
 * Restarts and unevaluated batches through the real pipeline: log files on disk, the Ingestor, the SQLite
 * store, the engine as `start` wires them.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backfillPipeline, makeEngine, startApp } from '../../src/app/start.ts';
import type { Target } from '../../src/notify/dispatcher.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { silentLog } from '../../src/lib/log.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

/** A run folder with a TRL-style metrics log of `{"step": N, ...}` lines. */
function metricsRun() {
  const root = tempDir();
  const dir = join(root, 'runs', 'job');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'metrics.jsonl');
  writeFileSync(path, '');
  const write = (from: number, to: number, frac: number): void => {
    for (let step = from; step <= to; step++) {
      appendFileSync(path, `${JSON.stringify({ step, reward: 0.5, frac_reward_zero_std: frac })}\n`);
    }
  };
  return { root, runs: join(root, 'runs'), path, db: join(root, 'rlwatch.db'), write };
}

const config = ConfigSchema.parse({});

describe('a restarted job, read from its log file', () => {
  it('resumed from step 40 after a crash at 100: a collapse in attempt 2 fires and says so', async () => {
    const r = metricsRun();
    const store = Store.open(r.db);
    const engine = makeEngine(store, config, { terminal: true });
    const ingestor = new Ingestor(store, config.ingest, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId);
    });
    r.write(1, 100, 0.1);
    await ingestor.ingest(r.path, r.runs);
    r.write(40, 50, 0.1); // the job resumed from its step-40 checkpoint, appending to the same log
    r.write(51, 53, 0.95);
    await ingestor.ingest(r.path, r.runs);
    const run = store.runs.byName('job')!;
    expect(store.attempts.list(run.id).map((a) => [a.attempt, a.resumed_step, a.last_step])).toEqual([
      [1, 1, 100],
      [2, 40, 53],
    ]);
    const fired = store.alerts.list({ runId: run.id }).filter((a) => a.rule === 'mode_collapse');
    expect(fired).toMatchObject([{ state: 'firing', started_step: 51, fired_step: 53 }]);
    const items = store.outbox
      .pending('console', 100)
      .flatMap((row) => (JSON.parse(row.payload) as Notification).items)
      .filter((i) => i.rule === 'mode_collapse');
    expect(items.map((i) => i.summary)).toEqual([
      'frac_zero_std 0.95 > 0.8 for 3 steps (attempt 2, resumed at step 40)',
    ]);
    expect(store.points.upTo(run.id, 'frac_zero_std', 53, 1)[0]).toEqual({ step: 53, value: 0.95 });
    store.close();
  });
});

describe('a batch committed by a process that stopped before evaluating it', () => {
  it('is evaluated when `start` starts again, and its alert announced, though no line is new', async () => {
    const r = metricsRun();
    r.write(1, 20, 0.1);
    r.write(21, 23, 0.95);
    const store = Store.open(r.db);
    await new Ingestor(store, config.ingest, () => {}).ingest(r.path, r.runs); // committed, never evaluated
    store.close();
    const told: string[] = [];
    const terminal: Target = {
      name: 'console',
      deliver: async (n) => {
        told.push(...n.items.map((i) => `${i.kind} ${i.rule}@${i.step}`));
      },
    };
    const app = await startApp({ config, dbPath: r.db, roots: [r.runs], log: silentLog, terminal });
    try {
      await app.dispatcher.kick();
      expect(told).toEqual(['firing mode_collapse@23']);
    } finally {
      await app.stop();
    }
  });

  it('`backfill` evaluates it too', async () => {
    const r = metricsRun();
    r.write(1, 23, 0.95);
    const store = Store.open(r.db);
    await new Ingestor(store, config.ingest, () => {}).ingest(r.path, r.runs);
    const told: string[] = [];
    const pipeline = backfillPipeline(store, config, silentLog, {
      name: 'console',
      deliver: async (n) => {
        told.push(...n.items.map((i) => `${i.kind} ${i.rule}@${i.step}`));
      },
    });
    await pipeline.finish();
    expect(told).toEqual(['firing mode_collapse@3']);
    store.close();
  });
});
