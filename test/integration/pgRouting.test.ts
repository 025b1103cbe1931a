/**
 * Routing at delivery on one PostgreSQL, as users run it: two `rlwatch start --role watcher` processes with no chat
 * settings at all (a training node holds no Discord token) and a `--role bot` holding the fake Discord's, the real
 * bin/rlwatch each. The watchers queue platform-neutral rows; the bot routes and posts them. The bot is SIGKILLed
 * while a post of its is on its way (it holds that row's lease), and the standby bot that takes the lock posts the
 * rows of the gap at once, not once the dead one's leases ran out (2 minutes); every alert once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { LEASE_MS } from '../../src/notify/dispatcher.ts';
import { ROUTED } from '../../src/store/outbox.ts';
import { startFakeDiscord } from '../fakes/discordServer.ts';
import { ensureParent, learningLine, tempDir } from '../helpers.ts';
import { firedAlerts, postedPerAlert } from '../pg/alertRows.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { BIN, exited, startWithDiscord } from './cli.ts';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** Variables that configure a chat platform: none reaches a watcher. */
const CHAT_ENV = /^(DISCORD|SLACK|TELEGRAM|EMAIL|SMTP|WEBHOOK|TEAMS|MATTERMOST|FEISHU)_/;

/** `bin/rlwatch start ARGS` with no chat platform's settings; `at(text)` says when its stderr first said `text`. */
function watcher(args: string[]): { child: ChildProcess; stderr: () => string } {
  const env: NodeJS.ProcessEnv = { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined };
  for (const k of Object.keys(env)) if (CHAT_ENV.test(k)) delete env[k];
  const child = spawn(BIN, ['start', ...args], { cwd: tempDir(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  cleanup.push(async () => {
    child.kill('SIGKILL');
    await exited(child);
  });
  return { child, stderr: () => err };
}

/** A host: its run root with a config naming its prefix (and nothing of chat). */
function host(prefix: string): { root: string; config: string } {
  const dir = tempDir(`rlw-${prefix}-`);
  const config = join(dir, 'rlwatch.yaml');
  writeFileSync(config, `watch:\n  prefix: ${prefix}\n`);
  return { root: join(dir, 'runs'), config };
}

/** Appends steps `from`..`to` of one run's learning.log (frac_zero_std 0.95 from `collapseFrom` on: mode collapse). */
function append(log: string, from: number, to: number, collapseFrom: number): void {
  const lines = [];
  for (let i = from; i <= to; i++) lines.push(`${learningLine(i, { frac: i >= collapseFrom ? 0.95 : 0 })}\n`);
  appendFileSync(log, lines.join(''));
}

describe('routing at delivery: watchers without chat settings, one bot, a takeover', () => {
  it('posts every alert once; the standby bot posts the gap at once after the leader dies holding leases', async () => {
    const url = await freshPgDatabase();
    const fake = await startFakeDiscord();
    cleanup.push(() => fake.close());
    const [a, b] = [host('gpu-a'), host('gpu-b')];
    const logs = {
      'gpu-a/grpo': ensureParent(join(a.root, 'grpo', 'learning.log')),
      'gpu-a/ppo': ensureParent(join(a.root, 'ppo', 'learning.log')),
      'gpu-b/grpo': ensureParent(join(b.root, 'grpo', 'learning.log')),
    };
    // gpu-a/grpo collapses while the first bot leads, gpu-b/grpo as it dies, gpu-a/ppo in the gap
    const collapseAt: Record<string, number> = { 'gpu-a/grpo': 31, 'gpu-b/grpo': 51, 'gpu-a/ppo': 61 };
    for (const [run, log] of Object.entries(logs)) append(log, 1, 10, collapseAt[run]!);

    const watchers = [a, b].map((h) => watcher(['--role', 'watcher', '--db', url, '--config', h.config, h.root]));
    const bot1 = startWithDiscord(['--role', 'bot', '--db', url], fake);
    cleanup.push(bot1.kill);
    await fake.waitFor(() => watchers.every((w) => w.stderr().includes('watching ')), 60_000);
    await fake.waitFor(() => bot1.stderr().includes('leading: delivering'), 60_000);
    // the standby, with the same settings; when its stderr says it leads
    const bot2 = startWithDiscord(['--role', 'bot', '--db', url], fake);
    cleanup.push(bot2.kill);
    let ledAt = 0;
    bot2.child.stderr!.on('data', (d: Buffer) => {
      if (ledAt === 0 && d.toString().includes('leading: delivering')) ledAt = Date.now();
    });
    await fake.waitFor(() => bot2.stderr().includes('standing by to take over'), 60_000);

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    cleanup.push(() => db.end());
    const stepsOf = async (run: string): Promise<number> =>
      Number(
        (
          await db.query<{ n: string }>(
            `SELECT count(*) AS n FROM points p JOIN runs r ON r.id = p.run_id JOIN metrics m ON m.id = p.metric_id
         WHERE m.name = 'reward' AND r.name = $1`,
            [run],
          )
        ).rows[0]!.n,
      );
    const open = async (): Promise<number> =>
      (await db.query(`SELECT id FROM outbox WHERE done_at IS NULL AND dead_at IS NULL`)).rowCount ?? 0;
    let written = 10;
    const upTo = async (to: number): Promise<void> => {
      for (const [run, log] of Object.entries(logs)) append(log, written + 1, to, collapseAt[run]!);
      written = to;
      for (const run of Object.keys(logs)) await expect.poll(() => stepsOf(run), { timeout: 30_000 }).toBe(to);
    };
    const posted = (): Map<number, number> => postedPerAlert(fake);

    await upTo(40);
    await fake.waitFor(() => posted().size >= 1, 30_000);
    await expect.poll(open, { timeout: 30_000 }).toBe(0);

    // the first card of gpu-b/grpo is held on its way: the bot holds its row's lease (and its run's next rows wait
    // behind it) when it is killed
    const hold = fake.holdNext('POST', /^\/channels\/\d+\/messages$/, (r) =>
      JSON.stringify(r.body).includes('gpu-b/grpo'),
    );
    cleanup.push(() => hold.release()); // after the checks (cleanup runs in reverse): a post of the dead bot's
    await upTo(55);
    await hold.arrived;
    const leased = await db.query(`SELECT id FROM outbox WHERE done_at IS NULL AND claimed_until > $1`, [Date.now()]);
    expect(leased.rowCount).toBeGreaterThan(0);
    bot1.child.kill('SIGKILL');
    await exited(bot1.child);
    await upTo(70); // gpu-a/ppo collapses while no bot leads (or just as the standby takes over)

    // the alerts that are news (not info, not a symptom the run's mode_collapse holds back), as the database has them
    const { news } = await firedAlerts(db);
    const gap = news.filter((x) => x.severity === 'critical' && x.run !== 'gpu-a/grpo');
    expect(gap.map((x) => `${x.run} ${x.rule}`).sort()).toEqual([
      'gpu-a/ppo mode_collapse',
      'gpu-b/grpo mode_collapse',
    ]);

    await fake.waitFor(() => gap.every((x) => posted().has(x.id)), LEASE_MS / 2);
    const tookMs = Date.now() - ledAt;
    expect(ledAt).toBeGreaterThan(0);
    console.log(`the gap's criticals posted ${tookMs} ms after the standby said it leads`);
    expect(tookMs).toBeLessThan(30_000); // the dead leader's lease would hold them 2 minutes

    await fake.waitFor(() => news.every((x) => posted().has(x.id)), 30_000);
    await expect.poll(open, { timeout: 30_000 }).toBe(0);
    await sleep(1000); // a second chance for any post twice to show
    for (const [id, n] of posted()) expect({ id, n }).toEqual({ id, n: 1 });
    expect([...posted().keys()].sort((x, y) => x - y)).toEqual(news.map((x) => x.id));

    // the watchers wrote platform-neutral rows only; the bots routed each into the channel's and the terminal's rows
    const targets = (await db.query<{ target: string }>('SELECT DISTINCT target FROM outbox ORDER BY target')).rows;
    expect(targets.map((t) => t.target).sort()).toEqual(['console', `discord:${fake.channelId}`, ROUTED].sort());
    for (const w of watchers) expect(w.stderr()).not.toMatch(/cannot|error|chat platform/i);
  }, 300_000);
});
