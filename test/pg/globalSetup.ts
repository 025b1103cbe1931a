import type { TestProject } from 'vitest/node';
import { startPostgres } from './embedded.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** the embedded PostgreSQL of this test run: `postgres://...` of its admin database */
    pgUrl: string;
  }
}

/** One PostgreSQL per test run (test/pg/embedded.ts); tests make their own database from `inject('pgUrl')`
 * (test/pg/pgTest.ts). */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const pg = await startPostgres();
  project.provide('pgUrl', pg.url);
  return () => pg.stop();
}
