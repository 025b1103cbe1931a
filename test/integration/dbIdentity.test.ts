/**
 * The real `rlwatch start` on SQLite notices its database deleted or its -wal deleted under it, and stops with one
 * line and exit code 1 instead of writing on into unlinked files.
 */
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { learningLine, tempDir } from '../helpers.ts';
import { BIN } from './cli.ts';

async function waitFor(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** `start` on a run of three lines, until it says it is watching; then `remove` deletes files of its database. */
async function startThenDelete(
  remove: (db: string) => void,
): Promise<{ code: number | null; stderr: string; db: string }> {
  const root = tempDir();
  const runs = join(root, 'runs');
  mkdirSync(join(runs, 'exp1'), { recursive: true });
  writeFileSync(join(runs, 'exp1', 'learning.log'), `${[1, 2, 3].map((i) => learningLine(i)).join('\n')}\n`);
  const db = join(root, 'rlwatch.db');
  const env = {
    ...process.env,
    RLWATCH_DB: undefined,
    RLWATCH_CONFIG: undefined,
    DISCORD_TOKEN: undefined,
    SLACK_BOT_TOKEN: undefined,
    TELEGRAM_BOT_TOKEN: undefined,
  };
  const child = spawn(BIN, ['start', runs, '--db', db], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  try {
    await waitFor('start to watch', () => stderr.includes('Ctrl-C stops'));
    expect(existsSync(`${db}-wal`)).toBe(true);
    remove(db);
    const code = await Promise.race([exit, sleep(30_000).then(() => 'still running' as const)]);
    if (code === 'still running') throw new Error(`start ran on with its database deleted:\n${stderr}`);
    return { code, stderr, db };
  } finally {
    child.kill('SIGKILL');
  }
}

describe('start stops when its database is deleted under it', { timeout: 90_000 }, () => {
  it('the database, its -wal and -shm deleted: one line naming it, exit code 1', async () => {
    const r = await startThenDelete((db) => {
      for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f);
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`rlwatch: the database ${r.db} was deleted while rlwatch ran: stopping`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('only the -wal deleted: one line naming it, exit code 1, the database sound', async () => {
    const r = await startThenDelete((db) => rmSync(`${db}-wal`));
    expect(r.code).toBe(1);
    // SQLite may make a new -wal before the next look: a different file all the same
    const said = r.stderr.split('\n').filter((l) => l.startsWith('rlwatch: '));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      /^rlwatch: the database's write-ahead log \S+ was (deleted|replaced) while rlwatch ran: stopping/,
    );
    expect(said[0]).toContain(`log ${r.db}-wal was`);
    // stopped in time, it leaves the database sound, with the run (it used to end "malformed")
    const db = new Database(r.db, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.prepare('SELECT name FROM runs').pluck().all()).toEqual(['exp1']);
    db.close();
  });
});
