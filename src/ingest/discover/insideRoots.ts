/**
 * The one rule for what may be read: a path whose real path lies inside a watched root's, so that a planted symlink
 * never leaks a file from elsewhere.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * The one rule for what may be read: a path whose real path (every symlink on the way resolved, file or folder)
 * lies inside one of the watched roots' real paths. A link planted in a run folder (`shadow.log -> /etc/shadow`,
 * `logs -> ~/.ssh`) leads out of them and is never read: discovery lists it as not read, the ingestor and
 * `run logs` refuse it.
 */
export const OUTSIDE_ROOTS = 'symlink leads out of the watched roots';

/** A path the rule refuses: `reason` is what `rlwatch files` lists it with. */
export class OutsideRoots extends Error {
  readonly reason = OUTSIDE_ROOTS;
  constructor(readonly path: string) {
    super(`${path}: ${OUTSIDE_ROOTS}`);
  }
}

/** What was opened is not the file checked: the path changed in between (a rotation, or a symlink swapped in).
 * Nothing was read, and no verdict is made: the next read checks the path afresh. */
export class ReplacedWhileOpened extends Error {
  constructor(readonly path: string) {
    super('replaced while being opened');
  }
}

const realOrNull = (path: string): string | null => {
  try {
    return realpathSync.native(path);
  } catch {
    return null;
  }
};

/** Whether `path` is `dir` or below it (`/` holds everything). */
export const isUnder = (path: string, dir: string): boolean =>
  path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

/** The real paths of the roots that exist. */
const realRoots = (roots: readonly string[]): string[] => roots.map(realOrNull).filter((r): r is string => r !== null);

/** Whether the real path `real` lies inside one of `roots`' real paths. Below a root's own path it does (a real path
 * holds no symlink, so that root's path is its real path), without resolving the roots. */
export const insideRoots = (real: string, roots: readonly string[]): boolean =>
  roots.some((r) => isUnder(real, r)) || realRoots(roots).some((r) => isUnder(real, r));

/**
 * How `path`, found below one of `roots`, is reached; null when it does not resolve (gone, a dangling link):
 * - `direct`: it is where its name says (no symlink on the way leads elsewhere);
 * - `elsewhere`: through a symlink to another place inside a root, where it is read under its real path (so a
 *   `latest -> exp1` link adds no second run, and a link back up ends);
 * - `outside`: its real path lies out of every root: never read.
 */
export function reachOf(path: string, roots: readonly string[]): 'direct' | 'elsewhere' | 'outside' | null {
  const real = realOrNull(path);
  if (real === null) return null;
  if (!insideRoots(real, roots)) return 'outside';
  if (real === path) return 'direct';
  const root = roots.find((r) => isUnder(path, r));
  const realRoot = root === undefined ? null : realOrNull(root);
  return realRoot !== null && real === join(realRoot, relative(root as string, path)) ? 'direct' : 'elsewhere';
}

/** What the check before opening found: the file's identity, and the roots it must lie inside. */
export interface Approval {
  dev: number;
  ino: number;
  roots: readonly string[];
}

/** Checks `path` before it is opened: null when it is not a regular file (opening a FIFO or a device may act on
 * it), OutsideRoots when that is a link out of the roots (to a folder: `logs -> ~/.ssh`). fs errors (ENOENT: gone)
 * are thrown. */
export function approve(path: string, roots: readonly string[]): Approval | null {
  const st = statSync(path);
  if (st.isFile()) return { dev: st.dev, ino: st.ino, roots };
  if (!insideRoots(realpathSync.native(path), roots)) throw new OutsideRoots(path);
  return null;
}

/** The real path of the file an open descriptor refers to: Linux names it, whatever became of the path since the
 * open; elsewhere the path's real path, resolved after the open. */
function realOfOpen(fd: number, path: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realpathSync.native(path);
  }
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Opens `path` (read-only, never blocking), then checks the descriptor, closing it unread if either fails: it must
 * be the file `approval` approved (ReplacedWhileOpened: a symlink swapped in between the check and the open, a race
 * whoever writes the runs tree can try, opens another file), and its real path must lie inside the roots
 * (OutsideRoots). On Linux the real path is the kernel's own name for the open file, so no later swap of a link or
 * a folder can fool it.
 */
export function openApproved(path: string, approval: Approval): { fd: number; st: Stats } {
  const fd = openSync(path, OPEN_FLAGS);
  try {
    const st = fstatSync(fd);
    if (st.dev !== approval.dev || st.ino !== approval.ino) throw new ReplacedWhileOpened(path);
    if (!insideRoots(realOfOpen(fd, path), approval.roots)) throw new OutsideRoots(path);
    return { fd, st };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Opens `path` for reading under the rule (`approve`, then `openApproved`); null when it is not a regular file.
 * The caller closes the descriptor. */
export function openInsideRoots(path: string, roots: readonly string[]): { fd: number; st: Stats } | null {
  const approval = approve(path, roots);
  return approval && openApproved(path, approval);
}
