/**
 * A team moving to PostgreSQL: the history `rlwatch start` wrote into SQLite is migrated, and the same host then
 * watches the same runs into PostgreSQL with `watch.prefix: ""` (docs/postgres.md). The runs go on under their
 * names, each file from the offset SQLite had reached: nothing read twice, nothing lost.
 */
import pg from 'pg';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { silentLog } from '../../src/lib/log.ts';
import { startWatcher } from '../../src/app/watcherRole.ts';
import { ensureParent, learningLines as lines, tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { rlwatch } from './cli.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('rlwatch migrate, then a watcher on PostgreSQL', () => {
  it('goes on with the migrated runs from where SQLite stopped', async () => {
    const dir = tempDir();
    const root = join(dir, 'runs');
    const log = ensureParent(join(root, 'grpo-7', 'learning.log'));
    writeFileSync(log, lines(1, 40));
    const sqlite = join(dir, 'rlwatch.db');
    expect(rlwatch(['--db', sqlite, 'backfill', root]).status).toBe(0);
    const url = await freshPgDatabase();
    const migrated = rlwatch(['migrate', '--from', sqlite, '--to', url]);
    expect(migrated.status, migrated.stderr).toBe(0);

    appendFileSync(log, lines(41, 60)); // written while nothing watched
    const config = ConfigSchema.parse({ watch: { prefix: '' } });
    const watcher = await startWatcher({ config, log: silentLog, db: url, roots: [root] });
    cleanup.push(() => watcher.stop());
    appendFileSync(log, lines(61, 70)); // and live

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    cleanup.push(() => db.end());
    const rewards = async (): Promise<Array<{ name: string; step: number; value: number }>> =>
      (
        await db.query<{ name: string; step: string; value: number }>(
          `SELECT r.name, p.step, p.value FROM points p JOIN runs r ON r.id = p.run_id JOIN metrics m ON m.id = p.metric_id
         WHERE m.name = 'reward' ORDER BY p.step`,
        )
      ).rows.map((r) => ({ name: r.name, step: Number(r.step), value: r.value }));
    await expect.poll(async () => (await rewards()).length, { timeout: 20_000 }).toBe(70);
    const got = await rewards();
    expect(new Set(got.map((r) => r.name))).toEqual(new Set(['grpo-7']));
    got.forEach((r, k) => {
      expect(r).toEqual({ name: 'grpo-7', step: k + 1, value: expect.closeTo(0.1 + (k + 1) / 1000, 9) });
    });
    const { rows: files } = await db.query<{ offset: string }>('SELECT "offset" FROM files');
    expect(files.map((f) => Number(f.offset))).toEqual([Buffer.byteLength(lines(1, 70))]);
  }, 60_000);
});
