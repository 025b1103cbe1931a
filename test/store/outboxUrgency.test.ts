/**
 * An outbox row's urgency (migration 019: the most severe of its items, read from the payload's text) for the rows
 * the engine writes: real log file, Ingestor, SQLite store and engine. The expected urgency comes from parsing each
 * payload's JSON, so a change in how the engine writes an item that the column no longer sees fails here.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { tempDir } from '../helpers.ts';

const RANK: Record<string, number> = { critical: 2, warning: 1 };

describe('outbox urgency', () => {
  it('is the most severe item of each row the engine writes: critical 2, warning 1', async () => {
    const root = tempDir();
    const dir = join(root, 'runs', 'job');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'metrics.jsonl');
    writeFileSync(path, '');
    const write = (from: number, to: number, v: Record<string, number>): void => {
      for (let step = from; step <= to; step++) {
        appendFileSync(path, `${JSON.stringify({ step, reward: 0.5, grad_norm: 1, ...v })}\n`);
      }
    };
    const config = ConfigSchema.parse({});
    const { store, ingestor } = pipeline({
      dir: root,
      ingest: config.ingest,
      engine: { rules: ruleBookFor(config), repeatIntervalMs: 3_600_000, targets: ['console'] },
    });
    // each read's rows delivered before the next, as a live terminal does: a row still waiting takes its run's next
    // items in (Outbox.add), and this test wants the rows of each kind apart
    const readAndDeliver = async (): Promise<void> => {
      await ingestor.ingest(path, join(root, 'runs'));
      for (const r of store.outbox.pending('console')) store.outbox.done(r.id, Date.now());
    };
    // entropy under its floor (entropy_collapse, a warning), then a collapse (mode_collapse, critical), then both heal
    write(1, 10, { entropy: 0.5, frac_reward_zero_std: 0.1 });
    await readAndDeliver();
    write(11, 20, { entropy: 0.01, frac_reward_zero_std: 0.1 });
    await readAndDeliver();
    write(21, 30, { entropy: 0.01, frac_reward_zero_std: 0.95 });
    await readAndDeliver();
    write(31, 40, { entropy: 0.5, frac_reward_zero_std: 0.1 });
    await readAndDeliver();

    const rows = store.db.prepare('SELECT payload, urgency FROM outbox ORDER BY id').all() as Array<{
      payload: string;
      urgency: number;
    }>;
    const expected = rows.map((r) => {
      const n = JSON.parse(r.payload) as Notification;
      return Math.max(0, ...n.items.map((i) => RANK[i.severity] ?? 0));
    });
    expect(rows.map((r) => r.urgency)).toEqual(expected);
    // the log gave rows of both kinds (firings and resolutions): the comparison above saw each
    expect(new Set(expected)).toEqual(new Set([1, 2]));
    store.close();
  });
});
