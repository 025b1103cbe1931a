import { closeSync, constants, fstatSync, openSync, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * The one rule for what may be read: a path whose real path (every symlink on the way resolved, file or folder)
 * lies inside one of the watched roots' real paths. A link planted in a run folder (`shadow.log -> /etc/shadow`,
 * `logs -> ~/.ssh`) leads out of them and is never opened: discovery lists it as not read, the ingestor and
 * `run logs` refuse it.
 */
export const OUTSIDE_ROOTS = 'symlink leads out of the watched roots';

/** A path the rule refuses: `reason` is what `rlwatch files` lists it with. */
export class OutsideRoots extends Error {
  constructor(readonly path: string, readonly reason: string = OUTSIDE_ROOTS) {
    super(`${path}: ${reason}`);
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
export const realRoots = (roots: readonly string[]): string[] =>
  roots.map(realOrNull).filter((r): r is string => r !== null);

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
  if (!realRoots(roots).some((r) => isUnder(real, r))) return 'outside';
  const root = roots.find((r) => isUnder(path, r));
  const realRoot = root === undefined ? null : realOrNull(root);
  return realRoot !== null && real === join(realRoot, relative(root as string, path)) ? 'direct' : 'elsewhere';
}

/** What the check before opening found: the file's identity, and the roots' real paths it lies inside. */
export interface Approval {
  dev: number;
  ino: number;
  reals: readonly string[];
}

/**
 * Checks `path` before it is opened: its real path must lie inside `roots` (else OutsideRoots). Null when it is
 * not a regular file (a FIFO would block the open, a device may act on it). fs errors (ENOENT: gone) are thrown.
 */
export function approve(path: string, roots: readonly string[]): Approval | null {
  const real = realpathSync.native(path);
  const reals = realRoots(roots);
  if (!reals.some((r) => isUnder(real, r))) throw new OutsideRoots(path);
  const st = statSync(real);
  return st.isFile() ? { dev: st.dev, ino: st.ino, reals } : null;
}

/** Linux names the file an open descriptor refers to, whatever happened to the path since; null elsewhere. */
function kernelName(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Opens `path` (read-only, never blocking) and makes sure the descriptor is the file `approval` approved: a
 * symlink swapped in between the check and the open (a race whoever writes the runs tree can try) opens another
 * file, which is closed unread (OutsideRoots). On Linux the kernel's own name of the opened file must lie inside
 * the roots too: that holds even if the check's stat was fooled by a folder swapped back and forth.
 */
export function openApproved(path: string, approval: Approval): { fd: number; st: Stats } {
  const fd = openSync(path, OPEN_FLAGS);
  try {
    const st = fstatSync(fd);
    if (st.dev !== approval.dev || st.ino !== approval.ino) throw new OutsideRoots(path, 'replaced while being opened');
    const named = kernelName(fd);
    if (named !== null && !approval.reals.some((r) => isUnder(named, r))) throw new OutsideRoots(path);
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
