import { spawnSync } from 'node:child_process';
import { closeSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { learningLog } from '../../../src/ingest/formats/learningLog.ts';
import { fileParser, parsedChunks, type ParsedChunk } from '../../../src/ingest/tail/lineChunks.ts';
import { tempDir } from '../../helpers.ts';

const LINES = [
  '[Epoch 0.10]  loss=0.5  grad=1.5  reward=0.2±0.1',
  '[Epoch 0.20]  loss=0.4  grad=1.25  reward=0.3±0.05',
  '[Epoch 0.30]  loss=0.3  grad=1  grad_norm=9  reward=0.4',
  'garbage',
  '[Epoch 0.40]  loss=nan  grad=1  reward=0.5±0.1',
  '[Epoch 0.50]  kl=0.01  lr=2e-06  learning_rate=3e-06',
];

function chunksOf(lines: readonly string[], chunkBytes?: number): ParsedChunk[] {
  const path = join(tempDir(), 'learning.log');
  writeFileSync(path, `${lines.join('\n')}\n`);
  const fd = openSync(path, 'r');
  try {
    const range = { fd, start: 0, size: statSync(path).size, maxLineBytes: 4096, chunkBytes, seq: 0 };
    return [...parsedChunks(range, fileParser('learningLog', 'learning.log'))];
  } finally {
    closeSync(fd);
  }
}

/** The records of chunks as {step, values} with the names of their shapes. */
function records(chunks: ParsedChunk[]): Array<{ step: number; values: Record<string, number> }> {
  return chunks.flatMap((c) => {
    let at = 0;
    return [...c.steps].map((step, r) => {
      const names = c.shapes[c.shapeOf[r]!]!;
      return { step, values: Object.fromEntries(names.map((name) => [name, c.values[at++]!])) };
    });
  });
}

describe('parsed chunks of a learning.log (metric lines as columns, without a Map per line)', () => {
  it('stores each line shape once and every value in its order, the canonical name beating an alias', () => {
    const [chunk, ...rest] = chunksOf(LINES);
    expect(rest).toEqual([]);
    expect(chunk!.shapes).toEqual([
      ['epoch', 'loss', 'grad_norm', 'reward', 'reward_std'],
      ['epoch', 'loss', 'grad_norm', 'reward'],
      ['epoch', 'kl', 'lr'],
    ]);
    expect([...chunk!.steps]).toEqual([1, 2, 3, 4, 5]);
    expect([...chunk!.shapeOf]).toEqual([0, 0, 1, 0, 2]);
    expect([...chunk!.values]).toEqual([
      0.1,
      0.5,
      1.5,
      0.2,
      0.1,
      0.2,
      0.4,
      1.25,
      0.3,
      0.05,
      0.3,
      0.3,
      9,
      0.4,
      0.4,
      NaN,
      1,
      0.5,
      0.1,
      0.5,
      0.01,
      2e-6,
    ]);
    expect(chunk!.skips).toEqual([['unrecognised line', { count: 1, sample: 'garbage' }]]);
    expect(chunk!.seq).toBe(5);
  });

  it('gives the records the line parser gives, line by line, however the file is cut into chunks', () => {
    const lines = Array.from({ length: 60 }, (_, i) => LINES[i % LINES.length]!.replace('0.', `${i}.`));
    const parse = learningLog.open({ relPath: 'learning.log' });
    const expected = lines.flatMap((line) => {
      const r = parse(line);
      return r.kind === 'metric' ? [Object.fromEntries(r.record.values)] : [];
    });
    for (const chunkBytes of [64, 200, 1 << 16]) {
      const chunks = chunksOf(lines, chunkBytes);
      expect(
        records(chunks).map((r) => r.values),
        `chunks of ${chunkBytes} bytes`,
      ).toEqual(expected);
      expect(records(chunks).map((r) => r.step)).toEqual(expected.map((_, i) => i + 1));
    }
  });
});

describe('what the parser keeps between chunks', () => {
  it('keeps no chunk of the file alive through a key it remembers (V8 keeps a slice as a view of the whole)', () => {
    // a new 30-character key in each of 300 chunks of ~16 KB: kept as slices, they would hold ~5 MB of text
    const path = join(tempDir(), 'learning.log');
    const lines = Array.from(
      { length: 300 * 120 },
      (_, i) =>
        `[Epoch 0.1]  loss=0.5  a_rather_long_metric_name_${Math.floor(i / 120)}=1  reward=0.2  ${'pad '.repeat(20)}`,
    );
    writeFileSync(path, `${lines.join('\n')}\n`);
    const lineChunks = resolve(import.meta.dirname, '../../../src/ingest/tail/lineChunks.ts');
    const script = `
      const { closeSync, openSync, statSync } = await import('node:fs');
      const { fileParser, parsedChunks } = await import(${JSON.stringify(lineChunks)});
      const parser = fileParser('learningLog', 'learning.log');
      const heap = () => { gc(); return process.memoryUsage().heapUsed; };
      const before = heap();
      const fd = openSync(${JSON.stringify(path)}, 'r');
      const size = statSync(${JSON.stringify(path)}).size;
      const range = { fd, start: 0, size, maxLineBytes: 4096, chunkBytes: 16384, seq: 0 };
      let chunks = 0;
      for (const c of parsedChunks(range, parser)) chunks++;
      closeSync(fd);
      console.log(JSON.stringify({ chunks, grown: heap() - before }));`;
    const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    const { chunks, grown } = JSON.parse(child.stdout) as { chunks: number; grown: number };
    expect(chunks).toBeGreaterThanOrEqual(300);
    expect(grown).toBeLessThan(1_500_000);
  });
});
