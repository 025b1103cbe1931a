import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

/** The test files that use the run's PostgreSQL (they import test/pg/pgTest.ts): only their project starts it, so a
 * unit test file runs without waiting for a database server. */
function pgTestFiles(dir = 'test'): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return pgTestFiles(path);
    return e.name.endsWith('.test.ts') && /from '(?:\.\.?\/)+(?:pg\/)?pgTest\.ts'/.test(readFileSync(path, 'utf8'))
      ? [path]
      : [];
  });
}

const pgFiles = pgTestFiles();

export default defineConfig({
  test: {
    // Integration tests spawn child processes and touch the file system: give them room on 2 cores.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: pgFiles } },
      // one embedded PostgreSQL for the whole run (the PostgreSQL store's tests)
      { extends: true, test: { name: 'pg', include: pgFiles, globalSetup: ['test/pg/globalSetup.ts'] } },
    ],
  },
});
