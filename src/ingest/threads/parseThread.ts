/**
 * Parsing off the thread that writes to SQLite (a backfill): a worker reads and parses the next chunks of a file
 * while this thread commits the last one and runs the rules on it. One file at a time, as the Ingestor reads them.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../../lib/workerThread.ts';
import { CHUNKS_AHEAD, type LineRange, type ParsedChunk } from '../tail/lineChunks.ts';
import type { FromWorker, ToWorker } from './parseWorker.ts';

export interface ReadRequest {
  fileId: number;
  format: string;
  relPath: string;
  /** the file starts over (truncated or rotated): a parser's memory of its old content must not carry over */
  fresh: boolean;
  range: LineRange;
}

export class ParseThread {
  private readonly worker: Worker;
  private nextId = 1;
  /** what the worker sent for the read under way, not yet taken */
  private readonly inbox: FromWorker[] = [];
  private wake: (() => void) | null = null;
  private failed: Error | null = null;

  constructor() {
    this.worker = spawn();
    this.worker.on('message', (m: FromWorker) => this.deliver(m));
    this.worker.on('error', (err) => {
      this.failed = err;
      this.deliver(null);
    });
    this.worker.unref(); // an idle parser never keeps the process alive; a read under way does
  }

  /** The parsed chunks of the request, in file order. Breaking off (or a throw in the loop body) stops the
   * worker, and waits until it no longer reads the file descriptor, before the caller closes it. */
  async *chunks(req: ReadRequest): AsyncGenerator<ParsedChunk> {
    const id = this.nextId++;
    let finished = false;
    let taken = 0;
    this.inbox.length = 0;
    this.send({ kind: 'read', id, ...req });
    this.worker.ref();
    try {
      for (;;) {
        const m = await this.take(id);
        if (m.kind === 'chunk') {
          if (++taken % CHUNKS_AHEAD === 0) this.send({ kind: 'more', id, chunks: CHUNKS_AHEAD });
          yield m.chunk;
        } else {
          finished = true;
          if (m.kind === 'error') throw new Error(m.message);
          return;
        }
      }
    } finally {
      if (!finished && !this.failed) {
        this.send({ kind: 'stop', id });
        for (let m = await this.take(id); m.kind === 'chunk'; m = await this.take(id));
      }
      this.worker.unref();
    }
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }

  private send(m: ToWorker): void {
    this.worker.postMessage(m);
  }

  private deliver(m: FromWorker | null): void {
    if (m) this.inbox.push(m);
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** The next message of read `id` (older reads' leftovers are dropped). */
  private async take(id: number): Promise<FromWorker> {
    for (;;) {
      if (this.failed) throw this.failed;
      const m = this.inbox.shift();
      if (m) {
        if (m.id === id) return m;
        continue;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/** measured on a 300k-line backfill: 8 MB instead of V8's default (48) takes ~30 MB off the peak RSS, same speed */
const YOUNG_MB = 8;

/** The parse worker (parseWorker.ts). A parser's garbage is short-lived: a small young generation keeps the process'
 * RSS down at little cost. */
const spawn = (): Worker =>
  spawnWorker(import.meta.url, 'parseWorker', { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB } });
