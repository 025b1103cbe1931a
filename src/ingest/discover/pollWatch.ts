/** Watching by polling (chokidar, `watch.poll`), for network file systems that send no events. */
import { watch, type FSWatcher } from 'chokidar';
import { statSync } from 'node:fs';
import { basename, relative, sep } from 'node:path';
import { discover, isIgnoredDir } from './discover.ts';
import { reachOf } from './insideRoots.ts';
import { CANDIDATE_FILE } from './runLocator.ts';

/** chokidar drops a change event that comes within 50 ms of the one it last emitted and sends no trailing event,
 * so the last append of a burst could go unnoticed: every change is looked at once more this much later, and
 * handed over again if the file changed since the event. */
const TRAILING_CHECK_MS = 60;

/**
 * The roots polled by chokidar (`watch.poll`: network file systems send no events): each file stat'ed and each
 * folder listed every `intervalMs`. Log files found or changed go to `onFile`, links out of the roots to
 * `onOutside` once (by the same rules as `TreeWatch`).
 */
export class PollWatch {
  private watcher: FSWatcher | null = null;
  private readonly trailing = new Map<string, NodeJS.Timeout>();
  /** the files handed over: a listing hands over only the others */
  private readonly handed = new Set<string>();
  /** the links out of the roots told */
  private readonly told = new Set<string>();
  private readonly listings = new Set<NodeJS.Timeout>();

  constructor(
    private readonly roots: readonly string[],
    private readonly opts: { depth: number; ignore: readonly string[]; intervalMs: number },
    private readonly onFile: (path: string) => void,
    private readonly onError: (err: Error) => void,
    private readonly onOutside: (path: string) => void,
  ) {}

  /** Resolves once every log file present has been handed over. */
  async start(): Promise<void> {
    // chokidar follows every symlink (it gives the stats of what a link leads to): what is not where its name says
    // is passed by, read under its real path inside a root or listed as not read (listUnseen)
    const ignored = (path: string, stats?: { isFile(): boolean; isDirectory(): boolean }): boolean => {
      if (this.roots.includes(path)) return false;
      const name = basename(path);
      if (stats?.isDirectory()) return isIgnoredDir(name, this.opts.ignore) || reachOf(path, this.roots) !== 'direct';
      if (stats?.isFile()) return !CANDIDATE_FILE.test(name) || reachOf(path, this.roots) !== 'direct';
      return isIgnoredDir(name, this.opts.ignore) && !CANDIDATE_FILE.test(name);
    };
    const watcher = watch([...this.roots], {
      ignored,
      persistent: true,
      ignoreInitial: false,
      usePolling: true,
      interval: this.opts.intervalMs,
      binaryInterval: this.opts.intervalMs,
      depth: this.opts.depth,
      ignorePermissionErrors: true,
    });
    this.watcher = watcher;
    watcher.on('add', (p) => this.changed(p));
    watcher.on('change', (p) => this.changed(p));
    watcher.on('error', (e) => this.onError(e instanceof Error ? e : new Error(String(e))));
    await new Promise<void>((done) => watcher.once('ready', () => done()));
    // chokidar takes each folder's first stat after listing it, and after 'ready': what changes in between is never
    // reported (a run folder made just after start, a file made in a folder just made). So the trees are listed
    // once more when their polling has begun, and so is each folder made while watching.
    this.listLater(() => this.rescan());
    watcher.on('addDir', (dir) => this.listLater(() => this.listUnseen(dir)));
  }

  private listLater(list: () => void): void {
    const t = setTimeout(() => {
      this.listings.delete(t);
      list();
    }, 2 * this.opts.intervalMs);
    this.listings.add(t);
  }

  /** Lists the trees again and hands over the log files chokidar never reported (the sweep's safety net), and
   * tells the links out of the roots (chokidar passes them by). */
  rescan(): void {
    for (const root of this.roots) this.listUnseen(root);
  }

  async close(): Promise<void> {
    await this.watcher?.close();
    this.watcher = null;
    for (const t of this.trailing.values()) clearTimeout(t);
    this.trailing.clear();
    for (const t of this.listings) clearTimeout(t);
    this.listings.clear();
  }

  private listUnseen(dir: string): void {
    if (!this.watcher) return;
    const root = this.roots.find((r) => dir === r || dir.startsWith(r + sep));
    if (root === undefined) return;
    const level = dir === root ? 0 : relative(root, dir).split(sep).length;
    if (level > this.opts.depth) return; // chokidar reports folders one below `depth`, whose files are not read
    const { files, outside } = discover(dir, this.opts.depth - level, this.opts.ignore, this.roots);
    for (const path of files) if (!this.handed.has(path)) this.changed(path);
    for (const path of outside) {
      if (this.told.has(path)) continue;
      this.told.add(path);
      this.onOutside(path);
    }
  }

  private changed(path: string): void {
    this.handed.add(path);
    this.onFile(path);
    const before = identity(path);
    clearTimeout(this.trailing.get(path));
    this.trailing.set(
      path,
      setTimeout(() => {
        this.trailing.delete(path);
        // a stat, not a read: every appended line would otherwise be read twice (the event, then this check)
        if (this.watcher && identity(path) !== before) this.onFile(path);
      }, TRAILING_CHECK_MS),
    );
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
