/**
 * Feeds changed files to the ingestor as they grow: from TreeWatch or PollWatch, one read of a file at a time,
 * several files per transaction.
 */
import { resolve, sep } from 'node:path';
import type { Ingestor } from '../ingestor.ts';
import { PollWatch } from './pollWatch.ts';
import { TreeWatch } from './treeWatch.ts';
import { isBusy, isUnreachable } from '../../store/dbErrors.ts';
import type { LiveStore } from '../../store/live.ts';
import { BUSY_RETRY_MS } from '../../store/sqlite/store.ts';

/** A safety net for events lost anyway (inotify queue overflow, editors' tricks): re-check every file seen, and
 * list every folder again. */
const SWEEP_MS = 30_000;
/** How long a change waits for others to be read with it: at 100 runs x 5 lines/s, ~5 files per transaction
 * instead of 1 (measured in process: 23% less CPU per line) for at most this much more latency. */
const GATHER_MS = 10;
/** How soon files are read again whose read found PostgreSQL out of reach. */
export const UNREACHABLE_RETRY_MS = 3000;
/** Files read in one transaction at most: each may hold a chunk of its file in memory while the others read on. */
const GROUP_FILES = 16;

export interface WatchOptions {
  poll: boolean;
  pollIntervalMs: number;
  depth: number;
  ignore: readonly string[];
}

/**
 * Watches the roots (file-system events, or chokidar's polling with `poll`) and feeds changed files to the
 * ingestor (SQLite has one writer, and a file must never be read twice at once). A change during a read queues one
 * more read. Given the ingestor's store, the files found queued together are read in one transaction
 * (`Store.group`): one commit for many runs' appends.
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
    /** the ingestor's store, to group commits in; without it each file commits alone */
    private readonly store?: LiveStore,
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
    // a link out of the roots goes to the ingestor once (not with every sweep): it refuses it, listed as not read
    const onOutside = (path: string): void => this.enqueue(path);
    const { depth, ignore } = this.opts;
    if (this.opts.poll) {
      const intervalMs = this.opts.pollIntervalMs;
      const source = new PollWatch(this.roots, { depth, ignore, intervalMs }, onFile, this.onError, onOutside);
      this.source = source;
      await source.start();
    } else {
      const source = new TreeWatch(this.roots, { depth, ignore }, onFile, this.onError, onOutside);
      this.source = source;
      source.start();
    }
    this.sweep = setInterval(() => {
      this.source?.rescan();
      for (const p of this.seen) this.enqueue(p);
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
    // the files that change within GATHER_MS of this one are read with it, in one transaction
    this.draining = new Promise<void>((next) => setTimeout(next, this.store ? GATHER_MS : 0))
      .then(() => this.drain())
      .finally(() => {
        this.draining = null;
        // a path queued after the loop's last look, before this callback, must not be stranded
        if (this.queue.size > 0) this.kick();
      });
  }

  private async drain(): Promise<void> {
    while (this.queue.size > 0) {
      const paths = take(this.queue, this.store ? GROUP_FILES : 1);
      if (paths.length === 1 || !this.store) {
        for (const path of paths) await this.read(path);
        continue;
      }
      let group: ReturnType<LiveStore['group']>;
      try {
        group = this.store.group(() => paths.map((p) => this.read(p)));
      } catch (err) {
        this.failed(err as Error, paths); // BEGIN found the database busy: nothing was read
        continue;
      }
      await Promise.all(group.reads);
      if (group.failed) {
        // what the group's reads committed was rolled back: each file alone, so that one bad file holds up no other
        this.onError(group.failed);
        for (const path of paths) await this.read(path);
      }
    }
  }

  private async read(path: string): Promise<void> {
    const root = this.roots.find((r) => path === r || path.startsWith(r + sep));
    if (!root) return;
    try {
      await this.ingestor.ingest(path, root);
    } catch (err) {
      this.failed(err as Error, [path]);
    }
  }

  private failed(err: Error, paths: readonly string[]): void {
    this.onError(err);
    // their lines were not committed: read them again soon, not only when they next grow
    const retryMs = isBusy(err) ? BUSY_RETRY_MS : isUnreachable(err) ? UNREACHABLE_RETRY_MS : null;
    if (retryMs !== null) {
      setTimeout(() => {
        for (const p of paths) this.enqueue(p);
      }, retryMs).unref();
    }
  }
}

/** Takes up to `n` of the set's first members out of it. */
function take(set: Set<string>, n: number): string[] {
  const out: string[] = [];
  for (const v of set) {
    if (out.length === n) break;
    out.push(v);
  }
  for (const v of out) set.delete(v);
  return out;
}
