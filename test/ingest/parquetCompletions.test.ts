import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Ingestor } from '../../src/ingest/ingestor.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent } from '../helpers.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

beforeEach(() => {
  ({ dir: root, store, ingestor } = pipeline({ ingest: { maxLineBytes: 64 * 1024, examplesPerStep: 1 } }));
  return () => store.close();
});

interface Row {
  prompt: string;
  completion: string;
  accuracy_reward: number;
  format_reward: number;
  advantage: number;
}

/** The table TRL's log_completions writes per logging step (its `step` column holds strings). */
function completionsTable(step: number, rows: Row[], extra: Array<{ name: string; data: number[] }> = []): Buffer {
  const col = <K extends keyof Row>(k: K) => rows.map((r) => r[k]);
  return Buffer.from(
    parquetWriteBuffer({
      columnData: [
        { name: 'step', data: rows.map(() => String(step)), type: 'STRING' },
        { name: 'prompt', data: col('prompt'), type: 'STRING' },
        { name: 'completion', data: col('completion'), type: 'STRING' },
        { name: 'accuracy_reward', data: col('accuracy_reward'), type: 'DOUBLE' },
        { name: 'format_reward', data: col('format_reward'), type: 'DOUBLE' },
        { name: 'advantage', data: col('advantage'), type: 'DOUBLE' },
        ...extra.map((c) => ({ ...c, type: 'DOUBLE' as const })),
      ],
    }),
  );
}

const ROWS: Row[] = [
  { prompt: 'What is 2+2?', completion: '<think>2+2</think> 4', accuracy_reward: 1, format_reward: 1, advantage: 1.2 },
  { prompt: 'What is 2+2?', completion: 'five', accuracy_reward: 0, format_reward: 0, advantage: -1.1 },
  { prompt: 'What is 3*3?', completion: '<think>3*3</think> 6', accuracy_reward: 0, format_reward: 1, advantage: 0.1 },
];

const table = (step: number): string =>
  ensureParent(join(root, 'runs', 'grpo', 'completions', `completions_${String(step).padStart(5, '0')}.parquet`));
const ingest = (path: string) => ingestor.ingest(path, join(root, 'runs'));
const kept = (step: number) => {
  const run = store.runs.byName('grpo')!;
  return store.examples
    .atOrBefore(run.id, step)
    .filter((e) => e.step === step)
    .map((e) => ({ completion: e.completion, reward: e.reward, breakdown: e.breakdown }));
};

describe("TRL's completions parquet", () => {
  it('keeps the best and worst generation of the step, reward summed over the reward functions', async () => {
    const path = table(40);
    writeFileSync(path, completionsTable(40, ROWS));
    const out = await ingest(path);
    expect(out).toMatchObject({ run: 'grpo', format: 'parquetCompletions', lines: 3, skips: {} });
    expect(kept(40)).toEqual(
      expect.arrayContaining([
        { completion: '<think>2+2</think> 4', reward: 2, breakdown: { accuracy_reward: 1, format_reward: 1 } },
        { completion: 'five', reward: 0, breakdown: { accuracy_reward: 0, format_reward: 0 } },
      ]),
    );
    expect(kept(40)).toHaveLength(2);
  });

  it('takes a total reward column when the table has one', async () => {
    const path = table(7);
    writeFileSync(path, completionsTable(7, ROWS, [{ name: 'reward', data: [0.9, 0.1, 0.5] }]));
    await ingest(path);
    expect(
      kept(7)
        .map((e) => e.reward)
        .sort(),
    ).toEqual([0.1, 0.9]);
  });

  it('waits for a file caught mid-write and reads it once complete', async () => {
    const path = table(12);
    const whole = completionsTable(12, ROWS);
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length / 2)));
    const first = await ingest(path);
    expect(first?.skips).toEqual({ 'parquet file incomplete': 1 });
    expect(kept(12)).toEqual([]);
    writeFileSync(path, whole);
    await ingest(path);
    expect(kept(12)).toHaveLength(2);
    // the complete file stands: the earlier, mid-write read no longer counts as a skipped line
    expect(store.files.byPath(path)?.skipped).toBe(0);
    expect((await ingest(path))?.lines).toBe(0); // unchanged: not read again
  });
});
