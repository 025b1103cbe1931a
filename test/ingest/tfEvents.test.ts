import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent } from '../helpers.ts';
import { eventRecord, trainerEvents, versionRecord } from '../tfeventsWriter.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

beforeEach(() => {
  ({
    dir: root,
    store,
    ingestor,
  } = pipeline({ ingest: { maxLineBytes: 64 * 1024, examplesPerStep: 2, chunkBytes: 4096 } }));
  return () => store.close();
});

/** Where the HF Trainer puts it: `output_dir/runs/<date>_<host>/events.out.tfevents.<time>.<host>.<pid>.0`. */
const eventsFile = (): string =>
  ensureParent(
    join(root, 'runs', 'grpo-7b', 'runs', 'Nov22_15-35-13_gpu01', 'events.out.tfevents.1763825713.gpu01.4242.0'),
  );
const ingest = (path: string) => ingestor.ingest(path, join(root, 'runs'));
const series = (metric: string) => {
  const run = store.runs.byName('grpo-7b');
  return run ? store.points.series(run.id, metric).map((p) => [p.step, p.value]) : [];
};
/** float32 as TensorBoard stores simple_value */
const f32 = (x: number): number => Math.fround(x);

describe('TensorBoard event files', () => {
  it('reads every step of a Trainer event file into the run above runs/, under canonical names', async () => {
    const path = eventsFile();
    const steps = 300;
    writeFileSync(
      path,
      trainerEvents(steps, (s) => ({
        'train/reward': s / 1000,
        'train/rewards/accuracy_reward/mean': s / 2000,
        'train/learning_rate': 1e-6,
        'train/epoch': s / 100,
      })),
    );
    const out = await ingest(path);
    expect(out).toMatchObject({ run: 'grpo-7b', format: 'tfEvents', bytes: readFileSync(path).length });
    expect(series('reward')).toHaveLength(steps);
    expect(series('reward')[41]).toEqual([42, f32(0.042)]);
    expect(series('rewards/accuracy_reward').at(-1)).toEqual([300, f32(0.15)]);
    expect(series('lr')[0]).toEqual([1, f32(1e-6)]);
    expect(series('epoch').at(-1)).toEqual([300, 3]);
    expect(store.runs.byName('grpo-7b')).toMatchObject({ first_step: 1, last_step: steps, records: steps });
  });

  it('reads a record cut mid-write once it is complete, and nothing twice', async () => {
    const path = eventsFile();
    const done = Buffer.concat([versionRecord(), eventRecord({ step: 1, scalars: { 'train/reward': 0.25 } })]);
    const cut = eventRecord({ step: 2, scalars: { 'train/reward': 0.5 } });
    writeFileSync(path, Buffer.concat([done, cut.subarray(0, 17)]));
    await ingest(path);
    expect(series('reward')).toEqual([[1, 0.25]]);
    expect(store.files.byPath(path)?.offset).toBe(done.length);

    appendFileSync(path, cut.subarray(17));
    const again = await ingest(path);
    expect(again?.records).toBe(1);
    expect(series('reward')).toEqual([
      [1, 0.25],
      [2, 0.5],
    ]);
    expect((await ingest(path))?.records).toBe(0);
    expect(store.files.byPath(path)).toMatchObject({ offset: done.length + cut.length, records: 2, skipped: 0 });
  });

  it('counts a record with a bad CRC and reads the records after it', async () => {
    const path = eventsFile();
    const broken = eventRecord({ step: 2, scalars: { 'train/reward': 9 } });
    broken.writeUInt8(broken.readUInt8(broken.length - 5) ^ 0x40, broken.length - 5);
    writeFileSync(
      path,
      Buffer.concat([
        versionRecord(),
        eventRecord({ step: 1, scalars: { 'train/reward': 0.25 } }),
        broken,
        eventRecord({ step: 3, scalars: { 'train/reward': 0.75 } }),
      ]),
    );
    const out = await ingest(path);
    expect(out?.skips).toEqual({ 'bad CRC': 1 });
    expect(series('reward')).toEqual([
      [1, 0.25],
      [3, 0.75],
    ]);
    const file = store.files.byPath(path)!;
    expect(store.files.skipsOf(file.id)).toEqual([{ reason: 'bad CRC', count: 1, sample: '' }]);
  });

  it('reads a file that grows step by step across many small reads', async () => {
    const path = eventsFile();
    writeFileSync(path, versionRecord());
    for (let step = 1; step <= 120; step++) {
      appendFileSync(path, eventRecord({ step, scalars: { 'train/loss': step, 'train/grad_norm': step / 10 } }));
      if (step % 7 === 0) await ingest(path);
    }
    await ingest(path);
    expect(series('loss').map(([s]) => s)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(series('grad_norm')[99]).toEqual([100, f32(10)]);
  });

  it('reads a truncated event file again from the start', async () => {
    const path = eventsFile();
    writeFileSync(
      path,
      trainerEvents(5, (s) => ({ 'train/reward': s })),
    );
    await ingest(path);
    writeFileSync(
      path,
      trainerEvents(2, (s) => ({ 'train/reward': 10 * s })),
    );
    await ingest(path);
    expect(series('reward')).toEqual([
      [1, 10],
      [2, 20],
      [3, 3],
      [4, 4],
      [5, 5],
    ]);
  });

  it('passes over a record larger than the cap without storing it', async () => {
    const small = new Ingestor(store, { maxLineBytes: 200, examplesPerStep: 2, chunkBytes: 64 });
    const path = eventsFile();
    const huge = eventRecord({
      step: 1,
      scalars: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`t${i}`, i])),
    });
    writeFileSync(path, Buffer.concat([versionRecord(), huge.subarray(0, 100)]));
    await small.ingest(path, join(root, 'runs'));
    expect(store.files.byPath(path)?.offset).toBe(versionRecord().length);
    appendFileSync(path, Buffer.concat([huge.subarray(100), eventRecord({ step: 2, scalars: { 'train/reward': 1 } })]));
    const out = await small.ingest(path, join(root, 'runs'));
    expect(out?.skips).toEqual({ 'record too long': 1 });
    expect(series('reward')).toEqual([[2, 1]]);
  });
});
