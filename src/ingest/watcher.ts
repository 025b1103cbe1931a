import { watch, type FSWatcher } from 'chokidar';
import { statSync } from 'node:fs';
import { basename, resolve, sep } from 'node:path';
import { isIgnoredDir, readElsewhere } from './discover.ts';
import type { Ingestor } from './ingestor.ts';
import { CANDIDATE_FILE } from './runLocator.ts';
import { isBusy } from '../store/dbErrors.ts';
import { BUSY_RETRY_MS } from '../store/store.ts';

/** chokidar drops a change event that comes within 50 ms of the one it last emitted and sends no trailing event,
 * so the last append of a burst could go unnoticed: every change is looked at once more this much later, and
 * read again if the file changed since it was last read. */
const TRAILING_CHECK_MS = 60;
/** A safety net for events lost anyway (inotify queue overflow, editors' tricks): re-check every file seen. */
const SWEEP_MS = 30_000;

export interface WatchOptions {
  poll: boolean;
  pollIntervalMs: number;
  depth: number;
  ignore: readonly string[];
}

/**
 * Watches the roots with chokidar and feeds changed files to the ingestor one at a time (SQLite has one
 * writer, and a file must never be read twice at once). A change during a read queues one more read.
 */
export class LiveIngest {
  private watcher: FSWatcher | null = null;
  private readonly roots: string[];
  private readonly queue = new Set<string>();
  private draining: Promise<void> | null = null;
  private readonly seen = new Set<string>();
  private readonly trailing = new Map<string, NodeJS.Timeout>();
  /** each file's size and mtime as it was just before its last read */
  private readonly lastRead = new Map<string, string>();
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
    const ignored = (path: string, stats?: { isFile(): boolean; isDirectory(): boolean }): boolean => {
      if (this.roots.includes(path)) return false;
      const name = basename(path);
      if (stats?.isDirectory()) return isIgnoredDir(name, this.opts.ignore);
      if (stats?.isFile()) return !CANDIDATE_FILE.test(name);
      return isIgnoredDir(name, this.opts.ignore) && !CANDIDATE_FILE.test(name);
    };
    const watcher = watch(this.roots, {
      ignored,
      persistent: true,
      ignoreInitial: false,
      usePolling: this.opts.poll,
      interval: this.opts.pollIntervalMs,
      binaryInterval: this.opts.pollIntervalMs,
      depth: this.opts.depth,
      ignorePermissionErrors: true,
    });
    this.watcher = watcher;
    watcher.on('add', (p) => this.changed(p));
    watcher.on('change', (p) => this.changed(p));
    watcher.on('error', (e) => this.onError(e instanceof Error ? e : new Error(String(e))));
    await new Promise<void>((done) => watcher.once('ready', () => done()));
    this.sweep = setInterval(() => this.seen.forEach((p) => this.enqueue(p)), SWEEP_MS);
    this.sweep.unref();
    await this.idle();
  }

  /** Resolves when every queued file has been read. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  async stop(): Promise<void> {
    await this.watcher?.close();
    this.watcher = null;
    if (this.sweep) clearInterval(this.sweep);
    this.trailing.forEach((t) => clearTimeout(t));
    this.trailing.clear();
    this.queue.clear();
    await this.idle();
  }

  private changed(path: string): void {
    this.seen.add(path);
    this.enqueue(path);
    clearTimeout(this.trailing.get(path));
    this.trailing.set(
      path,
      setTimeout(() => {
        this.trailing.delete(path);
        // a stat, not a read: live, every appended line used to be read twice (the event, then this check)
        if (identity(path) !== this.lastRead.get(path)) this.enqueue(path);
      }, TRAILING_CHECK_MS),
    );
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
      this.lastRead.set(path, identity(path));
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

/** What tells a change: size and mtime (a rewrite to the same size moves the mtime), inode (a new file). */
function identity(path: string): string {
  try {
    const st = statSync(path);
    return `${st.size}:${st.mtimeMs}:${st.ino}`;
  } catch {
    return 'gone';
  }
}

function first(set: Set<string>): string | undefined {
  for (const v of set) return v;
  return undefined;
}
