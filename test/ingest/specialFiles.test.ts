import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { LiveIngest } from '../../src/ingest/watcher.ts';
import { Store } from '../../src/store/store.ts';
import { ensureParent, tempDir } from '../helpers.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

const WATCH = { poll: false, pollIntervalMs: 100, depth: 4, ignore: [] };
const lines = (n: number): string => Array.from({ length: n }, (_, k) => `[Epoch 0.1]  loss=${k + 1}\n`).join('');
const runNames = (): string[] => store.runs.list().map((r) => r.name).sort();

beforeEach(() => {
  const dir = tempDir();
  root = join(dir, 'runs');
  store = Store.open(join(dir, 'test.db'));
  ingestor = new Ingestor(store, { maxLineBytes: 64 * 1024, examplesPerStep: 2 });
});
afterEach(() => store.close());

async function watchOnce(): Promise<void> {
  const live = new LiveIngest(ingestor, [root], WATCH);
  await live.start();
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
  beforeEach(() => {
    writeFileSync(ensureParent(join(root, 'exp1', 'learning.log')), lines(3));
    symlinkSync(join(root, 'exp1'), join(root, 'latest')); // inside the root: read once, as exp1
    const outside = join(tempDir(), 'elsewhere', 'exp9');
    writeFileSync(ensureParent(join(outside, 'learning.log')), lines(2));
    symlinkSync(outside, join(root, 'exp9')); // out of the root: followed, under the link's name
    symlinkSync(join(root, 'loop'), join(root, 'loop')); // a link to itself ends
    symlinkSync(root, join(root, 'exp1', 'up')); // a cycle ends
  });

  it('backfill reads a linked run folder once, by its real path', async () => {
    await backfill(ingestor, [root], { depth: 4 });
    expect(runNames()).toEqual(['exp1', 'exp9']);
    expect(store.runs.byName('exp1')?.records).toBe(3);
  });

  it('start reads the same runs as backfill', async () => {
    await watchOnce();
    expect(runNames()).toEqual(['exp1', 'exp9']);
    expect(store.runs.byName('exp1')?.records).toBe(3);
  });
});
