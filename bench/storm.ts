/**
 * An alert storm against the real `rlwatch start` (bin/rlwatch) and a local fake Discord (the real discord.js client):
 * 20 runs log 500 reward functions each, all of which saturate at once (10,000 `reward_saturated` alerts) while
 * Discord answers every post and edit 429 for 25 s; then they all vary again (10,000 resolutions). Figures: alerts
 * raised, channel messages posted and edited, peak RSS of the rlwatch process (goal < 600 MB), and how long
 * `/run status` through the fake takes to be answered during the storm (goal < 3 s, Discord's limit).
 *
 * Alone: BENCH_ONLY=storm npm run bench. Smaller: BENCH_STORM_RUNS, BENCH_STORM_FNS, BENCH_STORM_LIMIT_SECONDS.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { startFakeDiscord, type RecordedRequest } from '../test/fakes/discordServer.ts';
import { bareEnv } from './proc.ts';

export const STORM_RSS_TARGET_MB = 600;
export const STORM_COMMAND_TARGET_MS = 3000;

const ASKER = { id: '222222222222222222', username: 'bo' };
const RLWATCH = join(import.meta.dirname, '..', 'bin', 'rlwatch');
/** steps every function varies over before the storm (the saturation rule learns each one's max: 1) */
const HEALTHY = 20;
/** steps at the max with std 0: `reward_saturated` fires on the third */
const SATURATED = 5;
/** steps varying again: it resolves on the third */
const RECOVERED = 5;

export interface StormResult {
  runs: number;
  functions: number;
  limitSeconds: number;
  alerts: number;
  resolved: number;
  /** channel messages the fake accepted (HTTP 200), and those it answered 429 */
  posts: number;
  edits: number;
  /** thread replies saying that shown alerts resolved */
  replies: number;
  refused: number;
  /** the storm's posts and edits until every notification was delivered */
  stormPosts: number;
  stormEdits: number;
  peakRssMB: number;
  /** RSS once the storm was delivered and the charts had 10 s to go out */
  settledRssMB: number;
  commands: number;
  commandMaxMs: number;
  commandP50Ms: number;
  /** commands that got no answer within Discord's 3 s */
  commandsLate: number;
  /** when the late ones were asked (seconds after the storm's lines were appended), and how long they took */
  commandsLateAt: string[];
  /** the first few commands that got no answer at all, and why */
  commandFailures: string[];
  deliveredSeconds: number;
  pass: { messages: boolean; rss: boolean; command: boolean };
}

/** One line of a run's metrics.jsonl: every function's mean and its std across the batch. */
function line(step: number, fns: number, std: number): string {
  const values: Record<string, number> = { step };
  for (let k = 0; k < fns; k++) {
    values[`rewards/fn${k}/mean`] = 1;
    values[`rewards/fn${k}/std`] = std;
  }
  return `${JSON.stringify(values)}\n`;
}

const vm = (pid: number, field: 'VmRSS' | 'VmHWM'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

const toChannel = (r: RecordedRequest): boolean => r.method === 'POST' && /^\/channels\/\d+\/messages$/.test(r.path);
/** a thread reply says that alerts resolved; a post is a message of cards */
const isReply = (r: RecordedRequest): boolean =>
  toChannel(r) && !Array.isArray(r.body) && r.body?.message_reference !== undefined;
const isPost = (r: RecordedRequest): boolean => toChannel(r) && !isReply(r);
const isEdit = (r: RecordedRequest): boolean => r.method === 'PATCH' && /^\/channels\/\d+\/messages\/\d+$/.test(r.path);

export async function runStorm(dir: string): Promise<StormResult> {
  const envInt = (name: string, dflt: number): number => Number(process.env[name]) || dflt;
  const runs = envInt('BENCH_STORM_RUNS', 20);
  const fns = envInt('BENCH_STORM_FNS', 500);
  const limitSeconds = envInt('BENCH_STORM_LIMIT_SECONDS', 25);
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'runs');
  const files = Array.from({ length: runs }, (_, r) => join(root, `run${String(r).padStart(2, '0')}`, 'metrics.jsonl'));
  for (const f of files) {
    mkdirSync(join(f, '..'), { recursive: true });
    writeFileSync(f, Array.from({ length: HEALTHY }, (_, s) => line(s + 1, fns, 0.1)).join(''));
  }
  const dbPath = join(dir, 'rlwatch.db');
  const fake = await startFakeDiscord();
  const env = {
    ...bareEnv(),
    DISCORD_TOKEN: fake.token,
    DISCORD_API_URL: fake.apiUrl,
    DISCORD_GUILD_ID: fake.guildId,
    DISCORD_CHANNEL_ID: fake.channelId,
  };
  const child = spawn(process.execPath, [RLWATCH, '--db', dbPath, 'start', root], {
    cwd: dir,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const pid = child.pid!;
  const db = (): Database.Database => new Database(dbPath, { readonly: true, fileMustExist: true });
  const scalar = (sql: string): number => {
    const d = db();
    try {
      return Number(d.prepare(sql).pluck().get() ?? 0);
    } finally {
      d.close();
    }
  };
  const until = async (what: string, ok: () => boolean, timeoutMs: number): Promise<void> => {
    const deadline = performance.now() + timeoutMs;
    while (!ok()) {
      if (child.exitCode !== null) throw new Error(`rlwatch start exited: ${stderr}`);
      if (performance.now() > deadline) throw new Error(`storm bench: ${what} timed out; rlwatch said: ${stderr}`);
      await sleep(200);
    }
  };
  try {
    await until('connecting', () => stderr.includes('discord: connected'), 60_000);
    await until(
      'the healthy steps',
      () => {
        try {
          return scalar(`SELECT count(*) FROM runs WHERE last_step >= ${HEALTHY}`) === runs;
        } catch {
          return false; // the schema not made yet
        }
      },
      120_000,
    );

    // the storm: every function of every run at its max with std 0, while Discord answers 429
    const t0 = performance.now();
    fake.rateLimitChannelsUntil(Date.now() + limitSeconds * 1000);
    for (const f of files) {
      appendFileSync(f, Array.from({ length: SATURATED }, (_, s) => line(HEALTHY + s + 1, fns, 0)).join(''));
    }
    let peak = 0;
    const latencies: number[] = [];
    const failures: string[] = [];
    const late: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, vm(pid, 'VmRSS'));
        await sleep(100);
      }
    })();
    const asking = (async () => {
      for (let k = 0; sampling; k++) {
        const at = performance.now();
        const run = `run${String(k % runs).padStart(2, '0')}`;
        try {
          await fake.command({ name: 'run', subcommand: 'status', options: { run }, user: ASKER, timeoutMs: 30_000 });
          const took = performance.now() - at;
          latencies.push(took);
          if (took >= STORM_COMMAND_TARGET_MS)
            late.push(`${((at - t0) / 1000).toFixed(0)} s in: ${took.toFixed(0)} ms`);
        } catch (err) {
          latencies.push(Infinity);
          const said = stderr
            .split('\n')
            .filter((l) => /interaction|discord/i.test(l))
            .slice(-2)
            .join(' / ');
          failures.push(
            `${((at - t0) / 1000).toFixed(0)} s into the storm: ${(err as Error).message}; rlwatch: ${said}`,
          );
        }
        await sleep(1000);
      }
    })();
    const alerts = runs * fns;
    const open = `SELECT count(*) FROM outbox WHERE done_at IS NULL AND dead_at IS NULL`;
    await until(
      "the storm's alerts",
      () => scalar(`SELECT count(*) FROM alerts WHERE state = 'firing'`) >= alerts,
      300_000,
    );
    await until(
      "the storm's delivery",
      () => scalar(open) === 0 && performance.now() - t0 > limitSeconds * 1000,
      600_000,
    );
    const deliveredSeconds = (performance.now() - t0) / 1000;
    const stormPosts = fake.requests.filter((r) => isPost(r) && r.status === 200).length;
    const stormEdits = fake.requests.filter((r) => isEdit(r) && r.status === 200).length;

    // they all vary again: 10,000 resolutions, each an edit at most of the message that shows it
    for (const f of files) {
      appendFileSync(
        f,
        Array.from({ length: RECOVERED }, (_, s) => line(HEALTHY + SATURATED + s + 1, fns, 0.1)).join(''),
      );
    }
    await until(
      'the resolutions',
      () => scalar(`SELECT count(*) FROM alerts WHERE state = 'resolved'`) >= alerts,
      300_000,
    );
    await until('their delivery', () => scalar(open) === 0, 600_000);
    await sleep(10_000); // the charts being attached by edits
    const settledRssMB = vm(pid, 'VmRSS');
    sampling = false;
    await Promise.all([sampler, asking]);
    const peakRssMB = Math.max(peak, vm(pid, 'VmHWM'));
    const posts = fake.requests.filter((r) => isPost(r) && r.status === 200).length;
    const edits = fake.requests.filter((r) => isEdit(r) && r.status === 200).length;
    const replies = fake.requests.filter((r) => isReply(r) && r.status === 200).length;
    const refused = fake.requests.filter((r) => (toChannel(r) || isEdit(r)) && r.status === 429).length;
    const sorted = [...latencies].sort((a, b) => a - b);
    const commandMaxMs = sorted[sorted.length - 1] ?? Infinity;
    return {
      runs,
      functions: fns,
      limitSeconds,
      alerts: scalar('SELECT count(*) FROM alerts'),
      resolved: scalar(`SELECT count(*) FROM alerts WHERE state = 'resolved'`),
      posts,
      edits,
      replies,
      refused,
      stormPosts,
      stormEdits,
      peakRssMB,
      settledRssMB,
      commands: latencies.length,
      commandMaxMs,
      commandP50Ms: sorted[sorted.length >> 1] ?? Infinity,
      commandsLate: latencies.filter((l) => l >= STORM_COMMAND_TARGET_MS).length,
      commandFailures: failures.slice(0, 5),
      commandsLateAt: late,
      deliveredSeconds,
      pass: {
        messages: posts + edits <= 200,
        rss: peakRssMB < STORM_RSS_TARGET_MB,
        command: commandMaxMs < STORM_COMMAND_TARGET_MS,
      },
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((done) => (child.exitCode !== null ? done(null) : child.once('exit', done)));
    await fake.close();
  }
}

export function formatStormReport(r: StormResult): string {
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');
  const ms = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : 'never');
  const rows: Array<[string, string, string, string]> = [
    [
      `alert storm (${r.runs} runs × ${r.functions} reward functions)`,
      `${r.alerts.toLocaleString('en')} alerts raised, ${r.resolved.toLocaleString('en')} resolved; Discord 429 for the first ${r.limitSeconds} s`,
      '',
      '',
    ],
    [
      '  channel messages (cards)',
      `${r.posts} posted + ${r.edits} edited (the storm: ${r.stormPosts} + ${r.stormEdits}, delivered in ${r.deliveredSeconds.toFixed(0)} s); ${r.replies} thread replies; ${r.refused} answered 429`,
      '<= 200',
      verdict(r.pass.messages),
    ],
    [
      '  peak RSS of rlwatch start',
      `${r.peakRssMB.toFixed(0)} MB (${r.settledRssMB.toFixed(0)} MB once delivered)`,
      `< ${STORM_RSS_TARGET_MB} MB`,
      verdict(r.pass.rss),
    ],
    [
      '  /run status during the storm',
      `max ${ms(r.commandMaxMs)}, p50 ${ms(r.commandP50Ms)} (${r.commands} asked, ${r.commandsLate} over 3 s)`,
      `< ${STORM_COMMAND_TARGET_MS} ms`,
      verdict(r.pass.command),
    ],
  ];
  const width = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]!.length)));
  return `${rows
    .map((row) =>
      row
        .map((c, i) => c.padEnd(width[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}
