/**
 * Chat figures: `reward history` on a 1,000,000-point series (the command handler's query plus the PNG
 * chart, target < 300 ms), and the time from a learning.log line appended to the alert's request reaching
 * a local fake Discord server (the real discord.js client, target p99 < 1 s).
 *
 * A report, not a test: exits 0 whatever the figures. Alone: `node --import tsx bench/chat.ts`; also run
 * by `npm run bench` (bench/run.ts). Smaller runs for trying things out: BENCH_HISTORY_POINTS (default
 * 1,000,000) and BENCH_ALERT_SPIKES (default 100).
 */
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startApp } from '../src/app/start.ts';
import { rewardHistory } from '../src/commands/rewardHistory.ts';
import { ConfigSchema } from '../src/config/schema.ts';
import type { Log } from '../src/lib/log.ts';
import { PNG_SIGNATURE, renderLineChart } from '../src/render/chart.ts';
import { SqliteAsyncStore } from '../src/store/sqlite/sqliteAsync.ts';
import { Store, type Batch } from '../src/store/sqlite/store.ts';
import { startFakeDiscord, type RecordedRequest } from '../test/fakes/discordServer.ts';
import { rng } from './generate.ts';
import { learningLine } from '../test/learningLines.ts';
import { percentile } from './live.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT = join(BENCH_DIR, 'out');

export const HISTORY_TARGET_MS = 300;
export const ALERT_P99_TARGET_MS = 1000;

/** steps per `store.commit`, about what the ingestor commits per chunk of a large backfill */
const COMMIT_STEPS = 10_000;
/** timed runs of `reward history` after one warm-up */
const HISTORY_REPEAT = 5;
/** how long one spike may take to reach the fake before it counts as never */
const ALERT_TIMEOUT_MS = 10_000;
/** grad_explosion (critical) fires on grad_norm > 10 for 1 step and resolves after 5 steps below 10 */
const SPIKE_GRAD = 15.786;
const HEALTHY_AFTER_SPIKE = 6;
const SEED_LINES = 30;

// ------------------------------------------------------------------------------------------- history

export interface HistoryRun {
  queryMs: number;
  chartMs: number;
  totalMs: number;
}

export interface HistoryResult {
  points: number;
  writeSeconds: number;
  dbBytes: number;
  warmup: HistoryRun;
  runs: HistoryRun[];
  medianQueryMs: number;
  medianChartMs: number;
  medianTotalMs: number;
  maxTotalMs: number;
  pngBytes: number;
  pngOk: boolean;
  replyPoints: number;
  title: string;
  pass: boolean;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** A run of `points` steps of `reward` (a noisy rising curve) and `epoch`, committed as the ingestor commits. */
export function writeRewardSeries(dbPath: string, points: number): { runName: string; seconds: number } {
  const t0 = performance.now();
  const store = Store.open(dbPath);
  try {
    const runPath = join(dirname(dbPath), 'run1');
    const run = store.runs.ensure('run1', runPath);
    const file = store.files.add(run.id, join(runPath, 'learning.log'), 'learningLog');
    const rand = rng(7);
    let offset = 0;
    for (let first = 1; first <= points; first += COMMIT_STEPS) {
      const last = Math.min(points, first + COMMIT_STEPS - 1);
      const metrics: Batch['metrics'] = [];
      for (let step = first; step <= last; step++) {
        const t = step / points;
        const reward = Math.min(1, Math.max(0, 0.1 + 0.6 * (1 - Math.exp(-4 * t)) + 0.05 * (rand() * 2 - 1)));
        metrics.push({
          step,
          values: new Map([
            ['reward', reward],
            ['epoch', 3 * t],
          ]),
        });
      }
      offset += (last - first + 1) * 160; // about one learning.log line per step
      store.commit(
        {
          runId: run.id,
          fileId: file.id,
          metrics,
          examples: [],
          skips: new Map(),
          progress: {
            dev: 0,
            ino: 0,
            offset,
            size: offset,
            mtimeMs: Date.now(),
            seq: last,
            lines: metrics.length,
            records: metrics.length,
          },
        },
        0,
      );
    }
    return { runName: run.name, seconds: (performance.now() - t0) / 1000 };
  } finally {
    store.close();
  }
}

export async function historyBench(dir: string, points = 1_000_000, repeat = HISTORY_REPEAT): Promise<HistoryResult> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const dbPath = join(dir, 'history.db');
  const { runName, seconds: writeSeconds } = writeRewardSeries(dbPath, points);
  const store = Store.open(dbPath);
  const db = new SqliteAsyncStore(store);
  try {
    const dbBytes =
      (store.db
        .prepare('SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()')
        .pluck()
        .get() as number) ?? 0;
    let png: Buffer = Buffer.alloc(0);
    let replyPoints = 0;
    let title = '';
    const once = async (): Promise<HistoryRun> => {
      const t0 = performance.now();
      const reply = await rewardHistory({ store: db }, { run: runName, metric: 'reward' });
      const t1 = performance.now();
      png = await renderLineChart(reply.chart!);
      const t2 = performance.now();
      // the chart gets a down-sampled copy; the answer covers the whole series (its title counts the points)
      replyPoints = Number(/: (\d+) points?/.exec(reply.title)?.[1] ?? 0);
      title = reply.title;
      return { queryMs: t1 - t0, chartMs: t2 - t1, totalMs: t2 - t0 };
    };
    const warmup = await once();
    const runs: HistoryRun[] = [];
    for (let i = 0; i < repeat; i++) runs.push(await once());
    const medianTotalMs = median(runs.map((r) => r.totalMs));
    return {
      points,
      writeSeconds,
      dbBytes,
      warmup,
      runs,
      medianQueryMs: median(runs.map((r) => r.queryMs)),
      medianChartMs: median(runs.map((r) => r.chartMs)),
      medianTotalMs,
      maxTotalMs: Math.max(...runs.map((r) => r.totalMs)),
      pngBytes: png.length,
      pngOk: png.subarray(0, 8).equals(PNG_SIGNATURE),
      replyPoints,
      title,
      pass: medianTotalMs < HISTORY_TARGET_MS && replyPoints === points,
    };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------- alert

export interface AlertResult {
  spikes: number;
  posted: number;
  /** spikes whose alert never reached the fake within the timeout: infinite latency in the percentiles */
  missed: number;
  missedSpikes: number[];
  /** resolutions (PATCH of the alert's message) that never came */
  unresolved: number;
  startMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
  /** append → the request carrying the card's chart: a card is posted at once, its chart attached by an edit once
   * drawn */
  chartP50Ms: number;
  chartP99Ms: number;
  /** last healthy line appended → the PATCH that marks the alert resolved */
  resolveP50Ms: number;
  resolveP99Ms: number;
  resolveMaxMs: number;
  /** POSTs to the channel that were not a grad_explosion card (other rules firing on the healthy lines) */
  otherPosts: string[];
  /** grad_explosion POSTs beyond one per spike */
  extraPosts: number;
  chartBytes: number;
  warnings: string[];
  pass: boolean;
}

const embedTitles = (r: RecordedRequest): string[] => {
  const body = Array.isArray(r.body) ? null : r.body;
  const embeds = Array.isArray(body?.embeds) ? (body.embeds as Array<{ title?: unknown }>) : [];
  return embeds.map((e) => String(e.title ?? ''));
};

export async function alertBench(dir: string, spikes = 100): Promise<AlertResult> {
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'root');
  mkdirSync(join(root, 'run1'), { recursive: true });
  const logPath = join(root, 'run1', 'learning.log');
  let step = 0;
  writeFileSync(logPath, Array.from({ length: SEED_LINES }, () => `${learningLine(++step)}\n`).join(''));

  const warnings: string[] = [];
  const log: Log = { info: () => {}, warn: (m) => void warnings.push(m) };
  const fake = await startFakeDiscord();
  const postPath = new RegExp(`^/channels/${fake.channelId}/messages$`);
  const patchPath = new RegExp(`^/channels/${fake.channelId}/messages/\\d+$`);
  const t0 = performance.now();
  const app = await startApp({
    config: ConfigSchema.parse({}),
    dbPath: join(dir, 'chat.db'),
    roots: [root],
    log,
    terminal: null,
    platforms: {
      discord: { token: fake.token, apiUrl: fake.apiUrl, guildId: fake.guildId, channel: fake.channelId, retries: 0 },
    },
  });
  const startMs = performance.now() - t0;

  const latencies: number[] = [];
  const chartLatencies: number[] = [];
  const resolveLatencies: number[] = [];
  const missedSpikes: number[] = [];
  let unresolved = 0;
  let chartBytes = 0;
  /** the first request at index >= from that matches, polled every millisecond; its arrival time is `at` */
  const waitRequest = async (from: number, match: (r: RecordedRequest) => boolean): Promise<RecordedRequest | null> => {
    const deadline = Date.now() + ALERT_TIMEOUT_MS;
    for (let i = from; ; ) {
      for (; i < fake.requests.length; i++) if (match(fake.requests[i]!)) return fake.requests[i]!;
      if (Date.now() > deadline) return null;
      await sleep(1);
    }
  };
  const isGradCard = (r: RecordedRequest): boolean => embedTitles(r).some((t) => t.includes('grad_explosion'));
  const isResolution = (r: RecordedRequest): boolean =>
    embedTitles(r).some((t) => t.includes('grad_explosion resolved'));
  try {
    for (let k = 1; k <= spikes; k++) {
      const before = fake.requests.length;
      const spikeStep = ++step;
      const sentAt = Date.now();
      appendFileSync(logPath, `${learningLine(spikeStep, { grad: SPIKE_GRAD })}\n`);
      const post = await waitRequest(before, (r) => r.method === 'POST' && postPath.test(r.path) && isGradCard(r));
      const chart =
        post &&
        (await waitRequest(
          fake.requests.indexOf(post) + 1,
          (r) => r.method === 'PATCH' && r.files.length > 0 && isGradCard(r),
        ));
      if (post) {
        latencies.push(post.at - sentAt);
        chartLatencies.push(chart ? chart.at - sentAt : Infinity);
        chartBytes = chart?.files[0]?.data.length ?? chartBytes;
      } else {
        latencies.push(Infinity);
        missedSpikes.push(spikeStep);
      }
      const afterPost = fake.requests.length;
      for (let h = 0; h < HEALTHY_AFTER_SPIKE; h++) appendFileSync(logPath, `${learningLine(++step)}\n`);
      const healthyAt = Date.now();
      const patch = await waitRequest(
        post ? fake.requests.indexOf(post) + 1 : afterPost,
        (r) => r.method === 'PATCH' && patchPath.test(r.path) && isResolution(r),
      );
      if (patch) resolveLatencies.push(patch.at - healthyAt);
      else unresolved++;
    }
    await app.live.idle();
  } finally {
    await app.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const posts = fake.requests.filter((r) => r.method === 'POST' && postPath.test(r.path));
  const gradPosts = posts.filter(isGradCard);
  const otherPosts = posts
    .filter((r) => !isGradCard(r))
    .map((r) => embedTitles(r).join(' | ') || `(status ${r.status}, no embed)`);
  const sorted = [...latencies].sort((a, b) => a - b);
  const finite = sorted.filter(Number.isFinite);
  const charts = [...chartLatencies].sort((a, b) => a - b);
  const res = [...resolveLatencies].sort((a, b) => a - b);
  const p99Ms = percentile(sorted, 99);
  return {
    spikes,
    posted: finite.length,
    missed: missedSpikes.length,
    missedSpikes,
    unresolved,
    startMs,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms,
    maxMs: finite.length > 0 ? finite[finite.length - 1]! : NaN,
    meanMs: finite.reduce((a, b) => a + b, 0) / Math.max(1, finite.length),
    chartP50Ms: percentile(charts, 50),
    chartP99Ms: percentile(charts, 99),
    resolveP50Ms: percentile(res, 50),
    resolveP99Ms: percentile(res, 99),
    resolveMaxMs: res.length > 0 ? res[res.length - 1]! : NaN,
    otherPosts,
    extraPosts: Math.max(0, gradPosts.length - finite.length),
    chartBytes,
    warnings,
    pass: p99Ms < ALERT_P99_TARGET_MS,
  };
}

// ------------------------------------------------------------------------------------------- both

export interface ChatReport {
  history: HistoryResult;
  alert: AlertResult;
  seconds: number;
}

export async function runChatBench(
  opts: { outDir?: string; historyPoints?: number; spikes?: number } = {},
): Promise<ChatReport> {
  const out = opts.outDir ?? OUT;
  const t0 = performance.now();
  const history = await historyBench(join(out, 'chat-history'), opts.historyPoints ?? 1_000_000);
  const alert = await alertBench(join(out, 'chat-alert'), opts.spikes ?? 100);
  return { history, alert, seconds: (performance.now() - t0) / 1000 };
}

export function formatChatReport(r: ChatReport): string {
  const n = (v: number, digits = 0): string =>
    v.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const ms = (v: number): string => (Number.isFinite(v) ? `${n(v, 1)} ms` : 'never');
  const verdict = (pass: boolean): string => (pass ? 'PASS' : 'FAIL');
  const h = r.history;
  const a = r.alert;
  const rows: Array<[string, string, string, string]> = [
    [
      'reward history, 1 run',
      `${n(h.points)} points (${n(h.dbBytes / 1e6, 1)} MB db, written in ${n(h.writeSeconds, 1)} s), ${h.runs.length} runs after 1 warm-up`,
      '',
      '',
    ],
    ['  query (handler), median', ms(h.medianQueryMs), '', ''],
    ['  chart (PNG), median', `${ms(h.medianChartMs)}, ${n(h.pngBytes)} bytes${h.pngOk ? '' : ' (NOT a PNG)'}`, '', ''],
    ['  total, median', ms(h.medianTotalMs), `< ${HISTORY_TARGET_MS} ms`, verdict(h.pass)],
    ['  total, max / warm-up', `${ms(h.maxTotalMs)} / ${ms(h.warmup.totalMs)}`, '', ''],
    [
      'append → alert POST at fake Discord',
      `${a.posted}/${a.spikes} posted${a.missed > 0 ? `, ${a.missed} never (steps ${a.missedSpikes.slice(0, 5).join(', ')})` : ''}; app start ${ms(a.startMs)}`,
      '',
      '',
    ],
    ['  p50 / p90', `${ms(a.p50Ms)} / ${ms(a.p90Ms)}`, '', ''],
    ['  p99', ms(a.p99Ms), `< ${ALERT_P99_TARGET_MS} ms`, verdict(a.pass)],
    ['  max / mean', `${ms(a.maxMs)} / ${ms(a.meanMs)}`, '', ''],
    ['  its chart attached (info)', `p50 ${ms(a.chartP50Ms)}, p99 ${ms(a.chartP99Ms)}`, '', ''],
    [
      '  resolved → PATCH (info)',
      `p50 ${ms(a.resolveP50Ms)}, p99 ${ms(a.resolveP99Ms)}, max ${ms(a.resolveMaxMs)}${a.unresolved > 0 ? `; ${a.unresolved} never` : ''}`,
      '',
      '',
    ],
  ];
  const head = ['chat', 'figure', 'target', ''];
  const width = head.map((x, i) => Math.max(x.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(width[i]!))
      .join('  ')
      .trimEnd();
  const out = [
    `chat — reward history (handler + chart) and alert delivery through the real discord.js client to a local fake, ${r.seconds.toFixed(1)} s`,
    line(head),
    line(width.map((w) => '-'.repeat(w))),
    ...rows.map(line),
  ];
  const notes: string[] = [];
  if (a.otherPosts.length > 0)
    notes.push(`${a.otherPosts.length} other alert posts: ${[...new Set(a.otherPosts)].slice(0, 5).join('; ')}`);
  if (a.extraPosts > 0) notes.push(`${a.extraPosts} grad_explosion posts beyond one per spike`);
  if (a.warnings.length > 0) notes.push(`${a.warnings.length} warnings, first: ${a.warnings[0]}`);
  if (h.replyPoints !== h.points) notes.push(`reward history answered ${h.replyPoints} points, not ${h.points}`);
  if (notes.length > 0) out.push('', ...notes.map((x) => `note: ${x}`));
  return out.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const envInt = (name: string, dflt: number): number => {
    const v = Number(process.env[name]);
    return Number.isFinite(v) && v > 0 ? v : dflt;
  };
  void runChatBench({
    historyPoints: envInt('BENCH_HISTORY_POINTS', 1_000_000),
    spikes: envInt('BENCH_ALERT_SPIKES', 100),
  }).then((report) => {
    process.stdout.write(`\n${formatChatReport(report)}\n`);
    process.exit(0);
  });
}
