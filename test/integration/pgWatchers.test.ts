/**
 * Many hosts, one PostgreSQL, as users run it: two `rlwatch start --role watcher` processes (two hosts, each with its
 * own `watch.prefix` and run root) and one `--role bot` process, the real bin/rlwatch each, on one PostgreSQL, posting
 * to the fake Discord. Lines are appended while they run; the bot is killed mid-stream (SIGKILL: no clean release)
 * and a new one started. Every line is stored once, and every alert posted once.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { ensureParent, learningLine, tempDir } from '../helpers.ts';
import { firedAlerts, postedPerAlert } from '../pg/alertRows.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { exited, rlwatch, startWithDiscord } from './cli.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** `bin/rlwatch start ARGS` with the fake Discord's settings, ended after the test. */
function start(args: string[], fake: FakeDiscord): { child: ChildProcess; stderr: () => string } {
  const proc = startWithDiscord(args, fake);
  cleanup.push(proc.kill);
  return proc;
}

/** A host: its run root with a config naming its prefix. */
function host(prefix: string): { root: string; config: string } {
  const dir = tempDir(`rlw-${prefix}-`);
  const config = join(dir, 'rlwatch.yaml');
  writeFileSync(config, `watch:\n  prefix: ${prefix}\n`);
  return { root: join(dir, 'runs'), config };
}

/** Appends steps `from`..`to` of one run's learning.log (frac_zero_std 0.95 from `collapseFrom` on: mode collapse). */
function append(log: string, from: number, to: number, collapseFrom = Infinity): void {
  const lines = [];
  for (let i = from; i <= to; i++) lines.push(`${learningLine(i, { frac: i >= collapseFrom ? 0.95 : 0 })}\n`);
  appendFileSync(log, lines.join(''));
}

describe('two watchers and one bot on one PostgreSQL', () => {
  it('stores every line once and posts every alert once, the bot killed and replaced mid-stream', async () => {
    const url = await freshPgDatabase();
    const fake = await startFakeDiscord();
    cleanup.push(() => fake.close());
    const a = host('gpu-a');
    const b = host('gpu-b');
    // the same run name on both hosts: two runs, told apart by their prefixes
    const logs = {
      'gpu-a/grpo': ensureParent(join(a.root, 'grpo', 'learning.log')),
      'gpu-a/ppo': ensureParent(join(a.root, 'ppo', 'learning.log')),
      'gpu-b/grpo': ensureParent(join(b.root, 'grpo', 'learning.log')),
    };
    const collapseAt: Record<string, number> = { 'gpu-a/grpo': 31, 'gpu-a/ppo': Infinity, 'gpu-b/grpo': 51 };
    for (const [run, log] of Object.entries(logs)) append(log, 1, 10, collapseAt[run]);

    const watchers = [a, b].map((h) => start(['--role', 'watcher', '--db', url, '--config', h.config, h.root], fake));
    const bot1 = start(['--role', 'bot', '--db', url], fake);
    await fake.waitFor(() => watchers.every((w) => w.stderr().includes('watching ')), 60_000);

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    cleanup.push(() => db.end());
    /** run name -> the reward series stored, step -> value */
    const rewards = async (): Promise<Map<string, Map<number, number>>> => {
      const { rows } = await db.query<{ name: string; step: string; value: number }>(
        `SELECT r.name, p.step, p.value FROM points p JOIN runs r ON r.id = p.run_id
         JOIN metrics m ON m.id = p.metric_id WHERE m.name = 'reward'`,
      );
      const out = new Map<string, Map<number, number>>();
      for (const r of rows) {
        if (!out.has(r.name)) out.set(r.name, new Map());
        out.get(r.name)!.set(Number(r.step), r.value);
      }
      return out;
    };
    /** outbox rows not delivered yet */
    const open = async (): Promise<number> =>
      (await db.query(`SELECT id FROM outbox WHERE done_at IS NULL AND dead_at IS NULL`)).rowCount ?? 0;
    const stepsOf = async (run: string): Promise<number> => (await rewards()).get(run)?.size ?? 0;

    // the stream, in pieces, each waited for; the bot is killed after the first host's collapse is posted
    let written = 10;
    const upTo = async (to: number): Promise<void> => {
      for (const [run, log] of Object.entries(logs)) append(log, written + 1, to, collapseAt[run]);
      written = to;
      for (const run of Object.keys(logs)) await expect.poll(() => stepsOf(run), { timeout: 30_000 }).toBe(to);
    };
    await upTo(25);
    await upTo(40);
    const posted = (): Map<number, number> => postedPerAlert(fake);
    await fake.waitFor(() => posted().size >= 1, 30_000);
    // killed between deliveries (all it was given delivered): a row it had claimed would wait out its lease (2 min)
    // before the next bot posts it
    await expect.poll(open, { timeout: 30_000 }).toBe(0);
    bot1.child.kill('SIGKILL');
    await exited(bot1.child);
    await upTo(55);
    const bot2 = start(['--role', 'bot', '--db', url], fake);
    await upTo(70);
    await fake.waitFor(() => bot2.stderr().includes('leading: delivering'), 30_000);

    // every line once: each run's reward series is exactly what was written, step by step
    const stored = await rewards();
    expect([...stored.keys()].sort()).toEqual(Object.keys(logs).sort());
    for (const run of Object.keys(logs)) {
      const expected = new Map(Array.from({ length: written }, (_, k) => [k + 1, 0.1 + (k + 1) / 1000]));
      const got = stored.get(run)!;
      expect(got.size).toBe(written);
      for (const [step, value] of expected) expect(got.get(step)).toBeCloseTo(value, 9);
    }

    // every alert that is news on Discord (not info) posted once, and mode collapse on exactly the two collapsed runs
    const { alerts, news } = await firedAlerts(db);
    await fake.waitFor(() => news.every((x) => posted().has(x.id)), 30_000);
    await sleep(1000); // a second chance for any post twice to show
    for (const [id, n] of posted()) expect({ id, n }).toEqual({ id, n: 1 });
    expect([...posted().keys()].sort((x, y) => x - y)).toEqual(news.map((x) => x.id));
    const collapsed = alerts
      .filter((x) => x.rule === 'mode_collapse')
      .map((x) => x.run)
      .sort();
    expect(collapsed).toEqual(['gpu-a/grpo', 'gpu-b/grpo']);
    // and every row queued (cards, their edits, the terminal's lines) delivered in the end
    await expect.poll(open, { timeout: 30_000 }).toBe(0);
    for (const w of watchers) expect(w.stderr()).not.toMatch(/cannot|error/i);
  }, 240_000);

  it('--role all (the default) watches and, holding the bot lock, delivers; a second one only watches', async () => {
    const url = await freshPgDatabase();
    const fake = await startFakeDiscord();
    cleanup.push(() => fake.close());
    const [a, b] = [host('gpu-a'), host('gpu-b')];
    const logs = [
      ensureParent(join(a.root, 'grpo', 'learning.log')),
      ensureParent(join(b.root, 'grpo', 'learning.log')),
    ];
    for (const log of logs) append(log, 1, 10);
    const first = start(['--db', url, '--config', a.config, a.root], fake);
    await fake.waitFor(() => first.stderr().includes('leading: delivering'), 60_000);
    const second = start(['--db', url, '--config', b.config, b.root], fake);
    await fake.waitFor(() => second.stderr().includes('another bot leads on this database: standing by'), 60_000);
    for (const log of logs) append(log, 11, 30, 11); // both runs collapse
    // the second host's alert too is posted once, by the first process
    await fake.waitFor(() => postedPerAlert(fake).size === 2, 60_000);
    expect([...postedPerAlert(fake).values()]).toEqual([1, 1]);
    const cards = fake
      .channelMessages()
      .map((m) => JSON.stringify(m.embeds))
      .join('\n');
    expect(cards).toContain('gpu-a/grpo');
    expect(cards).toContain('gpu-b/grpo');
    expect(second.stderr()).not.toContain('leading: delivering');
  }, 120_000);

  it('a watcher whose server cannot be reached says so in one line, without the password, and exits 1', () => {
    const r = rlwatch(['start', '--role', 'watcher', '--db', 'postgres://ana:s3cret@127.0.0.1:1/rlwatch', tempDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      'rlwatch: cannot open postgres://ana:***@127.0.0.1:1/rlwatch: connect ECONNREFUSED 127.0.0.1:1\n',
    );
  });
});
