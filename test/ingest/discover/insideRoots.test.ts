import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, readSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  approve,
  openApproved,
  openInsideRoots,
  OutsideRoots,
  reachOf,
  ReplacedWhileOpened,
} from '../../../src/ingest/discover/insideRoots.ts';
import { ensureParent, tempDir } from '../../helpers.ts';

// The rule every read of a log goes through, against real files, folders and symlinks.
let root: string;
let secret: string;

const OUT = 'symlink leads out of the watched roots';

/** The text an open descriptor reads, closed after. */
function readAll(fd: number): string {
  try {
    const buf = Buffer.alloc(4096);
    return buf.toString('utf8', 0, readSync(fd, buf, 0, buf.length, 0));
  } finally {
    closeSync(fd);
  }
}

/** What a refused open throws: the rule's refusal, with why. */
function refusal(open: () => unknown): string {
  try {
    open();
  } catch (err) {
    if (err instanceof OutsideRoots) return err.reason;
    throw err;
  }
  throw new Error('opened');
}

beforeEach(() => {
  const dir = tempDir();
  root = join(dir, 'runs');
  writeFileSync(ensureParent(join(root, 'exp1', 'learning.log')), 'inside\n');
  secret = ensureParent(join(dir, 'etc', 'shadow'));
  writeFileSync(secret, 'root:$6$s3cret\n');
});

describe('openInsideRoots', () => {
  it('opens a file inside the root, also through a link that stays inside, also under a linked root', () => {
    expect(readAll(openInsideRoots(join(root, 'exp1', 'learning.log'), [root])!.fd)).toBe('inside\n');
    symlinkSync(join(root, 'exp1'), join(root, 'latest'));
    expect(readAll(openInsideRoots(join(root, 'latest', 'learning.log'), [root])!.fd)).toBe('inside\n');
    const linkedRoot = join(root, '..', 'runs-link');
    symlinkSync(root, linkedRoot);
    expect(readAll(openInsideRoots(join(linkedRoot, 'exp1', 'learning.log'), [linkedRoot])!.fd)).toBe('inside\n');
  });

  it('refuses a symlinked file and a symlinked folder leading out of the roots, and a chain of links that does', () => {
    symlinkSync(secret, join(root, 'exp1', 'shadow.log'));
    expect(refusal(() => openInsideRoots(join(root, 'exp1', 'shadow.log'), [root]))).toBe(OUT);
    symlinkSync(join(secret, '..'), join(root, 'exp1', 'logs'));
    expect(refusal(() => openInsideRoots(join(root, 'exp1', 'logs', 'shadow'), [root]))).toBe(OUT);
    expect(refusal(() => openInsideRoots(join(root, 'exp1', 'logs'), [root]))).toBe(OUT); // the folder itself
    symlinkSync(join(root, 'exp1', 'shadow.log'), join(root, 'exp1', 'job.out'));
    expect(refusal(() => openInsideRoots(join(root, 'exp1', 'job.out'), [root]))).toBe(OUT);
    // `../` in the name leads out without any link: the real path is what counts
    expect(refusal(() => openInsideRoots(join(root, 'exp1', '..', '..', 'etc', 'shadow'), [root]))).toBe(OUT);
  });

  it('passes by what is not a regular file without opening it (a FIFO would block)', () => {
    execFileSync('mkfifo', [join(root, 'exp1', 'train.log')]);
    expect(openInsideRoots(join(root, 'exp1', 'train.log'), [root])).toBeNull();
    expect(openInsideRoots(join(root, 'exp1'), [root])).toBeNull();
  });
});

describe('the check, then the open', () => {
  it('refuses a symlink swapped for one leading out between the check and the open', () => {
    const link = join(root, 'exp1', 'job.out');
    symlinkSync(join(root, 'exp1', 'learning.log'), link);
    const approval = approve(link, [root])!;
    rmSync(link);
    symlinkSync(secret, link); // what whoever writes the runs tree can do at any moment
    expect(() => openApproved(link, approval)).toThrow(ReplacedWhileOpened);
    // checked afresh, it is what it is: a link out of the roots
    expect(refusal(() => openInsideRoots(link, [root]))).toBe(OUT);
  });

  it.runIf(existsSync('/proc/self/fd'))(
    'refuses a file out of the roots even when the check was fooled into approving its identity',
    () => {
      // the check's realpath and stat can see different trees if a folder is swapped back and forth between them:
      // the kernel's name of what was opened is what holds
      const link = join(root, 'exp1', 'shadow.log');
      symlinkSync(secret, link);
      const { dev, ino } = statSync(secret);
      expect(refusal(() => openApproved(link, { dev, ino, roots: [root] }))).toBe(OUT);
    },
  );
});

describe('reachOf', () => {
  it('tells a path where its name says, one reached through a link inside the roots, and one leading out', () => {
    mkdirSync(join(root, 'exp2'));
    symlinkSync(join(root, 'exp1'), join(root, 'latest'));
    symlinkSync(join(secret, '..'), join(root, 'exp2', 'logs'));
    symlinkSync(join(root, 'nowhere'), join(root, 'dangling'));
    expect(reachOf(join(root, 'exp1', 'learning.log'), [root])).toBe('direct');
    expect(reachOf(join(root, 'latest', 'learning.log'), [root])).toBe('elsewhere');
    expect(reachOf(join(root, 'exp2', 'logs'), [root])).toBe('outside');
    expect(reachOf(join(root, 'dangling'), [root])).toBeNull();
    // a link into another watched root is read there
    expect(reachOf(join(root, 'exp2', 'logs', 'shadow'), [root, join(secret, '..')])).toBe('elsewhere');
  });
});
