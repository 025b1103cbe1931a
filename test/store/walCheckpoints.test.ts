/**
 * `start` checkpoints its WAL on a thread of its own (store/sqlite/walCheckpoints.ts): the writer's commits never checkpoint
 * (SQLite's own checkpoint syncs to disk on the committing thread), and what they wrote still reaches the database
 * file. A real SQLite file and the real worker thread; the file's size on disk tells what was checkpointed into it.
 */
import { renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/sqlite/store.ts';
import { walCheckpoints } from '../../src/store/sqlite/walCheckpoints.ts';
import { tempDir } from '../helpers.ts';

const ROW = 'x'.repeat(1000);

/** 2,000 commits of one 1 KB row each: ~2 MB, well past SQLite's own checkpoint at 1,000 frames. */
function write(store: Store): void {
  store.db.exec('CREATE TABLE IF NOT EXISTS blob (id INTEGER PRIMARY KEY, v TEXT)');
  const insert = store.db.prepare('INSERT INTO blob (v) VALUES (?)');
  for (let i = 0; i < 2000; i++) insert.run(ROW);
}

describe('WAL checkpoints off the writer thread', () => {
  it("leave the writer's commits without a checkpoint, and bring what they wrote into the database file", async () => {
    const path = join(tempDir(), 'rlwatch.db');
    const store = Store.open(path);
    const before = statSync(path).size;
    const checkpoints = walCheckpoints(store.db, 20);
    try {
      expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      write(store);
      const deadline = Date.now() + 10_000;
      while (statSync(path).size < before + 2_000_000 && Date.now() < deadline) await sleep(20);
      expect(statSync(path).size).toBeGreaterThanOrEqual(before + 2_000_000);
    } finally {
      await checkpoints.stop();
    }
    expect(store.db.prepare('SELECT count(*) FROM blob').pluck().get()).toBe(2000);
    store.close();
  });

  it('without the thread, the same commits leave the database file as it was until SQLite checkpoints', () => {
    // the control: SQLite's own checkpoints off and no thread, nothing reaches the file
    const path = join(tempDir(), 'rlwatch.db');
    const store = Store.open(path);
    const before = statSync(path).size;
    store.db.pragma('wal_autocheckpoint = 0');
    write(store);
    expect(statSync(path).size).toBe(before);
    store.close();
  });

  it("turns SQLite's own checkpoints on again when the thread ends unasked, and not when asked to stop", async () => {
    const dir = tempDir();
    const store = Store.open(join(dir, 'rlwatch.db'));
    // the thread cannot open the file (moved away under the open connection): it ends at once
    renameSync(join(dir, 'rlwatch.db'), join(dir, 'moved.db'));
    const failed = walCheckpoints(store.db, 20);
    const deadline = Date.now() + 10_000;
    while (store.db.pragma('wal_autocheckpoint', { simple: true }) === 0 && Date.now() < deadline) await sleep(20);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await failed.stop();
    store.close();

    const other = Store.open(join(tempDir(), 'rlwatch.db'));
    const asked = walCheckpoints(other.db, 20);
    await asked.stop();
    expect(other.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0); // the writer is closing
    other.close();
  });
});
