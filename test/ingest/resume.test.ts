/**
 * A reader that starts on a file from its committed offset, in a new process or after a backfill's thread parsed
 * what came before, goes on with the context a reader of the whole file would have: a step whose lines straddle
 * the checkpoint keeps all its values, at its own step.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

const OPTS = { maxLineBytes: 65_536, examplesPerStep: 2 };

function series(store: Store, metric: string): Array<[number, number]> {
  const run = store.runs.list()[0]!;
  return store.points.series(run.id, metric).map((p) => [p.step, p.value]);
}

/** A run folder holding `name` with `head` in it; the db beside it. */
function runWith(name: string, head: string): { root: string; file: string; db: string } {
  const top = tempDir('rlw-resume-');
  const root = join(top, 'runs');
  mkdirSync(join(root, 'job'), { recursive: true });
  const file = join(root, 'job', name);
  writeFileSync(file, head);
  return { root, file, db: join(top, 'rlwatch.db') };
}

// DeepSpeed-Chat prints a step's reward on the line after its step line
const STEP_0 =
  'epoch: 0|step: 0|ppo_ep: 1|act_loss: 0.2|cri_loss: 0.12|unsuper_loss: 0.0\naverage reward score: -0.5\n';
const STEP_1 = 'epoch: 0|step: 1|ppo_ep: 1|act_loss: 0.3|cri_loss: 0.17|unsuper_loss: 0.0\n';
const REWARD_1 = 'average reward score: 0.25\n';

// a console callback block: the step line, then its GRPO line and reward breakdown
const BLOCK_HEAD = 'Step    4 | Loss: 0.3992 | LR: 4.95e-05 | Epoch: 0.02\n';
const BLOCK_REST =
  '         GRPO | Policy: 0.2454 | Value: 0.1538 | Entropy: 0.6054\n\nReward Breakdown:\n' +
  '  accuracy       :  0.125 ± 0.331 [ 0.000,  1.000]\n  format         :  0.375 ± 0.484 [ 0.000,  1.000]\n' +
  '  total          :  0.500 (combined)\n\n';

describe('a step whose lines straddle the committed offset', () => {
  it('a new process files the reward line under the step line read by the one before (DeepSpeed-Chat)', async () => {
    const { root, file, db } = runWith('train.log', STEP_0 + STEP_1);
    const first = Store.open(db);
    await new Ingestor(first, OPTS).ingest(file, root);
    first.close();
    appendFileSync(file, REWARD_1);
    const second = Store.open(db);
    try {
      await new Ingestor(second, OPTS).ingest(file, root);
      expect(series(second, 'reward')).toEqual([
        [0, -0.5],
        [1, 0.25],
      ]);
    } finally {
      second.close();
    }
  });

  it('a new process keeps the rest of a callback block begun before it (GRPO line, reward breakdown)', async () => {
    const { root, file, db } = runWith('train.log', 'Total optimization steps = 400\n' + BLOCK_HEAD);
    const first = Store.open(db);
    await new Ingestor(first, OPTS).ingest(file, root);
    first.close();
    appendFileSync(file, BLOCK_REST);
    const second = Store.open(db);
    try {
      await new Ingestor(second, OPTS).ingest(file, root);
      expect(series(second, 'loss')).toEqual([[4, 0.3992]]);
      expect(series(second, 'entropy')).toEqual([[4, 0.6054]]);
      expect(series(second, 'rewards/accuracy')).toEqual([[4, 0.125]]);
      expect(series(second, 'rewards/format')).toEqual([[4, 0.375]]);
    } finally {
      second.close();
    }
  });

  it('a live read after a backfill parsed in its thread goes on with that context (start: catch up, then watch)', async () => {
    const { root, file, db } = runWith('train.log', STEP_0 + STEP_1);
    const store = Store.open(db);
    try {
      const ingestor = new Ingestor(store, OPTS);
      await backfill(ingestor, [root], { depth: 4 });
      appendFileSync(file, REWARD_1);
      await ingestor.ingest(file, root);
      expect(series(store, 'reward')).toEqual([
        [0, -0.5],
        [1, 0.25],
      ]);
    } finally {
      store.close();
    }
  });

  it('a line ended by a lone \\r just before the offset is read again once, as a line', async () => {
    // tqdm's `\r`: the step line's own terminator is the last byte before the checkpoint
    const { root, file, db } = runWith('train.log', STEP_0 + STEP_1.replace('\n', '\r') + 'x');
    const first = Store.open(db);
    await new Ingestor(first, OPTS).ingest(file, root);
    first.close();
    appendFileSync(file, `\n${REWARD_1}`);
    const second = Store.open(db);
    try {
      await new Ingestor(second, OPTS).ingest(file, root);
      expect(series(second, 'reward')).toEqual([
        [0, -0.5],
        [1, 0.25],
      ]);
    } finally {
      second.close();
    }
  });
});
