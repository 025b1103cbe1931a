import { appendFileSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Ingestor, type IngestEvent } from '../../../src/ingest/ingestor.ts';
import { LiveIngest, type WatchOptions } from '../../../src/ingest/discover/watcher.ts';
import type { Store } from '../../../src/store/sqlite/store.ts';
import { freshStore } from '../../fixtures/pipeline.ts';
import { ensureParent, tempDir } from '../../helpers.ts';

// The live watcher against real files and real file-system events: what it reads, and when.
let dir: string;
let root: string;
let store: Store;
let live: LiveIngest | null;
let errors: string[];

const WATCH: WatchOptions = { poll: false, pollIntervalMs: 100, depth: 4, ignore: [] };
/** Lines whose loss is their number: the stored series says which lines were read, in which order. */
const lines = (from: number, to: number): string =>
  Array.from({ length: to - from + 1 }, (_, k) => `[Epoch 0.1]  loss=${from + k}\n`).join('');
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);
const losses = (run: string): number[] => {
  const r = store.runs.byName(run);
  return r ? store.points.series(r.id, 'loss').map((p) => p.value) : [];
};
const runNames = (): string[] =>
  store.runs
    .list()
    .map((r) => r.name)
    .sort();

/** As `start` runs it: commits grouped in the ingestor's store. */
async function watch(
  roots: string[] = [root],
  opts: Partial<WatchOptions> = {},
  ingestor = new Ingestor(store, { maxLineBytes: 64 * 1024, examplesPerStep: 2 }),
): Promise<LiveIngest> {
  live = new LiveIngest(ingestor, roots, { ...WATCH, ...opts }, (e) => errors.push(e.message), store);
  await live.start();
  return live;
}

/** Waits (up to 5 s) until `done` holds, then for the watcher to go idle. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !done(); i++) await sleep(50);
  await live?.idle();
}

beforeEach(() => {
  dir = tempDir();
  root = join(dir, 'runs');
  mkdirSync(root, { recursive: true });
  ({ store } = freshStore({ dir }));
  live = null;
  errors = [];
});
afterEach(async () => {
  await live?.stop();
  store.close();
});

describe.each([
  ['fs events', false],
  ['polling', true],
])('the live watcher (%s)', (_name, poll) => {
  const opts = { poll };

  it('has read the files found at start-up when start() resolves', async () => {
    writeFileSync(ensureParent(join(root, 'a', 'learning.log')), lines(1, 5));
    writeFileSync(ensureParent(join(root, 'b', 'logs', 'train.log')), lines(1, 3));
    await watch([root], opts);
    expect(losses('a')).toEqual(range(1, 5));
    expect(losses('b')).toEqual(range(1, 3));
  });

  it('reads every append, the last of a burst included', async () => {
    const path = ensureParent(join(root, 'a', 'learning.log'));
    writeFileSync(path, lines(1, 2));
    await watch([root], opts);
    for (let i = 3; i <= 60; i++) {
      appendFileSync(path, lines(i, i));
      if (i % 10 === 0) await sleep(5);
    }
    await until(() => losses('a').length >= 60);
    expect(losses('a')).toEqual(range(1, 60));
  });

  it('reads a file created in a new sub-directory, and one created in a new run folder', async () => {
    await watch([root], opts);
    writeFileSync(ensureParent(join(root, 'fresh', 'learning.log')), lines(1, 4));
    writeFileSync(ensureParent(join(root, 'team', 'exp7', 'reward_logs', 'train.log')), lines(1, 2));
    await until(() => losses('fresh').length >= 4 && losses('team/exp7').length >= 2);
    expect(losses('fresh')).toEqual(range(1, 4));
    expect(losses('team/exp7')).toEqual(range(1, 2));
  });

  it('reads a run folder removed and made again, and goes on with its appends', async () => {
    const path = ensureParent(join(root, 'a', 'learning.log'));
    writeFileSync(path, lines(1, 3));
    await watch([root], opts);
    rmSync(join(root, 'a'), { recursive: true });
    await sleep(300);
    writeFileSync(ensureParent(path), lines(101, 102));
    await until(() => losses('a').length >= 5);
    appendFileSync(path, lines(103, 104));
    await until(() => losses('a').length >= 7);
    expect(losses('a')).toEqual([1, 2, 3, 101, 102, 103, 104]);
  });

  it('reads a file rotated by rename: the old file to its end, then the new one', async () => {
    const path = ensureParent(join(root, 'a', 'learning.log'));
    writeFileSync(path, lines(1, 3));
    await watch([root], opts);
    appendFileSync(path, lines(4, 6));
    renameSync(path, `${path}.1`);
    writeFileSync(path, lines(7, 8));
    await until(() => losses('a').length >= 8);
    appendFileSync(path, lines(9, 9));
    await until(() => losses('a').length >= 9);
    expect(losses('a')).toEqual(range(1, 9));
  });

  it('goes no deeper than `depth`, at start-up and live', async () => {
    writeFileSync(ensureParent(join(root, 'x', 'y', 'learning.log')), lines(1, 2));
    writeFileSync(ensureParent(join(root, 'x', 'y', 'z', 'learning.log')), lines(1, 2));
    await watch([root], { ...opts, depth: 2 });
    writeFileSync(ensureParent(join(root, 'p', 'q', 'learning.log')), lines(1, 3));
    writeFileSync(ensureParent(join(root, 'p', 'q', 'r', 'learning.log')), lines(1, 3));
    await until(() => losses('p/q').length >= 3);
    await sleep(300);
    await live?.idle();
    expect(runNames()).toEqual(['p/q', 'x/y']);
  });

  it('skips ignored and hidden folders and files no format reads, at start-up and live', async () => {
    writeFileSync(ensureParent(join(root, 'wandb', 'run', 'learning.log')), lines(1, 2));
    writeFileSync(ensureParent(join(root, '.cache', 'learning.log')), lines(1, 2));
    writeFileSync(ensureParent(join(root, 'a', 'learning.log')), lines(1, 2));
    await watch([root], { ...opts, ignore: ['wandb'] });
    writeFileSync(ensureParent(join(root, 'wandb', 'later', 'learning.log')), lines(1, 2));
    writeFileSync(ensureParent(join(root, '.hidden', 'learning.log')), lines(1, 2));
    writeFileSync(join(root, 'a', 'weights.bin'), 'not a log');
    writeFileSync(ensureParent(join(root, 'b', 'learning.log')), lines(1, 2));
    await until(() => losses('b').length >= 2);
    await sleep(300);
    await live?.idle();
    expect(runNames()).toEqual(['a', 'b']);
    expect(store.files.byPath(join(root, 'a', 'weights.bin'))).toBeFalsy();
  });

  it('lets a nested root claim its own files', async () => {
    const inner = join(root, 'team');
    writeFileSync(ensureParent(join(inner, 'exp1', 'learning.log')), lines(1, 2));
    await watch([root, inner], opts);
    writeFileSync(ensureParent(join(inner, 'exp2', 'learning.log')), lines(1, 3));
    appendFileSync(join(inner, 'exp1', 'learning.log'), lines(3, 3));
    await until(() => losses('exp2').length >= 3 && losses('exp1').length >= 3);
    expect(runNames()).toEqual(['exp1', 'exp2']);
    expect(losses('exp1')).toEqual(range(1, 3));
  });

  it('reads a log file linked from inside the root once, under its real path, appends included', async () => {
    const target = ensureParent(join(root, 'shared', 'learning.log'));
    writeFileSync(target, lines(1, 2));
    mkdirSync(join(root, 'a'));
    symlinkSync(target, join(root, 'a', 'learning.log'));
    await watch([root], opts);
    appendFileSync(target, lines(3, 4));
    await until(() => losses('shared').length >= 4);
    expect(runNames()).toEqual(['shared']);
    expect(losses('shared')).toEqual(range(1, 4));
  });

  it('reads nothing of a log file linked from outside the roots, at start-up nor as it grows, and lists it', async () => {
    const target = ensureParent(join(dir, 'elsewhere', 'train.log'));
    writeFileSync(target, lines(1, 2));
    writeFileSync(ensureParent(join(root, 'a', 'job.out')), lines(1, 1));
    symlinkSync(target, join(root, 'a', 'learning.log'));
    await watch([root], opts);
    appendFileSync(target, lines(3, 4));
    await until(() => store.unread.list().length > 0);
    await sleep(300);
    await live?.idle();
    expect(store.unread.list().map((u) => [u.run, u.rel_path, u.reason])).toEqual([
      ['a', 'learning.log', 'symlink leads out of the watched roots'],
    ]);
    expect(store.files.byPath(join(root, 'a', 'learning.log'))).toBeUndefined();
    expect(losses('a')).toEqual([1]); // job.out's one line
  });

  it('reads nothing after stop()', async () => {
    const path = ensureParent(join(root, 'a', 'learning.log'));
    writeFileSync(path, lines(1, 2));
    const w = await watch([root], opts);
    await w.stop();
    live = null;
    appendFileSync(path, lines(3, 4));
    await sleep(400);
    expect(losses('a')).toEqual(range(1, 2));
  });
});

describe('files changed together', () => {
  const RUNS = Array.from({ length: 12 }, (_, i) => `r${String(i).padStart(2, '0')}`);
  const logOf = (run: string): string => join(root, run, 'learning.log');
  const appendToAll = (from: number, to: number, runs = RUNS): void => {
    for (const run of runs) appendFileSync(logOf(run), lines(from, to));
  };
  beforeEach(() => {
    for (const run of RUNS) writeFileSync(ensureParent(logOf(run)), lines(1, 2));
  });

  it('are read in one transaction, every line of each once', async () => {
    await watch();
    const begin = vi.spyOn(store.db, 'exec');
    for (let i = 3; i <= 20; i++) {
      appendToAll(i, i);
      await sleep(i % 4 === 0 ? 20 : 0);
    }
    await until(() => RUNS.every((r) => losses(r).length >= 20));
    for (const run of RUNS) expect(losses(run)).toEqual(range(1, 20));
    const groups = begin.mock.calls.filter(([sql]) => sql === 'BEGIN IMMEDIATE').length;
    expect(groups).toBeGreaterThan(0);
    expect(groups).toBeLessThan(RUNS.length * 18);
    expect(errors).toEqual([]);
  });

  it('lose none of their lines to one whose rules throw', async () => {
    const events: IngestEvent[] = [];
    const bad = (): number => store.runs.byName('r05')?.id ?? -1;
    const ingestor = new Ingestor(
      store,
      { maxLineBytes: 64 * 1024, examplesPerStep: 2 },
      (e) => events.push(e),
      (r) => {
        if (r.runId === bad() && (r.maxStep ?? 0) > 2) throw new Error('a rule broke');
      },
    );
    await watch([root], {}, ingestor);
    appendToAll(3, 5);
    await until(() => RUNS.every((r) => r === 'r05' || losses(r).length >= 5));
    await sleep(200);
    await live?.idle();
    for (const run of RUNS) expect(losses(run)).toEqual(run === 'r05' ? range(1, 2) : range(1, 5));
    expect(events).toContainEqual({ kind: 'unreadable', path: logOf('r05'), error: 'a rule broke' });
  });

  it('lose nothing to a full disk: once there is room, every line is stored once', async () => {
    await watch();
    const pages = store.db.pragma('page_count', { simple: true }) as number;
    store.db.pragma(`max_page_count = ${pages + 20}`); // room for a few runs' batches, not all
    appendToAll(3, 400);
    await until(() => errors.length > 0);
    await sleep(300);
    await live?.idle();
    expect(errors[0]).toMatch(/^the database's disk is full: /);
    // each file's batch is stored whole or not at all, whatever the others in its transaction did
    for (const run of RUNS) expect([2, 400]).toContain(losses(run).length);
    store.db.pragma('max_page_count = 1073741823');
    appendToAll(401, 402);
    await until(() => RUNS.every((r) => losses(r).length >= 402));
    for (const run of RUNS) expect(losses(run)).toEqual(range(1, 402));
  });
});
