import { resolve, sep } from 'node:path';
import { readElsewhere } from './discover.ts';
import type { Ingestor } from './ingestor.ts';
import { PollWatch } from './pollWatch.ts';
import { TreeWatch } from './treeWatch.ts';
import { isBusy } from '../store/dbErrors.ts';
import { BUSY_RETRY_MS } from '../store/store.ts';

/** A safety net for events lost anyway (inotify queue overflow, editors' tricks): re-check every file seen, and
 * list every folder again. */
const SWEEP_MS = 30_000;

export interface WatchOptions {
  poll: boolean;
  pollIntervalMs: number;
  depth: number;
  ignore: readonly string[];
}

/**
 * Watches the roots (file-system events, or chokidar's polling with `poll`) and feeds changed files to the
 * ingestor one at a time (SQLite has one writer, and a file must never be read twice at once). A change during a
 * read queues one more read.
 */
export class LiveIngest {
  private source: TreeWatch | PollWatch | null = null;
  private readonly roots: string[];
  private readonly queue = new Set<string>();
  private draining: Promise<void> | null = null;
  private readonly seen = new Set<string>();
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    private readonly ingestor: Ingestor,
    roots: readonly string[],
    private readonly opts: WatchOptions,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    // longest first, so that a nested root claims its own files
    this.roots = roots.map((r) => resolve(r)).sort((a, b) => b.length - a.length);
  }

  /** Resolves once the files present at start-up have been read. */
  async start(): Promise<void> {
    const onFile = (path: string): void => {
      this.seen.add(path);
      this.enqueue(path);
    };
    const { depth, ignore } = this.opts;
    if (this.opts.poll) {
      const source = new PollWatch(this.roots, { depth, ignore, intervalMs: this.opts.pollIntervalMs }, onFile, this.onError);
      this.source = source;
      await source.start();
    } else {
      const source = new TreeWatch(this.roots, { depth, ignore }, onFile, this.onError);
      this.source = source;
      source.start();
    }
    this.sweep = setInterval(() => {
      if (this.source instanceof TreeWatch) this.source.rescan();
      this.seen.forEach((p) => this.enqueue(p));
    }, SWEEP_MS);
    this.sweep.unref();
    await this.idle();
  }

  /** Resolves when every queued file has been read. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  async stop(): Promise<void> {
    await this.source?.close();
    this.source = null;
    if (this.sweep) clearInterval(this.sweep);
    this.queue.clear();
    await this.idle();
  }

  private enqueue(path: string): void {
    this.queue.add(path);
    this.kick();
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      // a path queued after the loop's last look, before this callback, must not be stranded
      if (this.queue.size > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    for (let path = first(this.queue); path !== undefined; path = first(this.queue)) {
      this.queue.delete(path);
      const root = this.roots.find((r) => path === r || path.startsWith(r + sep));
      if (!root || readElsewhere(path, this.roots)) continue;
      try {
        await this.ingestor.ingest(path, root);
      } catch (err) {
        this.onError(err as Error);
        // its lines were not committed: read it again soon, not only when it next grows
        if (isBusy(err)) setTimeout(() => this.enqueue(path), BUSY_RETRY_MS).unref();
      }
    }
  }
}

function first(set: Set<string>): string | undefined {
  for (const v of set) return v;
  return undefined;
}
