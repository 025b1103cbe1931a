import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CANDIDATE_FILE } from './runLocator.ts';

/** Directories never worth descending into. */
export function isIgnoredDir(name: string, extra: readonly string[] = []): boolean {
  return name.startsWith('.') || name === 'node_modules' || name === '__pycache__' || extra.includes(name);
}

/** Files under `root` (to `depth` levels) whose names may hold a log we read, in a stable order. */
export function discoverFiles(root: string, depth: number, ignore: readonly string[] = []): string[] {
  const found: string[] = [];
  const walk = (dir: string, level: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // vanished or unreadable sub-directory: the rest of the tree still counts
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (level < depth && !isIgnoredDir(e.name, ignore)) walk(path, level + 1);
      } else if (e.isFile() && CANDIDATE_FILE.test(e.name)) found.push(path);
    }
  };
  walk(root, 0);
  return found;
}
