import { closeSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileParser, parsedChunks, type LineRange, type ParsedChunk } from '../../../src/ingest/tail/lineChunks.ts';
import { ParseThread } from '../../../src/ingest/threads/parseThread.ts';
import { learningLine, tempDir } from '../../helpers.ts';

/** A learning.log of `n` records with a malformed line every 50 and an overlong one at 120. */
function logFile(n: number): string {
  const path = join(tempDir(), 'learning.log');
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    lines.push(learningLine(i));
    if (i % 50 === 0) lines.push(`garbage ${i}`);
    if (i === 120) lines.push('z'.repeat(5000));
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

function rangeOf(fd: number, path: string, start = 0): LineRange {
  return { fd, start, size: statSync(path).size, maxLineBytes: 4096, chunkBytes: 8192, seq: 0 };
}

async function all(chunks: AsyncIterable<ParsedChunk>): Promise<ParsedChunk[]> {
  const out: ParsedChunk[] = [];
  for await (const c of chunks) out.push(c);
  return out;
}

describe('parsing in a worker thread', () => {
  let thread: ParseThread;
  beforeAll(() => {
    thread = new ParseThread();
  });
  afterAll(async () => {
    await thread.close();
  });

  it('gives the chunks parsing in-thread gives, steps, shapes, values and skips alike', async () => {
    const path = logFile(400);
    const fd = openSync(path, 'r');
    try {
      const here = [...parsedChunks(rangeOf(fd, path), fileParser('learningLog', 'learning.log'))];
      const req = { fileId: 1, format: 'learningLog', relPath: 'learning.log', fresh: true, range: rangeOf(fd, path) };
      const there = await all(thread.chunks(req));
      expect(here.length).toBeGreaterThan(5);
      expect(there).toEqual(here);
      // independently of either: every record, numbered from 1; the malformed and the overlong lines counted
      expect(there.flatMap((c) => [...c.steps])).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
      const skips = there
        .flatMap((c) => c.skips)
        .reduce<Record<string, number>>((m, [reason, s]) => {
          m[reason] = (m[reason] ?? 0) + s.count;
          return m;
        }, {});
      expect(skips).toEqual({ 'unrecognised line': 8, 'line too long': 1 });
      expect(there.at(-1)!.end).toBe(statSync(path).size);
    } finally {
      closeSync(fd);
    }
  });

  it('stops reading when the writer breaks off, and reads the next file after', async () => {
    const path = logFile(400);
    const fd = openSync(path, 'r');
    const req = { fileId: 2, format: 'learningLog', relPath: 'learning.log', fresh: true, range: rangeOf(fd, path) };
    let taken = 0;
    for await (const c of thread.chunks(req)) {
      expect(c.steps.length).toBeGreaterThan(0);
      if (++taken === 2) break; // the generator's return waits until the worker has let go of the descriptor
    }
    closeSync(fd);
    const other = logFile(30);
    const fd2 = openSync(other, 'r');
    try {
      const req2 = { ...req, fileId: 3, range: rangeOf(fd2, other) };
      const chunks = await all(thread.chunks(req2));
      expect(chunks.flatMap((c) => [...c.steps])).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    } finally {
      closeSync(fd2);
    }
  });

  it('says why it cannot parse a file, and parses on after', async () => {
    const path = logFile(10);
    const fd = openSync(path, 'r');
    try {
      const req = { fileId: 4, format: 'no-such-format', relPath: 'x.log', fresh: true, range: rangeOf(fd, path) };
      await expect(all(thread.chunks(req))).rejects.toThrow('no line format no-such-format');
      const ok = await all(thread.chunks({ ...req, format: 'learningLog' }));
      expect(ok.flatMap((c) => [...c.steps])).toHaveLength(10);
    } finally {
      closeSync(fd);
    }
  });
});
