import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureParent, learningLine, tempDir } from '../helpers.ts';
import { rlwatch } from './cli.ts';

// What whoever can write into the runs tree (the training job, a shared NFS) can plant there, met by the CLI as a
// user runs it: symlinks leading out of the roots, and folder names that would not show as themselves.

describe('symlinks planted in a run folder, leading out of the roots', () => {
  const SECRET = 'root:$6$pl4nted-s3cret-hash:19000:0:99999:7:::';
  let root: string;
  let db: string;
  let backfilled: { status: number | null; stdout: string; stderr: string };
  beforeAll(() => {
    const dir = tempDir();
    root = join(dir, 'runs');
    writeFileSync(ensureParent(join(root, 'r1', 'job.out')), '(TaskRunner pid=7) step:1 - critic/score/mean:0.5\n');
    writeFileSync(ensureParent(join(dir, 'etc', 'shadow')), `${SECRET}\n`);
    writeFileSync(ensureParent(join(dir, 'home', '.ssh', 'id.log')), '-----BEGIN OPENSSH PRIVATE KEY-----\n');
    symlinkSync(join(dir, 'etc', 'shadow'), join(root, 'r1', 'shadow.log'));
    symlinkSync(join(dir, 'home', '.ssh'), join(root, 'r1', 'logs'));
    db = join(dir, 'rlwatch.db');
    backfilled = rlwatch(['backfill', root, '--db', db]);
  });

  it('backfill reads neither, and says so', () => {
    expect(backfilled.status).toBe(0);
    expect(backfilled.stdout).toContain('backfill: 1 run, 1 file, 1 record');
    expect(backfilled.stdout).toContain('\n  not read: r1/logs (symlink leads out of the watched roots)\n');
    expect(backfilled.stdout).toContain('\n  not read: r1/shadow.log (symlink leads out of the watched roots)\n');
  });

  it('rlwatch files lists them as not read, with the reason', () => {
    const r = rlwatch(['files', 'r1', '--db', db]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('logs  not read: symlink leads out of the watched roots');
    expect(r.stdout).toContain('shadow.log  not read: symlink leads out of the watched roots');
  });

  it('rlwatch run logs serves none of what they lead to', () => {
    const r = rlwatch(['run', 'logs', 'r1', '--file', 'shadow.log', '--db', db]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('rlwatch: r1 has no console log named shadow.log; it has job.out\n');
    expect(r.stdout + r.stderr).not.toContain('pl4nted');
  });

  it('rlwatch run logs refuses a console log since swapped for one, in a line', () => {
    const log = join(root, 'r1', 'job.out');
    renameSync(log, `${log}.1`);
    symlinkSync(join(root, 'r1', 'shadow.log'), log);
    const r = rlwatch(['run', 'logs', 'r1', '--db', db]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe("rlwatch: r1's job.out is not read: symlink leads out of the watched roots\n");
    expect(r.stdout).toBe('');
  });
});

describe('a run folder named with invisible characters', () => {
  // U+200B (zero-width space) hides in a name; U+202E (right-to-left override) shows `a<RLO>gol` as "alog"
  const NAMES = ['prod-gr\u200bpo', 'a\u202egol'];
  const SHOWN = ['prod-gr\\u{200b}po', 'a\\u{202e}gol'];
  const RAW = /[\u200b\u202e]/;
  let db: string;
  let backfilled: { status: number | null; stdout: string; stderr: string };
  beforeAll(() => {
    const dir = tempDir();
    for (const name of NAMES) {
      mkdirSync(join(dir, 'runs', name), { recursive: true });
      // 25 quiet steps, then a gradient explosion: an alert, whose card names the run
      const lines = Array.from({ length: 30 }, (_, k) => learningLine(k + 1, { grad: k >= 25 ? 60 : 0.05 }));
      writeFileSync(join(dir, 'runs', name, 'learning.log'), `${lines.join('\n')}\n`);
    }
    db = join(dir, 'rlwatch.db');
    backfilled = rlwatch(['backfill', join(dir, 'runs'), '--db', db]);
  });

  it('is shown with them written out, in the alert cards and in rlwatch runs', () => {
    expect(backfilled.status).toBe(0);
    const cards = backfilled.stdout.split('\n').filter((l) => l.includes('FIRING'));
    expect(cards).toHaveLength(2);
    for (const shown of SHOWN) expect(cards.some((l) => l.includes(` ${shown} `))).toBe(true);
    expect(backfilled.stdout).not.toMatch(RAW);
    const runs = rlwatch(['runs', '--json', '--db', db]);
    expect((JSON.parse(runs.stdout) as Array<{ name: string }>).map((r) => r.name).sort()).toEqual([...SHOWN].sort());
    // on this machine the list shows each run's folder too, written out as the name is
    const list = rlwatch(['runs', '--db', db]).stdout;
    const lines = list.split('\n');
    for (const shown of SHOWN) {
      expect(lines.some((l) => l.startsWith(`  ${shown} · `) && l.endsWith(`/runs/${shown}`))).toBe(true);
    }
    expect(list).not.toMatch(RAW);
  });

  it('is found by the name shown', () => {
    const r = rlwatch(['run', 'status', SHOWN[0] as string, '--db', db]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(SHOWN[0]);
  });
});
