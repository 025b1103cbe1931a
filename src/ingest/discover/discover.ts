/**
 * Walks the roots once for log files (what `backfill` and a start-up read), skipping ignored folders and listing
 * symlinks that lead out of every root as not read.
 */
import { type Dirent, readdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { reachOf } from './insideRoots.ts';
import { CANDIDATE_FILE } from './runLocator.ts';

/** Directories never worth descending into. */
export function isIgnoredDir(name: string, extra: readonly string[] = []): boolean {
  return name.startsWith('.') || name === 'node_modules' || name === '__pycache__' || extra.includes(name);
}

/** True when `path` passes through a symlink to another place inside a watch root: the same file is read there,
 * under its real path (insideRoots.ts `reachOf`). */
export const readElsewhere = (path: string, roots: readonly string[]): boolean => reachOf(path, roots) === 'elsewhere';

/**
 * Whether the symlink `path` (named `name`) is one to list as not read: it leads out of every root, to a folder that
 * would be walked (`descend`: not too deep, not ignored) or to a file named like a log. A dangling link is not.
 */
export function leadsOut(path: string, name: string, descend: boolean, roots: readonly string[]): boolean {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory(); // a stat of what it leads to: nothing there is read
  } catch {
    return false;
  }
  return (isDir ? descend : CANDIDATE_FILE.test(name)) && reachOf(path, roots) === 'outside';
}

/** What a walk of a tree found: log files, and the symlinks (to a log file, or to a folder) that lead out of every
 * root, which are not read but listed as not read. */
export interface Found {
  files: string[];
  outside: string[];
}

/**
 * Files under `root` (to `depth` levels) whose names may hold a log we read, in a stable order. Symlinks are not
 * followed: one into a root (`roots`, `[root]` unless told) is read there under its real path, one out of every
 * root is put in `outside`. FIFOs, sockets and devices are never listed.
 */
export function discover(
  root: string,
  depth: number,
  ignore: readonly string[] = [],
  roots: readonly string[] = [root],
): Found {
  const found: Found = { files: [], outside: [] };
  const visited = new Set<string>();
  const walk = (dir: string, level: number): void => {
    let real: string;
    try {
      real = realpathSync.native(dir);
    } catch {
      return;
    }
    if (visited.has(real)) return; // a bind mount of a folder above
    visited.add(real);
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // vanished or unreadable sub-directory: the rest of the tree still counts
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = join(dir, e.name);
      const descend = level < depth && !isIgnoredDir(e.name, ignore);
      if (e.isSymbolicLink()) {
        if (leadsOut(path, e.name, descend, roots)) found.outside.push(path);
      } else if (e.isDirectory()) {
        if (descend) walk(path, level + 1);
      } else if (e.isFile() && CANDIDATE_FILE.test(e.name)) found.files.push(path);
    }
  };
  walk(root, 0);
  return found;
}

/** The paths `discover` finds, to hand to the ingestor: the log files, and the links out of the roots, which it
 * refuses and lists as not read (`rlwatch files`). */
export function discoverFiles(root: string, depth: number, ignore: readonly string[] = []): string[] {
  const { files, outside } = discover(root, depth, ignore);
  return [...files, ...outside].sort();
}
