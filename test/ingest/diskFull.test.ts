import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { LiveIngest } from '../../src/ingest/discover/watcher.ts';
import { DatabaseError } from '../../src/store/dbErrors.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { ensureParent } from '../helpers.ts';

// The disk fills for real inside SQLite: `max_page_count` makes every write past it fail with SQLITE_FULL
// ("database or disk is full"), exactly as a full file system does, without a mount.
let dir: string;
let dbPath: string;
let store: Store;
const OPTS = { maxLineBytes: 64 * 1024, examplesPerStep: 2, chunkBytes: 4096 };
const RUNS = ['a', 'b', 'c'];
const LINES = 3000;

const lines = (from: number, to: number): string =>
  Array.from({ length: to - from + 1 }, (_, k) => `[Epoch 0.1]  loss=${from + k}  reward=0.5  entropy=0.2\n`).join('');
const root = (): string => join(dir, 'runs');
const losses = (s: Store, run: string): number[] => {
  const r = s.runs.byName(run);
  return r ? s.points.series(r.id, 'loss').map((p) => p.value) : [];
};
/** Lets the database grow by about `kb` more kilobytes, then it is full. */
function fillAfter(s: Store, kb: number): void {
  const pages = s.db.pragma('page_count', { simple: true }) as number;
  const size = s.db.pragma('page_size', { simple: true }) as number;
  s.db.pragma(`max_page_count = ${pages + Math.ceil((kb * 1024) / size)}`);
}

beforeEach(() => {
  ({ dir, path: dbPath, store } = freshStore());
  for (const run of RUNS) writeFileSync(ensureParent(join(root(), run, 'learning.log')), lines(1, LINES));
});
afterEach(() => store.close());

describe('the database disk filling up', () => {
  it('stops backfill with what was stored, and a later backfill finishes the job exactly', async () => {
    fillAfter(store, 160);
    const err = await backfill(new Ingestor(store, OPTS), [root()], { depth: 4 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as DatabaseError).problem).toBe('full');
    const stored = RUNS.reduce((n, run) => n + losses(store, run).length, 0);
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(RUNS.length * LINES);
    expect((err as Error).message).toContain(`this backfill stored ${stored.toLocaleString('en')} records`);
    expect((err as Error).message).toMatch(/^the database's disk is full: .* run the same backfill again/);
    store.close();

    store = Store.open(dbPath); // space freed: no page limit on a new connection
    const summary = await backfill(new Ingestor(store, OPTS), [root()], { depth: 4 });
    expect(summary.records).toBe(RUNS.length * LINES - stored);
    for (const run of RUNS) expect(losses(store, run)).toEqual(Array.from({ length: LINES }, (_, k) => k + 1));
  });

  it('under start, says the database disk is full rather than blaming the log file', async () => {
    const errors: string[] = [];
    const live = new LiveIngest(
      new Ingestor(store, OPTS),
      [root()],
      { poll: false, pollIntervalMs: 100, depth: 4, ignore: [] },
      (e) => errors.push(e.message),
    );
    await live.start();
    try {
      fillAfter(store, 8);
      appendFileSync(join(root(), 'a', 'learning.log'), lines(LINES + 1, LINES + 2000));
      for (let i = 0; i < 100 && errors.length === 0; i++) await sleep(50);
      expect(errors[0]).toMatch(/^the database's disk is full: .*learning\.log is stored up to line \d+/);
    } finally {
      await live.stop();
    }
  });
});
