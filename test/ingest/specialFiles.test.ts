import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runFiles } from '../../src/commands/files.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import type { Ingestor } from '../../src/ingest/ingestor.ts';
import { LiveIngest } from '../../src/ingest/discover/watcher.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent, tempDir } from '../helpers.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

const WATCH = { poll: false, pollIntervalMs: 100, depth: 4, ignore: [] };
const lines = (n: number): string => Array.from({ length: n }, (_, k) => `[Epoch 0.1]  loss=${k + 1}\n`).join('');
const runNames = (): string[] =>
  store.runs
    .list()
    .map((r) => r.name)
    .sort();

beforeEach(() => {
  let dir: string;
  ({ dir, store, ingestor } = pipeline({ ingest: { maxLineBytes: 64 * 1024, examplesPerStep: 2 } }));
  root = join(dir, 'runs');
});
afterEach(() => store.close());

/** Waits (up to 5 s) until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 250 && !done(); i++) await sleep(20);
}

async function watchOnce(poll = false, done = (): boolean => true): Promise<void> {
  const live = new LiveIngest(ingestor, [root], { ...WATCH, poll });
  await live.start();
  await until(done);
  await sleep(200);
  await live.idle();
  await live.stop();
}

describe('a named pipe in the tree', () => {
  beforeEach(() => {
    writeFileSync(ensureParent(join(root, 'good', 'learning.log')), lines(3));
    mkdirSync(join(root, 'piped'), { recursive: true });
    execFileSync('mkfifo', [join(root, 'piped', 'train.log')]);
  });

  it('is not opened: the ingestor passes it by at once', async () => {
    expect(await ingestor.ingest(join(root, 'piped', 'train.log'), root)).toBeNull();
  });

  it('does not stop start from reading the other runs', async () => {
    await watchOnce();
    expect(runNames()).toEqual(['good']);
    expect(store.runs.byName('good')?.records).toBe(3);
  });
});

describe('symlinks: one rule in backfill and start', () => {
  const SECRET = 'root:$6$pl4nted-s3cret-hash:19000:0:99999:7:::';
  const KEY = '-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA';
  beforeEach(() => {
    writeFileSync(ensureParent(join(root, 'exp1', 'learning.log')), lines(3));
    symlinkSync(join(root, 'exp1'), join(root, 'latest')); // inside the root: read once, as exp1
    const outside = tempDir();
    // what a link planted in a run folder leads to: a file and a folder out of the root, each in a format read
    writeFileSync(join(outside, 'shadow'), `${lines(1)}${SECRET}\n`);
    symlinkSync(join(outside, 'shadow'), join(root, 'exp1', 'shadow.log'));
    writeFileSync(ensureParent(join(outside, 'ssh', 'worker.log')), `step:1 - actor/entropy:0.5\n${KEY}\n`);
    symlinkSync(join(outside, 'ssh'), join(root, 'exp1', 'logs'));
    writeFileSync(ensureParent(join(outside, 'exp9', 'learning.log')), lines(2));
    symlinkSync(join(outside, 'exp9'), join(root, 'exp9')); // a whole run folder out of the root
    symlinkSync(join(root, 'loop'), join(root, 'loop')); // a link to itself ends
    symlinkSync(root, join(root, 'exp1', 'up')); // a cycle ends
  });

  const REASON = 'symlink leads out of the watched roots';
  /** exp1's own log is read once, as exp1; the three links out are listed as not read, under the run they sit in */
  async function expectOnlyInside(): Promise<void> {
    expect(runNames()).toEqual(['exp1']);
    expect(store.runs.byName('exp1')?.records).toBe(3);
    const read = store.runs.list().flatMap((r) => store.files.ofRun(r.id).map((f) => f.path));
    expect(read).toEqual([join(root, 'exp1', 'learning.log')]);
    const unread = (await runFiles(new SqliteAsyncStore(store))).flatMap((r) =>
      r.unread.map((u) => ({ run: r.run, path: u.path, reason: u.reason })),
    );
    expect(unread).toEqual([
      { run: 'exp1', path: 'logs', reason: REASON },
      { run: 'exp1', path: 'shadow.log', reason: REASON },
      { run: 'runs', path: 'exp9', reason: REASON }, // in the root itself: under the root's name
    ]);
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    const db = readFileSync(store.db.name, 'latin1');
    expect(db).not.toContain('pl4nted-s3cret');
    expect(db).not.toContain('OPENSSH');
  }

  it('backfill reads a linked run folder once, by its real path, and nothing where a link out leads', async () => {
    await backfill(ingestor, [root], { depth: 4 });
    await expectOnlyInside();
  });

  it.each([false, true])('start (poll: %s) reads the same as backfill', async (poll) => {
    await watchOnce(poll, () => store.unread.list().length >= 3);
    await expectOnlyInside();
  });

  it('start tells a link planted while it runs, once', async () => {
    const live = new LiveIngest(ingestor, [root], { ...WATCH, depth: 4 });
    await live.start();
    const noted = vi.spyOn(store.unread, 'note');
    symlinkSync(join(root, 'exp1', 'shadow.log'), join(root, 'exp1', 'job.out')); // through a link inside, out
    await until(() => noted.mock.calls.length > 0);
    writeFileSync(join(root, 'exp1', 'more.log'), lines(1)); // the folder is listed again
    await until(() => store.files.byPath(join(root, 'exp1', 'more.log')) !== undefined);
    await live.stop();
    expect(noted.mock.calls.map(([row]) => [row.rel_path, row.reason])).toEqual([['job.out', REASON]]);
    expect(store.files.byPath(join(root, 'exp1', 'job.out'))).toBeUndefined();
  });
});
