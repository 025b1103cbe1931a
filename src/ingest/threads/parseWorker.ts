/**
 * The worker thread of a ParseThread (parseThread.ts): reads and parses the lines of the file it is asked for
 * while the main thread writes what it parsed before. It parses ahead only as far as the main thread lets it
 * (`credit` chunks), so a fast parser never piles a whole file up in memory. File descriptors belong to the
 * process: the worker reads the main thread's own, which stays open until the worker has said it stopped.
 */
import { parentPort } from 'node:worker_threads';
import {
  CHUNKS_AHEAD,
  parsedChunks,
  resumedParser,
  type FileParser,
  type LineRange,
  type ParsedChunk,
} from '../tail/lineChunks.ts';

export type ToWorker =
  | { kind: 'read'; id: number; fileId: number; format: string; relPath: string; fresh: boolean; range: LineRange }
  | { kind: 'more'; id: number; chunks: number }
  | { kind: 'stop'; id: number };

export type FromWorker =
  | { id: number; kind: 'chunk'; chunk: ParsedChunk }
  | { id: number; kind: 'done' }
  | { id: number; kind: 'error'; message: string };

const port = parentPort;
if (!port) throw new Error('parseWorker runs as a worker thread');

/** per file, its parser: it may keep state from one read of the file to the next */
const parsers = new Map<number, FileParser>();
let reading: { id: number; chunks: Generator<ParsedChunk>; credit: number } | null = null;

port.on('message', (m: ToWorker) => {
  if (m.kind === 'read') {
    let parser: FileParser;
    try {
      const kept = m.fresh ? undefined : parsers.get(m.fileId);
      parser = kept?.at === m.range.start ? kept : resumedParser(m.format, m.relPath, m.range);
      parsers.set(m.fileId, parser);
    } catch (err) {
      post({ id: m.id, kind: 'error', message: (err as Error).message });
      return;
    }
    reading = { id: m.id, chunks: parsedChunks(m.range, parser), credit: CHUNKS_AHEAD };
  } else if (reading?.id === m.id) {
    if (m.kind === 'more') reading.credit += m.chunks;
    else {
      reading = null;
      post({ id: m.id, kind: 'done' }); // the main thread may close the file now
      return;
    }
  } else return;
  pump();
});

function pump(): void {
  while (reading && reading.credit > 0) {
    const r = reading;
    let next: IteratorResult<ParsedChunk>;
    try {
      next = r.chunks.next();
    } catch (err) {
      reading = null;
      post({ id: r.id, kind: 'error', message: (err as Error).message });
      return;
    }
    if (next.done) {
      reading = null;
      post({ id: r.id, kind: 'done' });
      return;
    }
    r.credit--;
    const c = next.value;
    post({ id: r.id, kind: 'chunk', chunk: c }, [c.steps.buffer, c.shapeOf.buffer, c.values.buffer]);
  }
}

function post(m: FromWorker, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(m, transfer);
}
