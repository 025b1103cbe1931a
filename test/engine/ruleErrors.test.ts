/**
 * A rule that throws (a bug in one rule, met by one run's data) is logged with its id and skipped for that
 * batch; the other rules, and ingestion, go on. Real log file, Ingestor, SQLite store and engine.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { Ingestor, type IngestEvent } from '../../src/ingest/ingestor.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { tempDir } from '../helpers.ts';

describe('a rule that throws', () => {
  it('is logged with its id and skipped for the batch; other rules fire and every line is stored', async () => {
    const root = tempDir();
    const dir = join(root, 'runs', 'job');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'metrics.jsonl');
    writeFileSync(path, '');
    const write = (from: number, to: number, frac: number): void => {
      for (let step = from; step <= to; step++) {
        const grad_norm = step >= 9 ? 50 : 0.5;
        appendFileSync(path, `${JSON.stringify({ step, reward: 0.5, frac_reward_zero_std: frac, grad_norm })}\n`);
      }
    };
    const { store } = freshStore({ dir: root });
    // grad_explosion's evaluation fails while `broken` (grad_norm 0.5, then 50 from step 9, would fire it)
    let broken = true;
    const cursor = store.alerts.cursor.bind(store.alerts);
    store.alerts.cursor = (runId, rule, metric) => {
      if (broken && rule === 'grad_explosion') throw new TypeError('boom');
      return cursor(runId, rule, metric);
    };
    const warnings: string[] = [];
    const config = ConfigSchema.parse({});
    const engine = new Engine(store, ruleBookFor(config), {
      repeatIntervalMs: 3_600_000,
      targets: ['console'],
      log: { info: () => {}, warn: (m) => warnings.push(m) },
    });
    const events: IngestEvent[] = [];
    const ingestor = new Ingestor(store, config.ingest, (e) => {
      events.push(e);
      if (e.kind === 'batch') engine.evaluate(e.result.runId);
    });

    write(1, 10, 0.95);
    await ingestor.ingest(path, join(root, 'runs'));
    const run = store.runs.byName('job')!;
    const rules = (): string[] =>
      store.alerts
        .list({ runId: run.id })
        .map((a) => a.rule)
        .sort();
    expect(warnings).toEqual(['rule grad_explosion failed on run job (boom): skipped for this batch']);
    expect(events.filter((e) => e.kind === 'unreadable')).toEqual([]);
    expect(rules()).toContain('mode_collapse');
    expect(rules()).not.toContain('grad_explosion');
    expect(store.runs.byId(run.id)!.last_step).toBe(10);

    // the next batch: the rule works again and looks at the steps it was skipped for, too
    broken = false;
    write(11, 12, 0.95);
    await ingestor.ingest(path, join(root, 'runs'));
    expect(warnings).toHaveLength(1);
    expect(store.runs.byId(run.id)!.last_step).toBe(12);
    expect(store.alerts.list({ runId: run.id }).find((a) => a.rule === 'grad_explosion')).toMatchObject({
      state: 'firing',
      started_step: 9,
    });
    store.close();
  });
});
