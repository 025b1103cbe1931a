/**
 * PostgreSQL going away while a watcher starts (after it read the files there, before it took note of the runs it
 * caught up with): the start waits the outage out, as watching does, instead of ending the process. The store is the
 * real SQLite one; only the failure is put in, as the PostgreSQL live store throws it (a PostgresError whose SQLSTATE
 * ends the connection).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Log } from '../../src/lib/log.ts';
import { PostgresError } from '../../src/store/dbErrors.ts';
import { startWatching, type Watching } from '../../src/app/watching.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { ensureParent, learningLines as lines, tempDir } from '../helpers.ts';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('startWatching', () => {
  it('waits out a server that goes away during the start, then watches the runs as live', async () => {
    const dir = tempDir();
    const root = join(dir, 'runs');
    const file = ensureParent(join(root, 'grpo', 'learning.log'));
    writeFileSync(file, lines(1, 10));
    const { store } = freshStore({ dir });
    cleanup.push(() => store.close());
    // the first look at the runs after the files there were committed finds the connection gone
    let armed = false;
    let thrown = 0;
    const list = store.runs.list.bind(store.runs);
    store.runs.list = (...args: Parameters<typeof list>) => {
      if (armed && thrown === 0) {
        thrown++;
        throw new PostgresError('Connection terminated unexpectedly', '57P01');
      }
      return list(...args);
    };
    const warnings: string[] = [];
    const log: Log = { info: () => {}, warn: (m) => warnings.push(m) };
    const config = ConfigSchema.parse({});
    const watching: Watching = await startWatching(store, {
      config,
      log,
      roots: [root],
      prefix: '',
      onBatch: () => (armed = true),
    });
    cleanup.push(() => watching.stop());
    expect(thrown).toBe(1);
    expect(warnings.filter((w) => w.startsWith('cannot start watching yet (Connection terminated'))).toHaveLength(1);

    appendFileSync(file, lines(11, 12)); // grown after the catch-up: a live run
    await expect.poll(() => store.runs.list()[0]?.last_step, { timeout: 10_000 }).toBe(12);
    const run = store.runs.list()[0];
    expect(run?.live_at).not.toBeNull();
    expect(run?.live_at).toBe(run?.active_at);
  }, 30_000);
});
