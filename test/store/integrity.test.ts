import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DatabaseError } from '../../src/store/dbErrors.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { WriterLock } from '../../src/store/sqlite/writerLock.ts';
import { tempDir } from '../helpers.ts';

describe('integrity at open', () => {
  it('a writer refuses a damaged database in one line; a sound one opens', () => {
    const db = join(tempDir(), 'small.db');
    const store = Store.open(db);
    const run = store.runs.ensure('r', '/x/r');
    store.db.transaction(() => {
      const rows = Array.from({ length: 20_000 }, (_, k) => ({
        step: k + 1,
        values: new Map([
          ['loss', k + 1],
          ['reward', (k + 1) / 2],
        ]),
      }));
      store.points.writeRows(run.id, rows, new Set());
    })();
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    Store.openWriter(db, 'backfill').close();

    // scribble over the middle of a page in the middle of the file: the header and schema stay readable
    const page = 4096;
    const fd = openSync(db, 'r+');
    writeSync(fd, Buffer.alloc(3000, 0x5a), 0, 3000, Math.floor(statSync(db).size / 2 / page) * page + 100);
    closeSync(fd);
    let err: unknown;
    try {
      Store.openWriter(db, 'backfill').close();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as DatabaseError).problem).toBe('damaged');
    expect((err as Error).message).toMatch(/small\.db is damaged \(.*\): move it aside; `rlwatch backfill`/);
    expect((err as Error).message).not.toContain('\n');
    // the refused open let go of the writer lock
    const lock = WriterLock.tryAcquire(db);
    expect(lock).not.toBeNull();
    lock?.release();
  });
});
