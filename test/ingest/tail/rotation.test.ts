import { appendFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ingestor, type IngestEvent } from '../../../src/ingest/ingestor.ts';
import { LiveIngest } from '../../../src/ingest/discover/watcher.ts';
import { Store } from '../../../src/store/sqlite/store.ts';
import { freshStore } from '../../fixtures/pipeline.ts';
import { ensureParent } from '../../helpers.ts';
import { eventRecord, versionRecord } from '../../tfeventsWriter.ts';

let root: string;
let dbPath: string;
let store: Store;
let events: IngestEvent[];

const OPTS = { maxLineBytes: 64 * 1024, examplesPerStep: 2 };
const newIngestor = (): Ingestor => new Ingestor(store, OPTS, (e) => events.push(e));

beforeEach(() => {
  ({ dir: root, path: dbPath, store } = freshStore());
  events = [];
});
afterEach(() => store.close());

const runs = (): string => join(root, 'runs');
const logPath = (): string => ensureParent(join(runs(), 'run1', 'learning.log'));
/** Lines whose loss is their number: the stored series says which lines were read, in which order. */
const lines = (from: number, to: number): string =>
  Array.from({ length: to - from + 1 }, (_, k) => `[Epoch 0.1]  loss=${from + k}\n`).join('');
const losses = (): number[] => {
  const run = store.runs.byName('run1');
  return run ? store.points.series(run.id, 'loss').map((p) => p.value) : [];
};
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);

describe('rotation right after a burst', () => {
  it('reads the renamed file to its end before the new file at the path', async () => {
    const path = logPath();
    const ingestor = newIngestor();
    writeFileSync(path, lines(1, 10));
    await ingestor.ingest(path, runs());
    appendFileSync(path, lines(11, 210));
    renameSync(path, `${path}.1`);
    writeFileSync(path, lines(211, 215));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 215));
    expect(events).toContainEqual({ kind: 'restart', path, why: 'rotated' });
  });

  it('finds the renamed file by its device and inode after a restart', async () => {
    const path = logPath();
    writeFileSync(path, lines(1, 10));
    await newIngestor().ingest(path, runs());
    store.close();
    appendFileSync(path, lines(11, 210));
    renameSync(path, `${path}.1`);
    appendFileSync(`${path}.1`, lines(211, 220)); // a writer still holding the old file
    writeFileSync(path, lines(221, 225));
    store = Store.open(dbPath);
    const ingestor = newIngestor();
    await ingestor.ingest(path, runs());
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 225));
  });

  it('records an empty new file once, and does not report the rotation again', async () => {
    const path = logPath();
    const ingestor = newIngestor();
    writeFileSync(path, lines(1, 3));
    await ingestor.ingest(path, runs());
    appendFileSync(path, lines(4, 6));
    renameSync(path, `${path}.1`);
    writeFileSync(path, '');
    await ingestor.ingest(path, runs());
    await ingestor.ingest(path, runs());
    appendFileSync(path, lines(7, 8));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 8));
    expect(events.filter((e) => e.kind === 'restart')).toHaveLength(1);
  });

  it('after a truncation to nothing, reads what is written next from the start, even past the old size', async () => {
    const path = logPath();
    const ingestor = newIngestor();
    writeFileSync(path, lines(1, 5));
    await ingestor.ingest(path, runs());
    truncateSync(path, 0);
    await ingestor.ingest(path, runs());
    appendFileSync(path, lines(6, 50));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 50));
  });

  it('loses nothing under the live watcher', async () => {
    const path = logPath();
    writeFileSync(path, lines(1, 10));
    const live = new LiveIngest(newIngestor(), [runs()], { poll: false, pollIntervalMs: 100, depth: 4, ignore: [] });
    await live.start();
    try {
      appendFileSync(path, lines(11, 210));
      renameSync(path, `${path}.1`);
      writeFileSync(path, lines(211, 212));
      for (let i = 0; i < 100 && losses().length < 212; i++) await sleep(50);
      await live.idle();
      expect(losses()).toEqual(range(1, 212));
    } finally {
      await live.stop();
    }
  });
});

/** The mtime rule (rotation.ts) tells files written after the last read by the file system's clock: let it tick. */
const tick = (): Promise<void> => sleep(30);
/** learning.log.N -> .N+1 for the siblings there, then the path itself -> .1 (logrotate's numbering) */
function rotate(path: string, kept: number): void {
  for (let n = kept; n >= 1; n--) renameSync(`${path}.${n}`, `${path}.${n + 1}`);
  renameSync(path, `${path}.1`);
}

describe('two rotations between reads', () => {
  it('reads the file that came and went at the path between them', async () => {
    const path = logPath();
    const ingestor = newIngestor();
    writeFileSync(path, lines(1, 10));
    await ingestor.ingest(path, runs());
    await tick();
    appendFileSync(path, lines(11, 20));
    rotate(path, 0);
    writeFileSync(path, lines(21, 30));
    rotate(path, 1);
    writeFileSync(path, lines(31, 35));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 35));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 35));
  });

  it('reads them in the order they were written, whatever the numbering (here: .1, .2, .3 the newest last)', async () => {
    const path = logPath();
    const ingestor = newIngestor();
    writeFileSync(path, lines(1, 5));
    await ingestor.ingest(path, runs());
    await tick();
    appendFileSync(path, lines(6, 8));
    renameSync(path, `${path}.1`);
    writeFileSync(path, lines(9, 12));
    await tick();
    renameSync(path, `${path}.2`);
    writeFileSync(path, lines(13, 15));
    await tick();
    renameSync(path, `${path}.3`);
    writeFileSync(path, lines(16, 17));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 17));
  });

  it("never reads an older rotation already read, another run's .bak or a compressed rotation", async () => {
    const path = logPath();
    const ingestor = newIngestor();
    writeFileSync(path, lines(1, 5));
    await ingestor.ingest(path, runs());
    appendFileSync(path, lines(6, 8));
    rotate(path, 0);
    writeFileSync(path, lines(9, 12));
    await ingestor.ingest(path, runs()); // the first rotation, read: .1 holds 1..8
    await tick();
    writeFileSync(`${path}.bak`, lines(900, 905));
    writeFileSync(`${path}.7.gz`, lines(800, 805));
    appendFileSync(path, lines(13, 14));
    rotate(path, 1);
    writeFileSync(path, lines(15, 18));
    rotate(path, 2);
    writeFileSync(path, lines(19, 20));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 20));
  });

  it('reads them after a restart, when both rotations happened while rlwatch was stopped', async () => {
    const path = logPath();
    writeFileSync(path, lines(1, 10));
    await newIngestor().ingest(path, runs());
    store.close();
    await tick();
    appendFileSync(path, lines(11, 20));
    rotate(path, 0);
    writeFileSync(path, lines(21, 30));
    rotate(path, 1);
    writeFileSync(path, lines(31, 33));
    store = Store.open(dbPath);
    const ingestor = newIngestor();
    await ingestor.ingest(path, runs());
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 33));
  });
});

describe('a TensorBoard event file renamed away', () => {
  const eventsPath = (): string => ensureParent(join(runs(), 'run1', 'events.out.tfevents.1763825713.gpu01.4242.0'));
  const records = (from: number, to: number): Buffer =>
    Buffer.concat(range(from, to).map((step) => eventRecord({ step, scalars: { 'train/loss': step } })));

  it('is read to its end, then any file between, then the new file at its path', async () => {
    const path = eventsPath();
    const ingestor = newIngestor();
    writeFileSync(path, Buffer.concat([versionRecord(), records(1, 5)]));
    await ingestor.ingest(path, runs());
    await tick();
    appendFileSync(path, records(6, 9)); // appended after the last read, before the rename
    rotate(path, 0);
    writeFileSync(path, Buffer.concat([versionRecord(), records(10, 12)]));
    rotate(path, 1);
    writeFileSync(path, Buffer.concat([versionRecord(), records(13, 14)]));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 14));
    expect(events).toContainEqual({ kind: 'restart', path, why: 'rotated' });
    appendFileSync(path, records(15, 15));
    await ingestor.ingest(path, runs());
    expect(losses()).toEqual(range(1, 15));
  });

  it('is found by its inode after a restart', async () => {
    const path = eventsPath();
    writeFileSync(path, Buffer.concat([versionRecord(), records(1, 3)]));
    await newIngestor().ingest(path, runs());
    store.close();
    appendFileSync(path, records(4, 6));
    rotate(path, 0);
    writeFileSync(path, Buffer.concat([versionRecord(), records(7, 8)]));
    store = Store.open(dbPath);
    await newIngestor().ingest(path, runs());
    expect(losses()).toEqual(range(1, 8));
  });
});
