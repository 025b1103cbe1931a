import { writeFileSync, mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { learningLine, tempDir } from '../helpers.ts';
import { exited, rlwatch, rlwatchBackground } from './cli.ts';

async function waitFor(what: string, cond: () => boolean, ms = 25_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('one writer per database', { timeout: 120_000 }, () => {
  it('a second start or backfill refuses, naming the first; reading commands work beside it; a killed one frees it', async () => {
    const root = tempDir();
    const runs = join(root, 'runs');
    mkdirSync(join(runs, 'exp1'), { recursive: true });
    writeFileSync(join(runs, 'exp1', 'learning.log'), `${[1, 2, 3].map((i) => learningLine(i)).join('\n')}\n`);
    const db = join(root, 'rlwatch.db');
    const first = rlwatchBackground(['start', runs, '--db', db]);
    try {
      await waitFor('the first start', () => first.stderr().includes('watching'));
      const holder = new RegExp(`in use by \`rlwatch start\` \\(pid ${first.child.pid} on ${hostname()}, since `);
      for (const args of [
        ['start', runs],
        ['backfill', runs],
      ]) {
        const second = rlwatch([...args, '--db', db]);
        expect(second.status).toBe(1);
        expect(second.stderr).toMatch(holder);
        expect(second.stderr).not.toMatch(/internal error|\n\s+at /);
      }
      const listed = rlwatch(['runs', '--json', '--db', db]);
      expect(listed.status).toBe(0);
      expect(JSON.parse(listed.stdout).map((r: { name: string }) => r.name)).toEqual(['exp1']);
      expect(rlwatch(['alerts', '--db', db]).status).toBe(0);
    } finally {
      first.child.kill('SIGKILL');
      await exited(first.child);
    }
    const after = rlwatch(['backfill', runs, '--db', db]);
    expect(after.stderr).toBe('');
    expect(after.status).toBe(0);
  });
});
