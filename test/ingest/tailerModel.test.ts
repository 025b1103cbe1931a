import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { ensureParent, tempDir } from '../helpers.ts';

/**
 * Model-based test of the tailer, in the spirit of Vector's file-source model tests: random interleavings of
 * appends, partial writes, truncation, rename-rotation and restarts (the ingestor and its database connection
 * re-created), checked against the simplest model of what must be stored: every complete line, once, in the
 * order written. What the model does not ask for: a file rotated twice between two reads (rotation.test.ts pins
 * it: the file in between is told by its mtime, after a clock tick of the file system), or re-filled past its old
 * size after a truncation before a read (lost in any tailer that follows a path); so a rotation waits for a read,
 * and a truncation is read at once.
 */
type Op = 'append' | 'partial' | 'ingest' | 'truncate' | 'rotate' | 'restart';
const WEIGHTS: Array<[Op, number]> = [
  ['append', 30],
  ['partial', 15],
  ['ingest', 25],
  ['truncate', 4],
  ['rotate', 8],
  ['restart', 6],
];

function pick(rand: () => number): Op {
  let r = rand() * WEIGHTS.reduce((n, [, w]) => n + w, 0);
  for (const [op, w] of WEIGHTS) if ((r -= w) < 0) return op;
  return 'append';
}

async function play(seed: number, steps: number): Promise<{ stored: number[]; expected: number[]; ops: string[] }> {
  const rand = mulberry32(seed);
  const dir = tempDir();
  const runs = join(dir, 'runs');
  const path = ensureParent(join(runs, 'run1', 'learning.log'));
  const dbPath = join(dir, 'test.db');
  const opts = { maxLineBytes: 64 * 1024, examplesPerStep: 2, chunkBytes: 64 + Math.floor(rand() * 512) };
  let store = Store.open(dbPath);
  let ingestor = new Ingestor(store, opts);
  const expected: number[] = [];
  const ops: string[] = [];
  let next = 1;
  let partial: { id: number; rest: string } | null = null; // a line written up to part of it
  let rotatedSinceRead = false;
  let rotations = 0;
  const line = (id: number): string => `[Epoch 0.1]  loss=${id}  entropy=0.5${rand() < 0.2 ? '\r\n' : '\n'}`;
  const ingest = async (): Promise<void> => {
    await ingestor.ingest(path, runs);
    rotatedSinceRead = false;
  };

  // a file is followed once it has been read (recognised as a log): only then can a rotation be followed
  writeFileSync(path, line(next));
  expected.push(next++);
  await ingest();
  for (let i = 0; i < steps; i++) {
    let op = pick(rand);
    if (op === 'rotate' && (rotatedSinceRead || partial)) op = 'ingest';
    ops.push(op);
    if (op === 'append') {
      let text = '';
      if (partial) {
        text += partial.rest;
        expected.push(partial.id);
        partial = null;
      }
      for (let n = Math.floor(rand() * 20); n > 0; n--) {
        text += line(next);
        expected.push(next++);
      }
      appendFileSync(path, text);
    } else if (op === 'partial') {
      if (partial) {
        // more of the same line, still without its end
        const cut = Math.floor(rand() * (partial.rest.length - 1));
        appendFileSync(path, partial.rest.slice(0, cut));
        partial.rest = partial.rest.slice(cut);
      } else {
        const text = line(next);
        const cut = 1 + Math.floor(rand() * (text.length - 2));
        appendFileSync(path, text.slice(0, cut));
        partial = { id: next++, rest: text.slice(cut) };
      }
    } else if (op === 'ingest') {
      await ingest();
    } else if (op === 'truncate') {
      await ingest();
      truncateSync(path, 0);
      partial = null; // the half line went with the content
      await ingest();
    } else if (op === 'rotate') {
      renameSync(path, `${path}.${++rotations}`);
      writeFileSync(path, '');
      rotatedSinceRead = true;
    } else {
      store.close();
      store = Store.open(dbPath);
      ingestor = new Ingestor(store, opts);
    }
  }
  if (partial) {
    appendFileSync(path, partial.rest);
    expected.push(partial.id);
  }
  await ingest();
  await ingest();
  const run = store.runs.byName('run1');
  const stored = run ? store.points.series(run.id, 'loss').map((p) => p.value) : [];
  store.close();
  return { stored, expected, ops };
}

describe('the tailer against its model', () => {
  it('stores every complete line once, in order, whatever the interleaving', async () => {
    for (let seed = 1; seed <= 50; seed++) {
      const { stored, expected, ops } = await play(seed, 120);
      expect(stored, `seed ${seed}: ${ops.join(' ')}`).toEqual(expected);
    }
  });
});

/** A tailer process that prints `ready` once its store is open. */
async function tailer(args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'tailChild.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((done) => child.stdout!.once('data', () => done()));
  return child;
}

describe('the tailer in a process killed with SIGKILL at random moments', () => {
  it('stores every complete line once, in order', async () => {
    const rand = mulberry32(7);
    const dir = tempDir();
    const runs = join(dir, 'runs');
    const path = ensureParent(join(runs, 'run1', 'learning.log'));
    const dbPath = join(dir, 'test.db');
    const line = (id: number): string => `[Epoch 0.1]  loss=${id}  entropy=0.5\n`;
    writeFileSync(path, '');
    let next = 1;
    for (let life = 0; life < 3; life++) {
      const child = await tailer([path, runs, dbPath, '200']); // small chunks: many commits to be killed in
      const until = Date.now() + 300 + rand() * 700;
      while (Date.now() < until) {
        let text = '';
        for (let n = 1 + Math.floor(rand() * 40); n > 0; n--) text += line(next++);
        const cut = Math.floor(rand() * text.length); // the last line often arrives in two writes
        appendFileSync(path, text.slice(0, cut));
        await sleep(rand() * 5);
        appendFileSync(path, text.slice(cut));
        await sleep(rand() * 10);
      }
      child.kill('SIGKILL');
      await new Promise((done) => child.once('exit', done));
    }
    const store = Store.open(dbPath);
    const read = (): number[] => {
      const run = store.runs.byName('run1');
      return run ? store.points.series(run.id, 'loss').map((p) => p.value) : [];
    };
    expect(read().length).toBeGreaterThan(0); // the killed processes did the reading
    await new Ingestor(store, { maxLineBytes: 64 * 1024, examplesPerStep: 2 }).ingest(path, runs);
    const stored = read();
    store.close();
    expect(stored).toEqual(Array.from({ length: next - 1 }, (_, k) => k + 1));
  }, 60_000);
});
