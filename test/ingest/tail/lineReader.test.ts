import { closeSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLines, type LineChunk } from '../../../src/ingest/tail/lineReader.ts';

function readAll(content: string | Buffer, opts: { start?: number; max?: number; chunk?: number } = {}): LineChunk[] {
  const path = join(mkdtempSync(join(tmpdir(), 'rlw-lines-')), 'f.log');
  writeFileSync(path, content);
  const fd = openSync(path, 'r');
  try {
    const size = Buffer.byteLength(content);
    return [...readLines(fd, opts.start ?? 0, size, opts.max ?? 1000, opts.chunk ?? 16)];
  } finally {
    closeSync(fd);
  }
}

const lines = (chunks: LineChunk[]): string[] => chunks.flatMap((c) => c.lines);
const end = (chunks: LineChunk[]): number => chunks[chunks.length - 1]?.end ?? 0;

describe('readLines', () => {
  it('splits on \\n, \\r\\n and tqdm \\r, across chunk boundaries', () => {
    const text = 'alpha\nbeta\r\ngamma\r 10%|#   |\r 20%|##  |\nomega\n';
    const chunks = readAll(text, { chunk: 7 });
    expect(lines(chunks)).toEqual(['alpha', 'beta', 'gamma', ' 10%|#   |', ' 20%|##  |', 'omega']);
    expect(end(chunks)).toBe(Buffer.byteLength(text));
  });

  it('leaves a last line without its newline for later', () => {
    const chunks = readAll('one\ntwo\nthr', { chunk: 4 });
    expect(lines(chunks)).toEqual(['one', 'two']);
    expect(end(chunks)).toBe(8);
  });

  it('does not end a line on a final \\r, which may be half of \\r\\n', () => {
    const chunks = readAll('one\r\ntwo\r');
    expect(lines(chunks)).toEqual(['one']);
    expect(end(chunks)).toBe(5);
  });

  it('resumes from an offset', () => {
    expect(lines(readAll('one\ntwo\nthree\n', { start: 4 }))).toEqual(['two', 'three']);
  });

  it('keeps multi-byte characters whole when a chunk boundary cuts through them', () => {
    const text = 'reward=0.102±0.077  ±±±\nnext\n';
    for (let chunk = 1; chunk < 12; chunk++) {
      expect(lines(readAll(text, { chunk }))).toEqual(['reward=0.102±0.077  ±±±', 'next']);
    }
  });

  it('skips an over-long line without holding it, counts it, and reads on', () => {
    const long = 'x'.repeat(5000);
    const chunks = readAll(`a\n${long}\nb\n`, { max: 100, chunk: 64 });
    expect(lines(chunks)).toEqual(['a', 'b']);
    expect(chunks.reduce((n, c) => n + c.tooLong, 0)).toBe(1);
    expect(end(chunks)).toBe(2 + long.length + 1 + 2);
  });

  it('keeps the offset at the start of an over-long line that is not finished yet', () => {
    const chunks = readAll(`a\n${'y'.repeat(500)}`, { max: 100, chunk: 64 });
    expect(lines(chunks)).toEqual(['a']);
    expect(end(chunks)).toBe(2);
  });

  it('drops an over-long line that arrived whole inside one chunk', () => {
    const chunks = readAll(`a\n${'z'.repeat(300)}\nb\n`, { max: 100, chunk: 4096 });
    expect(lines(chunks)).toEqual(['a', 'b']);
    expect(chunks[0]?.tooLong).toBe(1);
  });
});
