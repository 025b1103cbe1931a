/** Watching by file-system events: one `fs.watch` (inotify) per directory of the roots, down to `depth`. */
import { readdirSync, realpathSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { join, sep } from 'node:path';
import { isIgnoredDir, leadsOut } from './discover.ts';
import { CANDIDATE_FILE } from './runLocator.ts';

/** One watched directory: its inotify watch, how deep below its root it sits, the log files last listed in it. */
interface Dir {
  watcher: FSWatcher | null;
  level: number;
  /** its real path, so that a folder is watched once (a nested root, a bind mount) */
  real: string;
  files: Set<string>;
  /** sub-directories watched as its entries */
  subdirs: Set<string>;
  /** its symlinks that lead out of every root, told once each */
  outside: Set<string>;
}

/**
 * The roots' directories (to `depth`), each watched by one `fs.watch` (inotify on Linux). A change event names
 * the file: it goes straight to `onFile`, with no stat and no directory read. A directory is read again only
 * when an entry in it is created, removed or renamed (or by `rescan`, the safety net for lost events), and a
 * log file found that way is handed to `onFile` once. Files the ingestor will not take (the wrong name, an
 * ignored or hidden folder, deeper than `depth`, reached through a link into a root) are never handed over. No
 * symlink is followed: one into a root is read there, under its real path; one that leads out of every root (to a
 * log file, or to a folder) goes to `onOutside` once, to be listed as not read.
 */
export class TreeWatch {
  private readonly dirs = new Map<string, Dir>();
  /** the watched directories' real paths */
  private readonly reals = new Set<string>();
  /** directories to read again once the current burst of events has been delivered */
  private readonly dirty = new Set<string>();
  private rescanning: NodeJS.Immediate | null = null;
  private closed = false;
  /** directories whose watch could not be set, reported once each */
  private readonly reported = new Set<string>();

  constructor(
    private readonly roots: readonly string[],
    private readonly opts: { depth: number; ignore: readonly string[] },
    private readonly onFile: (path: string) => void,
    private readonly onError: (err: Error) => void,
    private readonly onOutside: (path: string) => void,
  ) {}

  /** Watches the trees and hands over every log file in them. */
  start(): void {
    this.rescan();
  }

  /** Reads every directory again: roots and folders whose watch was lost or could not be set are watched again,
   * files whose creation went unseen are handed over. */
  rescan(): void {
    for (const root of this.roots) this.add(root, 0);
    for (const path of [...this.dirs.keys()]) this.read(path);
  }

  close(): void {
    this.closed = true;
    if (this.rescanning) clearImmediate(this.rescanning);
    for (const path of [...this.dirs.keys()]) this.drop(path);
  }

  /** Starts watching `path` at `level` below its root (a nested root makes that the smaller), and reads it. */
  private add(path: string, level: number): void {
    const known = this.dirs.get(path);
    if (known?.watcher && known.level <= level) return;
    let real: string;
    try {
      real = realpathSync.native(path);
    } catch {
      return;
    }
    if (!known && this.reals.has(real)) return; // watched already, as a nested root or through a bind mount
    const dir: Dir = known ?? { watcher: null, level, real, files: new Set(), subdirs: new Set(), outside: new Set() };
    dir.level = Math.min(dir.level, level);
    this.dirs.set(path, dir);
    this.reals.add(real);
    if (!dir.watcher) dir.watcher = this.watchDir(path);
    this.read(path);
  }

  private watchDir(path: string): FSWatcher | null {
    try {
      const w = watch(path, { persistent: true }, (event, name) => this.event(path, event, name));
      w.on('error', () => this.lost(path));
      this.reported.delete(path);
      return w;
    } catch (err) {
      // out of inotify watches (ENOSPC), or a folder gone or unreadable: the 30 s rescan tries again
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && !this.reported.has(path)) {
        this.reported.add(path);
        const hint = code === 'ENOSPC' ? ' (raise fs.inotify.max_user_watches, or set watch.poll)' : '';
        this.onError(new Error(`cannot watch ${path}: ${(err as Error).message}${hint}; looking again every 30 s`));
      }
      return null;
    }
  }

  private event(dir: string, event: string, name: string | Buffer | null): void {
    if (this.closed) return;
    const entry = typeof name === 'string' ? name : null;
    const known = entry !== null && this.dirs.get(dir)?.files.has(entry) === true;
    // an append (or the file renamed away, or replaced: the ingestor sorts out which)
    if (known) this.onFile(join(dir, entry));
    // a write to a file no format reads (a checkpoint): nothing to do; to one not listed yet: list the folder
    if (event === 'change' && (known || entry === null || !CANDIDATE_FILE.test(entry))) return;
    // an entry created, removed or renamed (or the directory itself): list the directory again, once per burst
    this.dirty.add(dir);
    this.rescanning ??= setImmediate(() => {
      this.rescanning = null;
      const paths = [...this.dirty];
      this.dirty.clear();
      for (const path of paths) if (this.dirs.has(path)) this.read(path);
    });
  }

  /** Lists `path`: new log files are handed over, new sub-directories watched, vanished ones let go. */
  private read(path: string): void {
    const dir = this.dirs.get(path);
    if (!dir) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(path, { withFileTypes: true });
    } catch {
      this.lost(path);
      return;
    }
    const files = new Set<string>();
    const subdirs = new Set<string>();
    const outside = new Set<string>();
    for (const e of entries) {
      const child = join(path, e.name);
      const descend = dir.level < this.opts.depth && !isIgnoredDir(e.name, this.opts.ignore);
      if (e.isSymbolicLink()) {
        // what a link leads to inside a root is read under its real path, and watched there
        if (!leadsOut(child, e.name, descend, this.roots)) continue;
        outside.add(e.name);
        if (!dir.outside.has(e.name)) this.onOutside(child);
      } else if (e.isDirectory() && descend) {
        subdirs.add(e.name);
        if (!this.isRoot(child)) this.add(child, dir.level + 1);
      } else if (e.isFile() && CANDIDATE_FILE.test(e.name)) {
        files.add(e.name);
        if (!dir.files.has(e.name)) this.onFile(child);
      }
    }
    for (const name of dir.subdirs) if (!subdirs.has(name)) this.dropTree(join(path, name));
    dir.files = files;
    dir.subdirs = subdirs;
    dir.outside = outside;
  }

  /** A directory's watch failed or the directory went: a root stays known (to be watched again), others go. */
  private lost(path: string): void {
    if (this.isRoot(path)) {
      const dir = this.dirs.get(path);
      if (!dir) return;
      dir.watcher?.close();
      dir.watcher = null;
      for (const name of dir.subdirs) this.dropTree(join(path, name));
      dir.subdirs.clear();
      dir.files.clear();
      dir.outside.clear();
    } else this.dropTree(path);
  }

  private dropTree(path: string): void {
    const prefix = path + sep;
    for (const p of [...this.dirs.keys()]) {
      if ((p === path || p.startsWith(prefix)) && !this.isRoot(p)) this.drop(p);
    }
  }

  private drop(path: string): void {
    const dir = this.dirs.get(path);
    if (!dir) return;
    dir.watcher?.close();
    this.dirs.delete(path);
    this.reals.delete(dir.real);
  }

  private isRoot(path: string): boolean {
    return this.roots.includes(path);
  }
}
