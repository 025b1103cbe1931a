/**
 * Many hosts, one PostgreSQL, as users run it: WATCHERS `rlwatch start --role watcher` processes (the real
 * bin/rlwatch, each with its own prefix and run root) and one `--role bot` posting to a local fake Discord, on a
 * throwaway embedded PostgreSQL (fsync off: test/pg/embedded.ts). RUNS runs in all grow at PER_SEC lines/s each. Once
 * a second one run's line carries a gradient spike: its alert's card reaching the fake is line → chat. Line → commit
 * is a run's `last_step` reaching the line, polled every POLL_MS. CPU is each process's own, from /proc.
 * BENCH_PG_WATCHERS_SECONDS sets the appending window (default 20); `statementsTo` (BENCH_PG_STATEMENTS=1) writes the
 * statements that took PostgreSQL the most time (pg_stat_statements) to that file; `profileTo` (BENCH_CPU_PROF=1)
 * writes each process's V8 CPU profile there, in a folder of its own (`pg-bot`, `pg-w0` ...).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { LEASE_MS } from '../src/notify/dispatcher.ts';
import { startFakeDiscord, type FakeDiscord, type RecordedRequest } from '../test/fakes/discordServer.ts';
import { startPostgres } from '../test/pg/embedded.ts';
import { learningLine } from '../test/learningLines.ts';
import { percentile } from './live.ts';
import { bareEnv, cpuSeconds, cpuSecondsOfAll } from './proc.ts';

export const PG_CHAT_P99_TARGET_MS = 1000;
const WATCHERS = 3;
const RUNS = 100;
const PER_SEC = 5;
const INITIAL = 30;
const POLL_MS = 10;
const SPIKE_GRAD = 15.786;
const RLWATCH = join(import.meta.dirname, '..', 'bin', 'rlwatch');

export interface PgWatchersResult {
  watchers: number;
  runs: number;
  perSec: number;
  seconds: number;
  appended: number;
  committed: number;
  pointsPerSec: number;
  commitP50Ms: number;
  commitP99Ms: number;
  spikes: number;
  posted: number;
  chatP50Ms: number;
  chatP99Ms: number;
  /** line → the first request carrying the card's chart: a card is posted at once and its chart attached by an edit
   * once drawn */
  chartP50Ms: number;
  chartP99Ms: number;
  /** the slowest spikes, slowest first: p99 over 20 spikes is the slowest one, and its step says what else was
   * going on (steps 50 and 100 are epochs 0.5 and 1.0: every run's milestone alerts and reports at once) */
  slowestSpikes: Array<{ run: string; step: number; commitMs: number; chatMs: number }>;
  /** outbox rows the watchers queued while lines were appended, those of them the bot delivered by the end, and
   * how long those waited (queued → delivered): line → chat beyond line → commit is this queue */
  outboxQueued: number;
  outboxDone: number;
  outboxWaitP50Ms: number;
  outboxWaitMaxMs: number;
  /** the same for the rows holding a critical alert (outbox urgency 2): what the claim hands out first. A row that
   * waited takes in its run's next items (`Outbox.add`): its wait counts from its first item, maybe a warning's */
  criticalQueued: number;
  criticalDone: number;
  criticalWaitP50Ms: number;
  criticalWaitMaxMs: number;
  /** where a critical row's time went, p50 and max of its delivered rows, from its first critical item: queued → its
   * step seen committed (the watcher's transaction; only rows made for that item), → claimed (NOTIFY, wake-up, a free
   * slot, the claim), → its card's request at the fake (render, post), → marked delivered; and committed → delivered */
  criticalStages: CriticalStages;
  /** CPU seconds per wall second of each watcher, and of the bot (1 = one core) */
  watcherCpu: number[];
  botCpu: number;
  /** the PostgreSQL server's, all its processes (this machine's other PostgreSQL servers too, if any) */
  postgresCpu: number;
  pass: boolean;
}

/** `bin/rlwatch start ARGS` with the fake Discord's settings and nothing else of the environment's chat settings. */
class Proc {
  readonly child: ChildProcess;
  stderr = '';
  constructor(args: string[], cwd: string, fake: FakeDiscord, profileTo?: string) {
    const env = {
      ...bareEnv(),
      DISCORD_TOKEN: fake.token,
      DISCORD_API_URL: fake.apiUrl,
      DISCORD_GUILD_ID: fake.guildId,
      DISCORD_CHANNEL_ID: fake.channelId,
    };
    const prof = profileTo ? ['--cpu-prof', '--cpu-prof-dir', profileTo] : [];
    this.child = spawn(process.execPath, [...prof, RLWATCH, 'start', ...args], {
      cwd,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4000)));
  }

  cpuSeconds(): number {
    return cpuSeconds(this.child.pid!);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

const cardOf = (r: RecordedRequest): string => JSON.stringify(Array.isArray(r.body) ? null : (r.body?.embeds ?? null));

export async function runPgWatchers(opts: {
  dir: string;
  seconds?: number;
  profileTo?: string;
  statementsTo?: string;
}): Promise<PgWatchersResult> {
  const seconds = opts.seconds ?? 20;
  const { dir } = opts;
  rmSync(dir, { recursive: true, force: true });
  const server = await startPostgres({ statements: opts.statementsTo !== undefined });
  const fake = await startFakeDiscord();
  const procs: Proc[] = [];
  try {
    const url = new URL(server.url);
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE bench_watchers');
    await admin.end();
    url.pathname = '/bench_watchers';
    const db = url.href;
    if (opts.statementsTo) await query(db, 'CREATE EXTENSION pg_stat_statements');

    // the runs, spread over the hosts: host h's run i is named w<h>/run<i>
    const runs: Array<{ name: string; path: string }> = [];
    const roots: string[] = [];
    for (let h = 0; h < WATCHERS; h++) {
      const hostDir = join(dir, `w${h}`);
      roots.push(join(hostDir, 'runs'));
      mkdirSync(roots[h]!, { recursive: true });
      writeFileSync(join(hostDir, 'rlwatch.yaml'), `watch:\n  prefix: w${h}\n`);
    }
    for (let i = 0; i < RUNS; i++) {
      const h = i % WATCHERS;
      const path = join(roots[h]!, `run${String(i).padStart(3, '0')}`, 'learning.log');
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, Array.from({ length: INITIAL }, (_, k) => `${learningLine(k + 1)}\n`).join(''));
      runs.push({ name: `w${h}/run${String(i).padStart(3, '0')}`, path });
    }
    const watchers = roots.map(
      (root, h) =>
        new Proc(
          ['--role', 'watcher', '--db', db, '--config', 'rlwatch.yaml', root],
          join(dir, `w${h}`),
          fake,
          opts.profileTo && join(opts.profileTo, `pg-w${h}`),
        ),
    );
    procs.push(...watchers);
    const bot = new Proc(['--role', 'bot', '--db', db], dir, fake, opts.profileTo && join(opts.profileTo, 'pg-bot'));
    procs.push(bot);

    const reader = new pg.Client({ connectionString: db });
    await reader.connect();
    const lastSteps = async (): Promise<Map<string, number>> => {
      try {
        const { rows } = await reader.query<{ name: string; last_step: string | null }>(
          'SELECT name, last_step FROM runs',
        );
        return new Map(rows.map((r) => [r.name, Number(r.last_step ?? 0)]));
      } catch {
        return new Map(); // the schema not made yet
      }
    };
    const deadline = performance.now() + 180_000;
    for (;;) {
      const steps = await lastSteps();
      if (runs.every((r) => (steps.get(r.name) ?? 0) >= INITIAL) && bot.stderr.includes('leading')) break;
      const dead = procs.find((p) => p.child.exitCode !== null);
      if (dead || performance.now() > deadline) throw new Error(`not caught up: ${dead?.stderr ?? 'timeout'}`);
      await sleep(200);
    }
    await sleep(2000); // past the catch-up's last evaluations and the first tick's posts
    const countPoints = async (): Promise<number> =>
      Number((await reader.query<{ n: string }>('SELECT count(*)::text AS n FROM points')).rows[0]!.n);

    const sent = runs.map(() => [] as number[]); // per run: when each step after INITIAL was appended
    const seen = runs.map(() => INITIAL);
    const index = new Map(runs.map((r, i) => [r.name, i]));
    const commits: number[] = [];
    const committedAt = new Map<string, number>(); // `run:step` → Date.now() of the poll that first saw it
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const now = performance.now();
        const wallNow = Date.now();
        for (const [name, last] of await lastSteps()) {
          const i = index.get(name);
          if (i === undefined) continue;
          for (let s = seen[i]! + 1; s <= last; s++) {
            const at = sent[i]![s - INITIAL - 1];
            if (at !== undefined) commits.push(now - at);
            committedAt.set(`${name}:${s}`, wallNow);
          }
          seen[i] = Math.max(seen[i]!, last);
        }
        await sleep(POLL_MS);
      }
    })();

    const spikes: Array<{ run: string; step: number; at: number }> = [];
    const points0 = await countPoints();
    const cpu0 = procs.map((p) => p.cpuSeconds());
    const pg0 = cpuSecondsOfAll('postgres');
    const t0 = performance.now();
    const wallStart = Date.now();
    const periodMs = 1000 / PER_SEC;
    let appended = 0;
    for (let tick = 0; tick < seconds * PER_SEC; tick++) {
      const spikeRun = tick % PER_SEC === 0 ? (tick / PER_SEC) % RUNS : -1; // one spike a second, a different run each
      for (let i = 0; i < RUNS; i++) {
        const wait = t0 + tick * periodMs + (i * periodMs) / RUNS - performance.now();
        if (wait > 1) await sleep(wait);
        const step = INITIAL + tick + 1;
        const at = Date.now();
        sent[i]!.push(performance.now());
        appendFileSync(runs[i]!.path, `${learningLine(step, i === spikeRun ? { grad: SPIKE_GRAD } : {})}\n`);
        if (i === spikeRun) spikes.push({ run: runs[i]!.name, step, at });
        appended++;
      }
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = procs.map((p, k) => (p.cpuSeconds() - cpu0[k]!) / wall);
    const postgresCpu = (cpuSecondsOfAll('postgres') - pg0) / wall;
    const settle = performance.now() + 10_000;
    while (commits.length < appended && performance.now() < settle) await sleep(50);
    const points = (await countPoints()) - points0;
    polling = false;
    await poller;

    // line → chat: the first POST of a grad_explosion card naming the spiked run, after the spike was appended
    // (waited for as such: another card of the run, posted first, is not it)
    const posts = () =>
      fake.requests.filter((r) => r.method === 'POST' && r.path === `/channels/${fake.channelId}/messages`);
    const showsSpike = (r: RecordedRequest, s: { run: string; at: number }): boolean =>
      r.at >= s.at && cardOf(r).includes('grad_explosion') && cardOf(r).includes(s.run);
    const spikeCard = (s: { run: string; at: number }) => posts().find((r) => showsSpike(r, s));
    const spikeChart = (s: { run: string; at: number }) =>
      fake.requests.find((r) => r.files.length > 0 && showsSpike(r, s));
    const chatDeadline = Date.now() + 10_000;
    while (Date.now() < chatDeadline && spikes.some((s) => !spikeCard(s) || !spikeChart(s))) await sleep(100);
    const chat = spikes.map((s) => {
      const post = spikeCard(s);
      return post ? post.at - s.at : Infinity;
    });
    const charts = spikes.map((s) => (spikeChart(s)?.at ?? Infinity) - s.at).sort((a, b) => a - b);
    const queued = async (where: string) =>
      (
        await reader.query<{ queued: number; done: number; p50: number | null; max: number | null }>(
          `SELECT count(*)::integer AS queued, count(done_at)::integer AS done,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY done_at - created_at) AS p50,
           max(done_at - created_at)::float8 AS max
         FROM outbox WHERE created_at BETWEEN $1 AND $2 AND ${where}`,
          [wallStart, wallStart + Math.round(wall * 1000)],
        )
      ).rows[0]!;
    const outbox = await queued('true');
    // as migration pg/004 ranks rows (spelled out, so that the figure reads the same on a database without it)
    const critical = await queued(`position('"severity":"critical","rule":' IN payload) > 0`);
    const criticalStages = await stagesOfCritical(
      reader,
      fake,
      committedAt,
      wallStart,
      wallStart + Math.round(wall * 1000),
    );
    await reader.end();
    if (opts.statementsTo) writeFileSync(opts.statementsTo, await topStatements(db));
    const lat = [...commits, ...new Array<number>(Math.max(0, appended - commits.length)).fill(Infinity)].sort(
      (a, b) => a - b,
    );
    const chatSorted = [...chat].sort((a, b) => a - b);
    const chatP99Ms = percentile(chatSorted, 99);
    const slowestSpikes = spikes
      .map((s, k) => {
        const commitMs = (committedAt.get(`${s.run}:${s.step}`) ?? Infinity) - s.at;
        return { run: s.run, step: s.step, commitMs, chatMs: chat[k]! };
      })
      .sort((a, b) => b.chatMs - a.chatMs)
      .slice(0, 3);
    return {
      watchers: WATCHERS,
      runs: RUNS,
      perSec: PER_SEC,
      seconds,
      appended,
      committed: commits.length,
      pointsPerSec: points / wall,
      commitP50Ms: percentile(lat, 50),
      commitP99Ms: percentile(lat, 99),
      spikes: spikes.length,
      posted: chat.filter(Number.isFinite).length,
      chatP50Ms: percentile(chatSorted, 50),
      chatP99Ms,
      chartP50Ms: percentile(charts, 50),
      chartP99Ms: percentile(charts, 99),
      slowestSpikes,
      outboxQueued: outbox.queued,
      outboxDone: outbox.done,
      outboxWaitP50Ms: outbox.p50 ?? Infinity,
      outboxWaitMaxMs: outbox.max ?? Infinity,
      criticalQueued: critical.queued,
      criticalDone: critical.done,
      criticalWaitP50Ms: critical.p50 ?? Infinity,
      criticalWaitMaxMs: critical.max ?? Infinity,
      criticalStages,
      watcherCpu: cpu.slice(0, WATCHERS),
      botCpu: cpu[WATCHERS]!,
      postgresCpu,
      pass: chatP99Ms < PG_CHAT_P99_TARGET_MS,
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await fake.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(sql);
  } finally {
    await c.end();
  }
}

/** The 25 statements that took PostgreSQL the most time (executing, waits for CPU included), as tab-separated
 * lines: calls, total ms, ms per call, rows, the statement's start. */
async function topStatements(url: string): Promise<string> {
  const r = await query(
    url,
    `SELECT calls, round(total_exec_time::numeric, 1) AS ms,
      round((total_exec_time / calls)::numeric, 3) AS per_call, rows,
      left(regexp_replace(query, '\\s+', ' ', 'g'), 200) AS q
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`,
  );
  const lines = r.rows.map((x) => [x.calls, x.ms, x.per_call, x.rows, x.q].join('\t'));
  return `calls\ttotal ms\tms/call\trows\tstatement\n${lines.join('\n')}\n`;
}

export function formatPgWatchersReport(r: PgWatchersResult): string {
  const ms = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : 'never');
  const pct = (x: number): string => `${(x * 100).toFixed(0)}%`;
  const span = (x: { p50: number; max: number }): string => `p50 ${ms(x.p50)}, max ${ms(x.max)}`;
  return [
    `PostgreSQL, ${r.watchers} watcher processes + 1 bot: ${r.runs} runs x ${r.perSec} lines/s for ${r.seconds} s`,
    `  lines committed    ${r.committed} of ${r.appended}; ${r.pointsPerSec.toFixed(0)} points/s`,
    `  line → commit      p50 ${ms(r.commitP50Ms)}, p99 ${ms(r.commitP99Ms)} (polled every ${POLL_MS} ms)`,
    `  line → chat POST   p50 ${ms(r.chatP50Ms)}, p99 ${ms(r.chatP99Ms)} over ${r.spikes} spikes (${r.posted} posted)` +
      `   target p99 < ${PG_CHAT_P99_TARGET_MS} ms   ${r.pass ? 'PASS' : 'FAIL'}`,
    `  line → its chart   p50 ${ms(r.chartP50Ms)}, p99 ${ms(r.chartP99Ms)} (the card is posted at once, its chart ` +
      'attached by an edit)',
    `    slowest          ` +
      r.slowestSpikes.map((x) => `step ${x.step}: commit ${ms(x.commitMs)}, chat ${ms(x.chatMs)}`).join('; '),
    `  outbox             ${r.outboxQueued} rows queued while appending, ${r.outboxDone} delivered; ` +
      `queued → delivered p50 ${ms(r.outboxWaitP50Ms)}, max ${ms(r.outboxWaitMaxMs)}`,
    `    of them critical ${r.criticalQueued} queued, ${r.criticalDone} delivered; ` +
      `queued (its first item) → delivered p50 ${ms(r.criticalWaitP50Ms)}, max ${ms(r.criticalWaitMaxMs)}`,
    `      stages of ${r.criticalStages.rows} (${r.criticalStages.merged} taken into a row queued earlier): ` +
      `queued → committed ${span(r.criticalStages.commit)}; → claimed ${span(r.criticalStages.claim)}; ` +
      `→ card request ${span(r.criticalStages.request)}; → delivered ${span(r.criticalStages.done)}`,
    `      its step committed → delivered ${span(r.criticalStages.total)}`,
    `  CPU                watchers ${r.watcherCpu.map(pct).join(', ')} of a core; bot ${pct(r.botCpu)}; ` +
      `PostgreSQL ${pct(r.postgresCpu)}`,
    '',
  ].join('\n');
}

export interface CriticalStages {
  rows: number;
  /** rows whose critical item was merged into a row queued earlier for another item of its run (`Outbox.add`) */
  merged: number;
  total: { p50: number; max: number };
  commit: { p50: number; max: number };
  claim: { p50: number; max: number };
  request: { p50: number; max: number };
  done: { p50: number; max: number };
}

/**
 * The stages of the critical Discord rows (not the terminal's) queued between `from` and `to` and delivered, with
 * their card's request found at the fake (the first request after the claim showing one of the row's critical
 * alerts: its ack button). When a row was claimed is its lease's end less the lease (the claim that delivered it);
 * queued is the watcher's clock at the enqueue, a little before its commit; committed, the start of the poll of runs'
 * last steps (every POLL_MS) that first saw the step of the row's first critical item. A row queued for an earlier
 * (warning) item and waiting behind its run's rows takes in the critical item when it comes: timed from its first
 * item, as before, a storm's waiting warnings read as critical rows waiting seconds to be claimed.
 */
async function stagesOfCritical(
  reader: pg.Client,
  fake: FakeDiscord,
  committedAt: ReadonlyMap<string, number>,
  from: number,
  to: number,
): Promise<CriticalStages> {
  const { rows } = await reader.query<{
    created_at: number;
    claimed_at: number;
    done_at: number;
    payload: string;
    run: string;
  }>(
    `SELECT created_at::float8, (claimed_until - $3)::float8 AS claimed_at, done_at::float8, payload,
       (SELECT name FROM runs WHERE runs.id = outbox.run_id) AS run
     FROM outbox WHERE created_at BETWEEN $1 AND $2 AND done_at IS NOT NULL AND claimed_until IS NOT NULL
       AND target LIKE 'discord%'
       AND position('"severity":"critical","rule":' IN payload) > 0`,
    [from, to, LEASE_MS],
  );
  const cards = fake.requests.filter((r) => r.path.startsWith(`/channels/${fake.channelId}/messages`));
  const commit: number[] = [];
  const claim: number[] = [];
  const request: number[] = [];
  const done: number[] = [];
  const total: number[] = [];
  let merged = 0;
  for (const row of rows) {
    const items = (JSON.parse(row.payload) as { items: Array<{ alertId: number; severity: string; step: number }> })
      .items;
    const critical = items.filter((i) => i.severity === 'critical');
    const shown = critical.map((i) => `"ack:${i.alertId}"`);
    const card = cards.find((r) => r.at >= row.claimed_at && shown.some((x) => JSON.stringify(r.body).includes(x)));
    const first = critical[0]!;
    const committed = committedAt.get(`${row.run}:${first.step}`);
    if (!card || committed === undefined) continue;
    if (items[0] === first) commit.push(committed - row.created_at);
    else merged++;
    claim.push(row.claimed_at - committed);
    request.push(card.at - row.claimed_at);
    done.push(row.done_at - card.at);
    total.push(row.done_at - committed);
  }
  const stat = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return { p50: sorted.length ? percentile(sorted, 50) : Infinity, max: sorted.at(-1) ?? Infinity };
  };
  return {
    rows: claim.length,
    merged,
    total: stat(total),
    commit: stat(commit),
    claim: stat(claim),
    request: stat(request),
    done: stat(done),
  };
}
