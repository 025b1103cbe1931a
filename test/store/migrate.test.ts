import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

const STORE = join(import.meta.dirname, '../../src/store/sqlite/store.ts');

/** A process that opens (creating) the database at `db` at the wall-clock instant `at`, and prints `ok`. */
function openAt(db: string, at: number): Promise<{ code: number | null; out: string }> {
  const code = `
    const { Store } = await import(${JSON.stringify(STORE)});
    while (Date.now() < ${at}) {}
    Store.open(${JSON.stringify(db)}).close();
    process.stdout.write('ok');`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: 'pipe' });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((done) => child.on('exit', (c) => done({ code: c, out })));
}

describe('migrations', () => {
  it('a new database opened by several processes at once is created once, without errors', async () => {
    for (let round = 0; round < 1; round++) {
      const db = join(tempDir(), 'new.db');
      const at = Date.now() + 2500; // past the children's start-up, so that they open together
      const results = await Promise.all(Array.from({ length: 6 }, () => openAt(db, at)));
      for (const r of results) expect(r).toEqual({ code: 0, out: 'ok' });
      const store = Store.open(db);
      const versions = store.db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
      store.close();
      expect(versions).toEqual([...new Set(versions)]);
      expect(versions.length).toBeGreaterThanOrEqual(5);
    }
  });
});
