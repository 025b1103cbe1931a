import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent, tempDir } from '../helpers.ts';

let dir: string;
let root: string;
let store: Store;
let ingestor: Ingestor;

const lines = (from: number, to: number): string =>
  Array.from({ length: to - from + 1 }, (_, k) => `[Epoch 0.1]  loss=${from + k}\n`).join('');
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);
const losses = (s: Store, run: string): number[] => {
  const r = s.runs.byName(run);
  return r ? s.points.series(r.id, 'loss').map((p) => p.value) : [];
};
const logOf = (run: string): string => join(root, run, 'learning.log');

beforeEach(() => {
  dir = tempDir();
  root = join(dir, 'runs');
  for (const run of ['a', 'b', 'c']) writeFileSync(ensureParent(logOf(run)), lines(1, 5));
  ({ store, ingestor } = pipeline({ dir, name: 'test.db', ingest: { maxLineBytes: 64 * 1024, examplesPerStep: 2 } }));
});
afterEach(() => store.close());

describe('reading several files in one transaction', () => {
  it('commits what their reads wrote, once, seen from another connection', async () => {
    const group = store.group(() => ['a', 'b', 'c'].map((r) => ingestor.ingest(logOf(r), root)));
    expect(group.failed).toBeNull();
    expect(store.db.inTransaction).toBe(false);
    const other = Store.open(join(dir, 'test.db'));
    try {
      for (const run of ['a', 'b', 'c']) expect(losses(other, run)).toEqual(range(1, 5));
    } finally {
      other.close();
    }
    const outcomes = await Promise.all(group.reads);
    expect(outcomes.map((o) => o?.records)).toEqual([5, 5, 5]);
  });

  it('says so when SQLite rolled the group back under it, and the files are then read again in full', async () => {
    const group = store.group(() => {
      const reads = ['a', 'b'].map((r) => ingestor.ingest(logOf(r), root));
      store.db.exec('ROLLBACK'); // what SQLite does by itself on some full-disk and I/O errors
      return reads;
    });
    await Promise.all(group.reads);
    expect(group.failed?.message).toMatch(/^a group of 2 reads did not commit: /);
    expect(store.db.inTransaction).toBe(false);
    expect(losses(store, 'a')).toEqual([]);
    for (const run of ['a', 'b']) await ingestor.ingest(logOf(run), root);
    expect(losses(store, 'a')).toEqual(range(1, 5));
    expect(losses(store, 'b')).toEqual(range(1, 5));
  });

  it('a read of several chunks whose group rolled back stops, so that its later chunks never commit past the lost one', async () => {
    // ~20-byte lines in 40-byte chunks: the appended lines' first chunk commits inside the group, the rest after it
    const chunked = new Ingestor(store, { maxLineBytes: 64 * 1024, examplesPerStep: 2, chunkBytes: 40 });
    await chunked.ingest(logOf('a'), root);
    appendFileSync(logOf('a'), lines(6, 9));
    const group = store.group(() => {
      const reads = [chunked.ingest(logOf('a'), root)];
      store.db.exec('ROLLBACK');
      return reads;
    });
    await Promise.all(group.reads);
    expect(group.failed).not.toBeNull();
    // unguarded, steps 8 and 9 were stored, with the offset past them: 6 and 7 were lost for good
    expect(losses(store, 'a')).toEqual(range(1, 5));
    await chunked.ingest(logOf('a'), root);
    expect(losses(store, 'a')).toEqual(range(1, 9));
  });
});
