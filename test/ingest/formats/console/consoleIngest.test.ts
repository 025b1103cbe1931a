/** Captured stdout through the real Ingestor: claimed by name, whatever comes before the first step. */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Ingestor } from '../../../../src/ingest/ingestor.ts';
import type { Store } from '../../../../src/store/sqlite/store.ts';
import { pipeline } from '../../../fixtures/pipeline.ts';
import { ensureParent } from '../../../helpers.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

beforeEach(() => {
  ({ dir: root, store, ingestor } = pipeline({ ingest: { maxLineBytes: 1024 * 1024, examplesPerStep: 2 } }));
  return () => store.close();
});

const runs = 'runs';
const file = (name: string) => ensureParent(join(root, runs, 'job', name));
const ingest = (path: string) => ingestor.ingest(path, join(root, runs));
const losses = () => {
  const run = store.runs.byName('job');
  return run ? store.points.series(run.id, 'loss').map((p) => [p.step, p.value]) : [];
};

/** A rich completion table of about `bytes` bytes, as TRL prints before its first metric dict. */
function tablePreamble(bytes: number): string {
  const rows: string[] = ['╭──────────── Step 1 ────────────╮', '│ ┃ Prompt ┃ Completion ┃ reward ┃ Advantage ┃ │'];
  while (rows.join('\n').length < bytes)
    rows.push('│ │ What is 2+2? Think step by step. │ It is four, as 2+2=4. │ 1.00 │ 0.50 │ │');
  rows.push('│ └──────┴──────┴──────┴──────┘ │', '╰────────────────────────────────╯');
  return `${rows.join('\n')}\n`;
}

describe('captured stdout through the Ingestor', () => {
  it('reads a first metric dict that comes after a 100 KB preamble', async () => {
    const path = file('run_1.log');
    writeFileSync(
      path,
      `${tablePreamble(100_000)} 10%|█         | 5/50 [01:07<09:21, 12.48s/it]{'loss': '0.25', 'reward': '0.5'}\n`,
    );
    expect(await ingest(path)).toMatchObject({ run: 'job', format: 'console', skips: {} });
    expect(losses()).toEqual([[5, 0.25]]);
  });

  it('registers a job that crashed before its first step, and reads its steps once they come', async () => {
    const path = file('slurm-4242.out');
    writeFileSync(
      path,
      'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nRuntimeError: boom\n',
    );
    expect(await ingest(path)).toMatchObject({ run: 'job', format: 'console', records: 0 });
    expect(store.runs.byName('job')).toBeDefined();
    appendFileSync(path, 'epoch: 0|step: 1|act_loss: 0.5|cri_loss: 0.25\n');
    await ingest(path);
    expect(losses()).toEqual([[1, 0.5]]);
  });

  it('leaves a .txt without a metric line in its first 64 KiB alone', async () => {
    const path = file('notes.txt');
    writeFileSync(path, 'remember to lower the learning rate next time\n'.repeat(2000));
    expect(await ingest(path)).toBeNull();
    expect(store.runs.byName('job')).toBeUndefined();
  });
});
