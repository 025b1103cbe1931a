/** Log rotation: finds the file last read under its new name, and the files rotated away before any read saw them. */
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** A file a rotation moved away from the followed path, as found beside it. */
export interface RotatedFile {
  path: string;
  dev: number;
  ino: number;
}

/** What the followed file was when last read: its path, identity and mtime (null: never stored). */
export interface LastRead {
  path: string;
  dev: number | null;
  ino: number | null;
  mtime_ms: number | null;
}

/** A rotation's name for `base`: `base.1`, `base-20261122`, `base.2026-11-22`; not `base.bak`, `base.1.gz`. */
const ROTATION_SUFFIX = /^[._-]\d[\d._-]*$/;

/**
 * The files to read, in order, before the file now at `last.path` (whose identity is `current`) after one or
 * more rotations since the last read:
 * - `old`: the file last read, found by its device and inode under any name beside the path (read on from the
 *   stored offset);
 * - `newer`: files that were at the path after it and were rotated away before any read saw them (read whole),
 *   oldest first. A sibling counts as one when its name is a rotation of the path's (`learning.log.2`,
 *   `learning.log-20261122`) and its mtime is later than the followed file's at the last read. An older rotation
 *   (last written before the file last read was, so already read, or from before rlwatch followed the path) and
 *   unrelated files (`learning.log.bak`, a compressed `learning.log.2.gz`) are never read. The limit: a file
 *   rotated in and out within the file system's clock tick of the last read (a few ms) is not told from an older
 *   one and is not read.
 */
export function rotatedSince(last: LastRead, current: Stats): { old?: RotatedFile; newer: RotatedFile[] } {
  const dir = dirname(last.path);
  const base = basename(last.path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return { newer: [] };
  }
  let old: RotatedFile | undefined;
  const newer: Array<RotatedFile & { mtimeMs: number }> = [];
  for (const name of names) {
    if (name === base) continue;
    const path = join(dir, name);
    let st: Stats;
    try {
      st = lstatSync(path);
    } catch {
      continue;
    }
    if (!st.isFile() || (st.ino === current.ino && st.dev === current.dev)) continue;
    const file = { path, dev: st.dev, ino: st.ino };
    if (st.ino === last.ino && st.dev === last.dev) old = file;
    else if (
      last.mtime_ms !== null &&
      st.mtimeMs > last.mtime_ms &&
      name.startsWith(base) &&
      ROTATION_SUFFIX.test(name.slice(base.length))
    ) {
      newer.push({ ...file, mtimeMs: st.mtimeMs });
    }
  }
  newer.sort((a, b) => a.mtimeMs - b.mtimeMs);
  return { old, newer: newer.map(({ path, dev, ino }) => ({ path, dev, ino })) };
}
