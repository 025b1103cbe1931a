/**
 * `rlwatch start --role bot` as a user runs it: the real bin/rlwatch as a child process, on the test run's
 * PostgreSQL, posting to the fake Discord. The outbox rows are written through PgStore as a watcher's engine
 * writes them. One bot leads; a second stands by and takes over when the first is killed.
 */
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startBot as startBotInProcess } from '../../src/app/bot.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { silentLog } from '../../src/lib/log.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { tempDir } from '../helpers.ts';
import { exited, rlwatch, startWithDiscord } from '../integration/cli.ts';
import { discordOf, enqueueAlerts, postedPerAlert } from '../pg/alertRows.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const ANA = { id: '111111111111111111', username: 'ana', globalName: 'Ana Lima' };
const clean = {
  RLWATCH_DB: undefined,
  RLWATCH_CONFIG: undefined,
  SLACK_BOT_TOKEN: undefined,
  TELEGRAM_BOT_TOKEN: undefined,
};

/** `rlwatch start --role bot --db URL` with the fake Discord's token and channel; its stderr is kept. */
function startBot(url: string, fake: FakeDiscord): { child: ChildProcess; stderr: () => string } {
  const bot = startWithDiscord(['--role', 'bot', '--db', url], fake);
  cleanup.push(bot.kill);
  return bot;
}

/** Every alert posted exactly once: the ids posted, each with one card. */
function postedOnce(fake: FakeDiscord): number[] {
  const posted = postedPerAlert(fake);
  const twice = [...posted].filter(([, n]) => n > 1);
  if (twice.length > 0) throw new Error(`posted more than once: ${JSON.stringify(twice)}`);
  return [...posted.keys()].sort((a, b) => a - b);
}

/** A fresh database with the store a watcher writes through, and the fake Discord. */
async function onePgAndDiscord(): Promise<{ url: string; fake: FakeDiscord; store: PgStore }> {
  const url = await freshPgDatabase();
  const fake = await startFakeDiscord();
  cleanup.push(() => fake.close());
  const store = await PgStore.open(url);
  cleanup.push(() => store.close());
  return { url, fake, store };
}

describe('rlwatch start --role bot', () => {
  it('delivers what watchers queued, once; killed, the bot standing by takes over, repeating no post', async () => {
    const { url, fake, store } = await onePgAndDiscord();
    const first = await enqueueAlerts(store, fake, 5);

    const a = startBot(url, fake);
    await fake.waitFor(() => postedOnce(fake).length === first.length, 30_000);
    expect(postedOnce(fake)).toEqual(first);
    await expect.poll(async () => (await store.outbox.open()).length, { timeout: 10_000 }).toBe(0);
    await fake.waitFor(() => a.stderr().includes('leading: delivering notifications and answering chat'), 10_000);

    const b = startBot(url, fake);
    await fake.waitFor(() => b.stderr().includes('another bot leads on this database: standing by'), 30_000);
    a.child.kill('SIGKILL');
    await exited(a.child);
    const after = await enqueueAlerts(store, fake, 5);
    await fake.waitFor(() => postedOnce(fake).length === first.length + after.length, 30_000);
    expect(postedOnce(fake)).toEqual([...first, ...after]);
    // its stderr comes through a pipe, which the test may read after the HTTP posts that followed it
    await fake.waitFor(() => b.stderr().includes('leading: delivering notifications and answering chat'), 10_000);
    await expect.poll(async () => (await store.outbox.open()).length, { timeout: 10_000 }).toBe(0); // each marked done

    // the leader answers chat from PostgreSQL: a command, and an Ack click that edits its card in place
    const list = await fake.command({ name: 'alerts', user: ANA, timeoutMs: 10_000 });
    expect(JSON.stringify(list.callback?.data)).toContain(`${first.length + after.length} firing alerts`);
    const card = fake.channelMessages().find((m) => JSON.stringify(m.components).includes(`"ack:${after[0]}"`))!;
    const click = await fake.click({ customId: `ack:${after[0]}`, messageId: card.id, user: ANA, timeoutMs: 10_000 });
    expect(click.callback?.type).toBe(7);
    expect(await store.alerts.byId(after[0]!)).toMatchObject({ acked_by: '@ana', acked_by_name: 'Ana Lima' });
    expect(JSON.stringify(fake.messages.get(card.id)!.embeds)).toContain('Acked by Ana Lima');

    b.child.kill('SIGTERM'); // a clean stop: the lock is released, the process exits 0
    await exited(b.child);
    expect(b.child.exitCode).toBe(0);
  }, 120_000);

  it('its lock session ended by the server, the bot stands by and leads again; what follows goes once', async () => {
    const { url, fake, store } = await onePgAndDiscord();
    const first = await enqueueAlerts(store, fake, 3);
    const a = startBot(url, fake);
    await fake.waitFor(() => postedOnce(fake).length === first.length, 30_000);
    await expect.poll(async () => (await store.outbox.open()).length, { timeout: 10_000 }).toBe(0);
    // what a server restart or an administrator does to the session holding the lock
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'`);
    await admin.end();
    const lost = 'lost the bot lock (the database ended its session): standing by';
    await fake.waitFor(() => a.stderr().includes(lost), 10_000);
    const after = await enqueueAlerts(store, fake, 3);
    await fake.waitFor(() => postedOnce(fake).length === first.length + after.length, 30_000);
    expect(postedOnce(fake)).toEqual([...first, ...after]);
    const leads = (): number => a.stderr().match(/leading: delivering/g)?.length ?? 0;
    await fake.waitFor(() => leads() >= 2, 10_000); // stderr's pipe may be read after the posts that followed it
    expect(leads()).toBe(2);
  }, 120_000);

  it('posts what another process queues, and edits the card a CLI ack changed, when announced, not on its sweep', async () => {
    const { url, fake, store } = await onePgAndDiscord();
    const config = ConfigSchema.parse({});
    // an hour between sweeps: within this test, only the announcement can bring the rows out
    const bot = await startBotInProcess({
      db: url,
      config,
      log: silentLog,
      platforms: { discord: discordOf(fake) },
      terminal: null,
      tickMs: 3_600_000,
    });
    cleanup.push(() => bot.stop());
    const ids = await enqueueAlerts(store, fake, 3);
    await fake.waitFor(() => postedOnce(fake).length === ids.length, 30_000);
    expect(postedOnce(fake)).toEqual(ids);
    const more = await enqueueAlerts(store, fake, 2);
    await fake.waitFor(() => postedOnce(fake).length === ids.length + more.length, 30_000);
    expect(postedOnce(fake)).toEqual([...ids, ...more]);

    // `rlwatch ack` run on another machine: its card update is announced too, and the card edited in place
    const ack = rlwatch(['ack', String(ids[0]), 'on it', '--by', 'ana', '--db', url], { cwd: tempDir(), env: clean });
    expect(ack.status).toBe(0);
    const card = fake.channelMessages().find((m) => JSON.stringify(m.components).includes(`"ack:${ids[0]}"`))!;
    await fake.waitFor(() => JSON.stringify(fake.messages.get(card.id)!.embeds).includes('Acked by ana'), 30_000);
    expect(postedOnce(fake)).toEqual([...ids, ...more]); // an edit, no new post
  }, 90_000);

  it('refuses --role bot and --role watcher on a SQLite file, and an unknown role, with one clear line', async () => {
    for (const role of ['bot', 'watcher']) {
      const onFile = rlwatch(['start', '--role', role, '--db', 'x.db'], { cwd: tempDir(), env: clean });
      expect(onFile.status).toBe(1);
      expect(onFile.stderr).toBe(
        `rlwatch: --role ${role} needs a PostgreSQL --db: on SQLite one \`rlwatch start\` watches and delivers\n`,
      );
    }
    const unknown = rlwatch(['start', '--role', 'both', '--db', 'x.db', tempDir()], { cwd: tempDir(), env: clean });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toBe('rlwatch: --role both: expected all, bot or watcher\n');
  }, 30_000);
});
