import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests spawn child processes and touch the file system: give them room on 2 cores.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // one embedded PostgreSQL for the whole run (the PostgreSQL store's tests)
    globalSetup: ['test/pg/globalSetup.ts'],
  },
});
