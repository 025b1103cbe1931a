import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { CANDIDATE_FILE } from './runLocator.ts';

/** Directories never worth descending into. */
export function isIgnoredDir(name: string, extra: readonly string[] = []): boolean {
  return name.startsWith('.') || name === 'node_modules' || name === '__pycache__' || extra.includes(name);
}

const realOrNull = (path: string): string | null => {
  try {
    return realpathSync.native(path);
  } catch {
    return null;
  }
};

const isUnder = (path: string, dir: string): boolean => path === dir || path.startsWith(dir + sep);

/**
 * The one rule for symlinks, in `backfill` and `start` alike: what a link leads to is read under its real path
 * when that lies under a watch root, so a `latest -> exp1` link adds no second run (and a link back up ends);
 * a link leading out of every root is followed, under the link's own name. True when `path` passes through a
 * link into a watch root: the same file is read under its real path.
 */
export function readElsewhere(path: string, roots: readonly string[]): boolean {
  const root = roots.find((r) => isUnder(path, r));
  if (root === undefined) return false;
  const realRoots = roots.map(realOrNull).filter((r): r is string => r !== null);
  let at = root;
  for (const part of relative(root, path).split(sep)) {
    at = join(at, part);
    let link: boolean;
    try {
      link = lstatSync(at).isSymbolicLink();
    } catch {
      return false;
    }
    const real = link ? realOrNull(at) : null;
    if (real !== null && realRoots.some((r) => isUnder(real, r))) return true;
  }
  return false;
}

/**
 * Files under `root` (to `depth` levels) whose names may hold a log we read, in a stable order. Symlinked
 * folders are followed once each (by real path: a link cycle ends); FIFOs, sockets and devices are never listed.
 */
export function discoverFiles(root: string, depth: number, ignore: readonly string[] = []): string[] {
  const found: string[] = [];
  const visited = new Set<string>();
  const walk = (dir: string, level: number): void => {
    const real = realOrNull(dir);
    if (real === null || visited.has(real)) return;
    visited.add(real);
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // vanished or unreadable sub-directory: the rest of the tree still counts
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = join(dir, e.name);
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      if (e.isSymbolicLink()) {
        try {
          const st = statSync(path);
          isDir = st.isDirectory();
          isFile = st.isFile();
        } catch {
          continue; // a dangling link
        }
      }
      if (isDir) {
        if (level < depth && !isIgnoredDir(e.name, ignore)) walk(path, level + 1);
      } else if (isFile && CANDIDATE_FILE.test(e.name)) found.push(path);
    }
  };
  walk(root, 0);
  return found;
}
