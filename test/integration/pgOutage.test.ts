/**
 * A PostgreSQL watcher while its server is out of reach (a network cut, a server restart): the lines written meanwhile
 * are committed once it is back, without waiting for the files to grow again, and the process goes on. The cut is
 * real: the watcher (bin/rlwatch, a process of its own: its thread waits for each statement, so a relay on that
 * thread could never answer) reaches the test run's PostgreSQL through a TCP relay that this test cuts and restores.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureParent, learningLines as lines, tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { rlwatchBackground, exited } from './cli.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A TCP relay to `target`: `cut` ends every connection through it and refuses new ones until `restore`. */
async function relay(target: URL): Promise<{ url: string; cut(): void; restore(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.href,
    cut() {
      refusing = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      refusing = false;
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

describe('a PostgreSQL watcher while the server is out of reach', () => {
  it('commits what was written meanwhile once the server is back, without the files growing again', async () => {
    const url = await freshPgDatabase();
    const net = await relay(new URL(url));
    cleanup.push(() => net.close());
    const root = join(tempDir(), 'runs');
    const log = ensureParent(join(root, 'grpo', 'learning.log'));
    writeFileSync(log, lines(1, 10));
    const config = join(root, '..', 'rlwatch.yaml');
    writeFileSync(config, 'watch:\n  prefix: gpu-a\n');
    const watcher = rlwatchBackground(['start', '--role', 'watcher', '--db', net.url, '--config', config, root]);
    cleanup.push(async () => {
      watcher.child.kill('SIGKILL');
      await exited(watcher.child);
    });
    const db = new pg.Client({ connectionString: url }); // directly, not through the relay
    await db.connect();
    cleanup.push(() => db.end());
    const lastStep = async (): Promise<number> =>
      Number((await db.query<{ s: string | null }>(`SELECT max(last_step)::text AS s FROM runs`)).rows[0]?.s ?? 0);
    await expect.poll(lastStep, { timeout: 20_000 }).toBe(10);

    net.cut();
    appendFileSync(log, lines(11, 20));
    await expect.poll(() => watcher.stderr(), { timeout: 20_000 }).toMatch(/warning: .*127\.0\.0\.1/);
    expect(await lastStep()).toBe(10);
    net.restore();
    await expect.poll(lastStep, { timeout: 20_000 }).toBe(20);
    appendFileSync(log, lines(21, 25)); // and it goes on as before
    await expect.poll(lastStep, { timeout: 20_000 }).toBe(25);
    expect(watcher.child.exitCode).toBe(null);
  }, 90_000);
});
