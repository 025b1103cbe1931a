import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { learningLine, tempDir } from '../helpers.ts';
import { BIN, rlwatch, type CliResult } from './cli.ts';

/** One `rlwatch:` line that says what to do, never a stack. */
function expectOneLine(r: CliResult, what: RegExp): void {
  expect(r.status).toBe(1);
  expect(r.stderr).toMatch(new RegExp(`^rlwatch: ${what.source}`));
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
}

/** As a user who may read but not write `dir` (root writes anywhere: then as nobody). */
function asReader(args: string[]): CliResult {
  const root = process.getuid?.() === 0;
  const r = spawnSync(BIN, args, {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined, HOME: '/tmp' },
    ...(root ? { uid: 65534, gid: 65534 } : {}),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('database problems', { timeout: 120_000 }, () => {
  let top: string;
  let runs: string;
  beforeAll(() => {
    top = tempDir();
    runs = join(top, 'runs');
    mkdirSync(join(runs, 'exp1'), { recursive: true });
    writeFileSync(join(runs, 'exp1', 'learning.log'), `${[1, 2, 3].map((i) => learningLine(i)).join('\n')}\n`);
  });

  it('a read-only database can still be queried; writing to it says what to do', () => {
    const dir = join(top, 'readonly');
    const db = join(dir, 'rlwatch.db');
    expect(rlwatch(['backfill', runs, '--db', db]).status).toBe(0);
    for (const d of [top, dir]) chmodSync(d, 0o555);
    chmodSync(db, 0o444);
    const listed = asReader(['runs', '--json', '--db', db]);
    expect(listed.stderr).toBe('');
    expect(JSON.parse(listed.stdout).map((r: { name: string }) => r.name)).toEqual(['exp1']);
    const history = asReader(['reward', 'history', 'exp1', '--db', db, '--json']);
    expect(history.status).toBe(0);
    expect(JSON.parse(history.stdout).points).toHaveLength(3);
    expect(asReader(['alerts', '--db', db]).status).toBe(0);
    expectOneLine(
      asReader(['backfill', runs, '--db', db]),
      /cannot write .*rlwatch\.db .*fix the permissions or pass another --db/,
    );
    chmodSync(top, 0o755);
  });

  it('a read-only database from an older rlwatch says so', () => {
    const dir = join(top, 'old');
    const db = join(dir, 'rlwatch.db');
    expect(rlwatch(['backfill', runs, '--db', db]).status).toBe(0);
    const conn = new Database(db);
    const last = conn.prepare('SELECT max(version) FROM schema_migrations').pluck().get() as number;
    conn.prepare('DELETE FROM schema_migrations WHERE version = ?').run(last);
    conn.close();
    chmodSync(dir, 0o555);
    chmodSync(db, 0o444);
    expectOneLine(
      asReader(['runs', '--db', db]),
      /.*read-only and was written by an older rlwatch .*with write access/,
    );
  });

  it('a file that is not a database gives one line, for reading and for writing commands', () => {
    const db = join(top, 'garbage.db');
    writeFileSync(db, 'this is not a database\n'.repeat(200));
    for (const args of [['runs'], ['alerts'], ['backfill', runs]]) {
      expectOneLine(rlwatch([...args, '--db', db]), /.*garbage\.db is not an rlwatch database or is damaged/);
    }
  });
});
