/**
 * `npm run bench`: backfill throughput against a bare SQLite loop, peak RSS of backfill, live latency,
 * and the labelled alert scenarios (bench/scenarios.ts). Prints tables and writes bench/out/results.json
 * and bench/out/scenarios.json, then the chat figures (bench/chat.ts): `reward history` on a 1,000,000-point
 * series and append → alert request at a local fake Discord. A report, not a test: exits 0 whatever the figures.
 *
 * Smaller runs for trying things out: BENCH_LINES, BENCH_COMPLETIONS_MB, BENCH_LIVE_APPENDS, BENCH_FORMATS_MB,
 * BENCH_LIVE_SCALE_SECONDS; BENCH_REPEAT pairs of a learning.log backfill and a bare run, alternated
 * (default 3; the completions file gets one more). Start-up, live at scale: bench/startup.ts, bench/liveScale.ts,
 * bench/liveStatements.ts.
 * BENCH_CPU_PROF=1 writes V8 CPU profiles of the backfill and live-scale children to bench/out/prof/.
 * BENCH_PG_STATEMENTS=1 writes the pg-watchers section's costliest PostgreSQL statements to
 * bench/out/pg-statements.tsv.
 * BENCH_ONLY=backfill|startup|live-scale|pg-watchers|charts|storm|suite runs that one section (startup after a backfill of BENCH_LINES lines, for
 * its database), prints its figures as JSON with the load average, and exits.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { runBackfillCli, type ChildResult } from './backfill-child.ts';
import type { BareResult } from './bare.ts';
import { runColdHistory, runStartupBench, STARTUP_TARGET_RATIO } from './startup.ts';
import { ALERT_P99_TARGET_MS, formatChatReport, HISTORY_TARGET_MS, runChatBench } from './chat.ts';
import { formatFormatsReport, runFormatsBench } from './formats.ts';
import { writeCompletions, writeLearningLog } from './generate.ts';
import { liveLatency, type LiveResult } from './live.ts';
import {
  IDLE_CPU_TARGET,
  IDLE_RSS_TARGET_MB,
  LIVE_SCALE_CPU_TARGET,
  LIVE_SCALE_P99_TARGET_MS,
  runLiveScale,
} from './liveScale.ts';
import { bundleIsCurrent } from '../bin/bundle.mjs';
import { formatLiveStatements, runLiveStatements } from './liveStatements.ts';
import { formatFailureReport, runFailureBench } from './failures.ts';
import { formatNoiseReport, runNoise } from './noise.ts';
import { formatScenarioReport, runScenarios } from './scenarios.ts';
import { formatSuiteReport, runSuite, writeSuiteJson } from './suite/index.ts';
import { jsonOfChild } from './proc.ts';
import { formatTfeventsReport, runTfeventsBench } from './tfevents.ts';
import { formatWorstCaseReport, runWorstCase } from './worstCase.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO = join(BENCH_DIR, '..');
const OUT = join(BENCH_DIR, 'out');
const MB = 1e6;

const envInt = (name: string, dflt: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const LINES = envInt('BENCH_LINES', 1_000_000);
const COMPLETIONS_BYTES = envInt('BENCH_COMPLETIONS_MB', 200) * MB;
const LIVE_APPENDS = envInt('BENCH_LIVE_APPENDS', 1000);
const CPU_PROF = process.env['BENCH_CPU_PROF'] === '1';
const PROF_DIR = CPU_PROF ? join(OUT, 'prof') : undefined;
/** backfill runs per file: V8's heap growth makes the peak RSS vary by ~40 MB from run to run */
const REPEAT = envInt('BENCH_REPEAT', 3);
/** backfill (the whole rlwatch process) ÷ the bare upsert loop of the same points */
const BACKFILL_TARGET_RATIO = 0.8;

const say = (msg: string): void => {
  process.stderr.write(`[bench ${(performance.now() / 1000).toFixed(1)}s] ${msg}\n`);
};

function timed<T>(fn: () => T): { value: T; seconds: number } {
  const t0 = performance.now();
  const value = fn();
  return { value, seconds: (performance.now() - t0) / 1000 };
}

function runChild(root: string, db: string, label: string): ChildResult {
  // a folder per child: each of its threads (the writer, the parse worker) leaves a profile named by thread id
  const prof = PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', join(PROF_DIR, label)] : [];
  return runBackfillCli({ repo: REPO, root, db, extraNodeArgs: prof });
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Several runs of one backfill: the median time and the worst peak RSS, with every run kept. */
interface Repeated extends ChildResult {
  runs: Array<{ seconds: number; maxRssKB: number }>;
}

function repeated(all: readonly ChildResult[]): Repeated {
  return {
    ...all[0]!,
    seconds: median(all.map((r) => r.seconds)),
    maxRssKB: Math.max(...all.map((r) => r.maxRssKB)),
    runs: all.map((r) => ({ seconds: r.seconds, maxRssKB: r.maxRssKB })),
  };
}

function runChildren(root: string, db: string, label: string, times: number): Repeated {
  const all: ChildResult[] = [];
  for (let i = 0; i < times; i++) {
    all.push(runChild(root, db, times > 1 ? `${label}-${i + 1}` : label));
    removeDb(db);
    say(
      `  run ${i + 1}/${times}: ${all[i]!.seconds.toFixed(1)} s, peak RSS ${(all[i]!.maxRssKB / 1024).toFixed(0)} MB`,
    );
  }
  return repeated(all);
}

/** The bare upsert in a process of its own, as the backfill runs in its own. */
function runBare(db: string, points: number, perStep: number, txRows: number): BareResult {
  return jsonOfChild<BareResult>('bare.ts', [db, String(points), String(perStep), String(txRows)]);
}

/** One pair of the learning.log backfill and the bare upsert of the same points, run back to back. */
interface Pair {
  backfillSeconds: number;
  bareSeconds: number;
  /** backfill ÷ bare in points/s (the same points): bare seconds ÷ backfill seconds */
  ratio: number;
  /** the same in CPU seconds: the bare loop's ÷ those of the backfill's writing thread (its parse worker and its
   * waits left out). Other processes on the machine slow both less than they slow the wall clock */
  cpuRatio: number | null;
  /** the machine's 1-minute load average after the pair */
  load: number;
}

/**
 * The learning.log backfill and the bare upsert of the same points in `REPEAT` pairs, which goes first alternating
 * from pair to pair (a load that rises or falls over the section hits both alike); each pair gives a ratio, and the
 * ratio reported is their median, with the min. The bare loop's transactions hold as many rows as the backfill's
 * (its points ÷ its batches, from the first backfill). `keepDb` leaves the last backfill's database in place (the
 * start-up figures read it).
 */
function backfillVsBare(logRoot: string, logDb: string, bareDb: string, keepDb: boolean) {
  const logRuns: ChildResult[] = [];
  const bareRuns: BareResult[] = [];
  const pairs: Pair[] = [];
  const backfillRun = (i: number): ChildResult => {
    const r = runChild(logRoot, logDb, REPEAT > 1 ? `learning-log-${i + 1}` : 'learning-log');
    if (i < REPEAT - 1 || !keepDb) removeDb(logDb);
    return r;
  };
  const bareRun = (r: ChildResult): BareResult => {
    const perStepNow = Math.max(1, Math.round(r.points / Math.max(1, r.steps)));
    return runBare(bareDb, r.points, perStepNow, Math.max(1, Math.round(r.points / Math.max(1, r.batches))));
  };
  for (let i = 0; i < REPEAT; i++) {
    let r: ChildResult;
    let b: BareResult;
    if (i % 2 === 0) {
      r = backfillRun(i);
      b = bareRun(r);
    } else {
      b = bareRun(logRuns[0]!);
      r = backfillRun(i);
    }
    logRuns.push(r);
    bareRuns.push(b);
    const cpuRatio = r.mainCpuSeconds ? b.cpuSeconds / r.mainCpuSeconds : null;
    const ratio = b.seconds / r.seconds;
    pairs.push({ backfillSeconds: r.seconds, bareSeconds: b.seconds, ratio, cpuRatio, load: loadavg()[0]! });
    say(
      `  pair ${i + 1}/${REPEAT} (${i % 2 === 0 ? 'backfill' : 'bare'} first): backfill ${r.seconds.toFixed(1)} s, ` +
        `peak RSS ${(r.maxRssKB / 1024).toFixed(0)} MB; bare ${b.seconds.toFixed(1)} s ` +
        `(${b.txRows.toLocaleString('en')} rows per transaction); ratio ${ratio.toFixed(2)}, ` +
        `CPU ratio ${cpuRatio?.toFixed(2) ?? '?'}, load ${pairs[i]!.load}`,
    );
  }
  const log = repeated(logRuns);
  const bareSeconds = median(bareRuns.map((b) => b.seconds));
  const bare: BareResult = { ...bareRuns[0]!, seconds: bareSeconds, pointsPerSec: log.points / bareSeconds };
  const ratios = pairs.map((p) => p.ratio);
  const cpuRatios = pairs.flatMap((p) => (p.cpuRatio === null ? [] : [p.cpuRatio]));
  const ratio = {
    median: median(ratios),
    min: Math.min(...ratios),
    max: Math.max(...ratios),
    cpuMedian: cpuRatios.length > 0 ? median(cpuRatios) : null,
  };
  return { log, bare, pairs, ratio };
}

const rssList = (r: Repeated): string => r.runs.map((x) => (x.maxRssKB / 1024).toFixed(0)).join(', ');

function removeDb(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

// ------------------------------------------------------------------------------------------- phases

mkdirSync(OUT, { recursive: true });

// 0. the bundle bin/rlwatch runs (what `npm ci` builds), from the sources as they are now
say('building dist/ (npm run build)');
if (spawnSync(process.execPath, [join(REPO, 'scripts', 'build.mjs')], { stdio: 'inherit' }).status !== 0) {
  throw new Error('npm run build failed');
}
// bin/rlwatch runs the sources through tsx once a file under src/ is newer than the bundle: a source edited while the
// bench runs would time TypeScript compiled at start-up from then on, and nothing else would show it
process.on('exit', () => {
  if (bundleIsCurrent(REPO)) return;
  process.stderr.write('bench: INVALID, a file under src/ changed while it ran: later figures timed the sources\n');
  process.exitCode = 1;
});

/** BENCH_PG_STATEMENTS=1: where the PostgreSQL time went, in bench/out/pg-statements.tsv (pg_stat_statements). */
function pgWatchersOptions() {
  const statementsTo = process.env['BENCH_PG_STATEMENTS'] === '1' ? join(OUT, 'pg-statements.tsv') : undefined;
  const seconds = envInt('BENCH_PG_WATCHERS_SECONDS', 20);
  return { dir: join(OUT, 'pg-watchers'), seconds, profileTo: PROF_DIR, statementsTo };
}

const ONLY = process.env['BENCH_ONLY'];
if (ONLY === 'pg-watchers') {
  const { formatPgWatchersReport, runPgWatchers } = await import('./pgWatchers.ts');
  const r = await runPgWatchers(pgWatchersOptions());
  process.stdout.write(`${formatPgWatchersReport(r)}${JSON.stringify({ pgWatchers: r, load: loadavg() }, null, 2)}\n`);
  process.exit(0);
}
if (ONLY === 'charts') {
  const { formatChartsReport, runCharts } = await import('./charts.ts');
  const r = await runCharts(envInt('BENCH_CHARTS', 200));
  process.stdout.write(`${formatChartsReport(r)}${JSON.stringify({ charts: r, load: loadavg() }, null, 2)}\n`);
  process.exit(0);
}
if (ONLY === 'storm') {
  const { formatStormReport, runStorm } = await import('./storm.ts');
  const r = await runStorm(join(OUT, 'storm'));
  process.stdout.write(`${formatStormReport(r)}${JSON.stringify({ storm: r, load: loadavg() }, null, 2)}\n`);
  process.exit(0);
}
if (ONLY === 'suite') {
  const r = runSuite(join(OUT, 'suite'));
  writeSuiteJson(OUT, r);
  process.stdout.write(
    `${formatSuiteReport(r)}${JSON.stringify({ suite: r.totals, seconds: r.seconds, load: loadavg() }, null, 2)}\n`,
  );
  process.exit(0);
}
if (ONLY === 'live-scale') {
  say('live at scale: 100 runs x 5 lines/s; then 1,000 idle runs');
  const r = await runLiveScale({
    dir: join(OUT, 'live-scale'),
    seconds: envInt('BENCH_LIVE_SCALE_SECONDS', 20),
    profileTo: PROF_DIR,
  });
  const statements = await runLiveStatements(join(OUT, 'live-statements'));
  process.stdout.write(`${formatLiveStatements(statements)}\n`);
  process.stdout.write(
    `${JSON.stringify({ liveScale: r, liveStatementsPerLine: statements.perLine, load: loadavg() }, null, 2)}\n`,
  );
  process.exit(0);
}

// 1. backfill of a learning.log, in a child process (for its peak RSS)
const logRoot = join(OUT, 'backfill');
const logPath = join(logRoot, 'run1', 'learning.log');
rmSync(logRoot, { recursive: true, force: true });
say(`writing ${LINES.toLocaleString('en')} lines of learning.log`);
const genLog = timed(() => writeLearningLog(logPath, LINES));
say(`  ${(genLog.value / MB).toFixed(1)} MB in ${genLog.seconds.toFixed(1)} s; backfilling it in a child process`);
const logDb = join(OUT, 'backfill.db');
// 2. alternated with the bare SQLite ceiling for the same points, in the product's batch size (points per
// transaction of the backfill just run), so that the machine's load hits both alike
const bareDb = join(OUT, 'bare.db');
const { log, bare, pairs, ratio } = backfillVsBare(logRoot, logDb, bareDb, ONLY !== 'backfill');
const perStep = Math.max(1, Math.round(log.points / Math.max(1, log.steps)));
if (ONLY === 'backfill') {
  const peakRssMB = log.maxRssKB / 1024;
  const out = { lines: log.lines, points: log.points, batches: log.batches, ratio, peakRssMB, pairs, load: loadavg() };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  process.exit(0);
}

// 2b. CLI start-up against `node -e 0`, and the first (cold) `reward history` of the 1M-step run, on its database
say('CLI start-up: rlwatch runs / run status against node -e 0, alternated');
const startup = runStartupBench({ repo: REPO, db: logDb, run: 'run1' });
const coldHistory = runColdHistory({ repo: REPO, db: logDb, run: 'run1', metric: 'reward' });
say(`  runs ${startup.commands[0]!.ratio.toFixed(2)}x node; cold reward history ${coldHistory.medianMs.toFixed(0)} ms`);
if (ONLY === 'startup') {
  process.stdout.write(`${JSON.stringify({ startup, coldHistory, load: loadavg() }, null, 2)}\n`);
  process.exit(0);
}
removeDb(logDb);
rmSync(logRoot, { recursive: true, force: true });

// 3. backfill of a large completions.jsonl, in a child process
const compRoot = join(OUT, 'completions');
const compPath = join(compRoot, 'run1', 'reward_logs', 'completions.jsonl');
rmSync(compRoot, { recursive: true, force: true });
say(`writing ${(COMPLETIONS_BYTES / MB).toFixed(0)} MB of completions.jsonl`);
const genComp = timed(() => writeCompletions(compPath, COMPLETIONS_BYTES));
say(
  `  ${genComp.value.lines.toLocaleString('en')} lines in ${genComp.seconds.toFixed(1)} s; backfilling it in a child process`,
);
const compDb = join(OUT, 'completions.db');
const comp = runChildren(compRoot, compDb, 'completions', REPEAT + 1);
rmSync(compRoot, { recursive: true, force: true });

// 4. live latency
say(`live: ${LIVE_APPENDS} appends, 20 ms apart`);
const liveDir = join(OUT, 'live');
const live: LiveResult = await liveLatency(liveDir, LIVE_APPENDS, 20);
// chokidar drops a 'change' within 50 ms of the last one it emitted: appends further apart show the
// latency of one event per line
const slowAppends = Math.max(1, Math.round(LIVE_APPENDS / 5));
say(`live: ${slowAppends} appends, 60 ms apart`);
const liveSlow: LiveResult = await liveLatency(liveDir, slowAppends, 60);
rmSync(liveDir, { recursive: true, force: true });

// 4a. live at scale: 100 runs growing at 5 lines/s each, then 1,000 idle runs watched
say('live at scale: 100 runs x 5 lines/s; then 1,000 idle runs');
const liveScale = await runLiveScale({
  dir: join(OUT, 'live-scale'),
  seconds: envInt('BENCH_LIVE_SCALE_SECONDS', 20),
  profileTo: PROF_DIR,
});
say(
  `  p99 ${liveScale.p99Ms.toFixed(0)} ms, ${(liveScale.cpu * 100).toFixed(0)}% of a core (${liveScale.bare.ratio.toFixed(1)}× the bare floor per line); idle ${(liveScale.idle.cpu * 100).toFixed(1)}%`,
);
const liveStatements = await runLiveStatements(join(OUT, 'live-statements'));
say(`  ${liveStatements.perLine.toFixed(1)} SQL statements per live line (bench/liveStatements.ts lists them)`);

// 4b. stationary noise: no trend may fire
say('stationary noise: 6 series of 100,000 steps through the preset');
const noiseT0 = performance.now();
const noise = runNoise();
const noiseSeconds = (performance.now() - noiseT0) / 1000;
writeFileSync(join(OUT, 'noise.json'), `${JSON.stringify({ seconds: noiseSeconds, results: noise }, null, 2)}\n`);

// 5. alert scenarios: labelled traces through Store + Engine
say(
  'alert scenarios: healthy, collapse, runaway, gradient spike, plateau, reward drop, stall, hangs at 20 s and 3-min steps',
);
const scenarios = runScenarios({ outDir: OUT });
say(`  ${scenarios.passed} PASS, ${scenarios.failed} FAIL in ${scenarios.seconds.toFixed(1)} s`);

// 5a. the independent labelled suite: 24 runs backfilled by bin/rlwatch, scored from `alerts --all --json`
say('independent labelled suite: 10 healthy runs and 14 failures in three formats');
const suite = runSuite(join(OUT, 'suite'));
writeSuiteJson(OUT, suite);
say(
  `  ${suite.totals.caught} of ${suite.totals.failures} caught in time, ${suite.totals.falseAlarms} false alarms, ${suite.seconds.total.toFixed(1)} s`,
);

// 5b. failure events: crash, OOM, NCCL, NaN, finish, live through `rlwatch start`; the real logs backfilled
say('failure events: OOM, NCCL timeout, ChildFailedError, Killed, NaN, finish, crash after the grace, real logs');
const failures = await runFailureBench({ outDir: OUT });
say(`  ${failures.pass ? 'PASS' : 'FAIL'}`);

// 5c. worst-case lines: every line format stays linear in the line's length
say('worst-case lines: 160 KB and 8 MB without separators, 10,000 fields, deep JSON, through every line format');
const worstCase = runWorstCase();
say(`  worst ${worstCase.worst.msPerMB.toFixed(1)} ms/MB (${worstCase.worst.format}, ${worstCase.worst.line})`);

// 6. chat: reward history on a 1M-point series (query + chart), append → alert POST at a fake Discord
say('chat: reward history on 1,000,000 points; 100 alerts through discord.js to a local fake');
const chat = await runChatBench({ outDir: OUT });
say(
  `  history ${chat.history.medianTotalMs.toFixed(0)} ms (median); alert p99 ${chat.alert.p99Ms.toFixed(0)} ms; ${chat.seconds.toFixed(1)} s`,
);

// 7. TensorBoard event files: decoded alone, and backfilled through the Ingestor (bench/tfevents.ts)
say('tfevents: a Trainer-style events file, decoded and backfilled');
const tfevents = await runTfeventsBench({ outDir: OUT });
say(`  ${tfevents.backfill.mbPerSec.toFixed(1)} MB/s, ${tfevents.backfill.pointsPerSec.toFixed(0)} points/s`);
// 8. stdout readers: generic key-value, TRL, verl, the R1-Zero GRPO logging callback's blocks (parse only)
say('stdout readers: parse throughput on generated files, and a 1 MB line without separators');
const formats = runFormatsBench({ outDir: OUT, mbPerShape: envInt('BENCH_FORMATS_MB', 20) });
say(`  ${formats.seconds.toFixed(1)} s`);

// ------------------------------------------------------------------------------------------- report

const backfillPps = log.points / log.seconds;
const logRssMB = log.maxRssKB / 1024;
const compRssMB = comp.maxRssKB / 1024;
const targets = {
  backfillVsBare: {
    target: `>= ${BACKFILL_TARGET_RATIO}`,
    value: ratio.median,
    pass: ratio.median >= BACKFILL_TARGET_RATIO,
  },
  startup: {
    target: `<= ${STARTUP_TARGET_RATIO}x node -e 0`,
    value: Math.max(...startup.commands.map((c) => c.ratio)),
    pass: startup.pass,
  },
  learningLogPeakRss: { target: '< 200 MB', value: logRssMB, pass: logRssMB < 200 },
  completionsPeakRss: { target: '< 200 MB', value: compRssMB, pass: compRssMB < 200 },
  // a line never committed counts as infinite latency
  liveP99: { target: '< 250 ms', value: live.p99Ms, pass: live.p99Ms < 250 },
  liveScaleP99: {
    target: `< ${LIVE_SCALE_P99_TARGET_MS} ms`,
    value: liveScale.p99Ms,
    pass: liveScale.p99Ms < LIVE_SCALE_P99_TARGET_MS,
  },
  liveScaleCpu: {
    target: `< ${LIVE_SCALE_CPU_TARGET} core`,
    value: liveScale.cpu,
    pass: liveScale.cpu < LIVE_SCALE_CPU_TARGET,
  },
  idleCpu: {
    target: `< ${IDLE_CPU_TARGET} core`,
    value: liveScale.idle.cpu,
    pass: liveScale.idle.cpu < IDLE_CPU_TARGET,
  },
  idleRss: {
    target: `< ${IDLE_RSS_TARGET_MB} MB`,
    value: liveScale.idle.rssMB,
    pass: liveScale.idle.rssMB < IDLE_RSS_TARGET_MB,
  },
  rewardHistory1M: { target: `< ${HISTORY_TARGET_MS} ms`, value: chat.history.medianTotalMs, pass: chat.history.pass },
  alertP99: { target: `< ${ALERT_P99_TARGET_MS} ms`, value: chat.alert.p99Ms, pass: chat.alert.pass },
  suite: { target: 'every failure caught in time, no false alarm', value: suite.totals, pass: suite.totals.pass },
};

const results = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  backfill: {
    file: 'learning.log',
    lines: log.lines,
    bytes: log.bytes,
    records: log.records,
    points: log.points,
    steps: log.steps,
    seconds: log.seconds,
    linesPerSec: log.lines / log.seconds,
    pointsPerSec: backfillPps,
    mbPerSec: log.bytes / MB / log.seconds,
    batches: log.batches,
    alerts: log.alerts,
    peakRssMB: logRssMB,
    skips: log.skips,
    runs: log.runs,
    generateSeconds: genLog.seconds,
  },
  bare: { ...bare, perStep, ratio, pairs },
  startup,
  coldHistory,
  completions: {
    file: 'reward_logs/completions.jsonl',
    lines: comp.lines,
    bytes: comp.bytes,
    examplesKept: comp.examples,
    seconds: comp.seconds,
    linesPerSec: comp.lines / comp.seconds,
    mbPerSec: comp.bytes / MB / comp.seconds,
    peakRssMB: compRssMB,
    skips: comp.skips,
    runs: comp.runs,
    generateSeconds: genComp.seconds,
  },
  live,
  liveSlow,
  liveScale,
  liveStatements,
  scenarios: {
    file: 'scenarios.json',
    passed: scenarios.passed,
    failed: scenarios.failed,
    verdicts: Object.fromEntries(scenarios.scenarios.map((s) => [s.name, s.pass ? 'PASS' : 'FAIL'])),
  },
  chat: { seconds: chat.seconds, rewardHistory: chat.history, alert: chat.alert },
  tfevents,
  formats,
  worstCase,
  targets,
};
writeFileSync(join(OUT, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);

const n = (v: number, digits = 0): string =>
  v.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const verdict = (pass: boolean): string => (pass ? 'PASS' : 'FAIL');
const ms = (v: number): string => (Number.isFinite(v) ? `${n(v, 1)} ms` : 'never');
const missed = (l: LiveResult): string =>
  l.missed > 0
    ? `, ${l.missed} never committed (line${l.missed > 1 ? 's' : ''} ${l.missedSteps.slice(0, 5).join(', ')})`
    : '';
const rows: Array<[string, string, string, string]> = [
  [
    'learning.log backfill',
    `${n(log.lines)} lines, ${n(log.bytes / MB, 1)} MB, ${n(log.seconds, 1)} s (median of ${log.runs.length}; ` +
      `the rlwatch backfill process, rules included: ${n(log.alerts)} alerts)`,
    '',
    '',
  ],
  ['  lines/s', n(log.lines / log.seconds), '', ''],
  ['  points/s', `${n(backfillPps)} (${n(log.points)} points)`, '', ''],
  ['  MB/s', n(log.bytes / MB / log.seconds, 1), '', ''],
  [
    '  peak RSS (worst run)',
    `${n(logRssMB, 1)} MB (runs: ${rssList(log)})`,
    '< 200 MB',
    verdict(targets.learningLogPeakRss.pass),
  ],
  [
    'bare SQLite upsert (own process)',
    `${n(bare.points)} points, ${n(bare.seconds, 1)} s (median; ${n(bare.txRows)} rows per transaction as backfill)`,
    '',
    '',
  ],
  ['  points/s', n(bare.pointsPerSec), '', ''],
  [
    '  backfill ÷ bare',
    `${n(ratio.median, 2)} median, min ${n(ratio.min, 2)} (${pairs.length} alternated pairs: ` +
      `${pairs.map((p) => n(p.ratio, 2)).join(', ')}); in CPU of the writing thread ` +
      `${ratio.cpuMedian === null ? '?' : n(ratio.cpuMedian, 2)}`,
    `>= ${BACKFILL_TARGET_RATIO}`,
    verdict(targets.backfillVsBare.pass),
  ],
  ...startup.commands.map((c): [string, string, string, string] => [
    c.label,
    `${n(c.ratio, 2)}x node -e 0 (median ${n(c.medianMs)} ms, min ${n(c.minMs)}; node ${n(startup.node.medianMs)} ms)`,
    `<= ${STARTUP_TARGET_RATIO}x`,
    verdict(c.ratio <= STARTUP_TARGET_RATIO),
  ]),
  [
    `cold ${coldHistory.label.replace('rlwatch ', '')}`,
    `${n(coldHistory.medianMs)} ms median, ${n(coldHistory.ratio, 2)}x node -e 0 (1M steps)`,
    '',
    '',
  ],
  [
    'completions.jsonl backfill',
    `${n(comp.lines)} lines, ${n(comp.bytes / MB, 1)} MB, ${n(comp.seconds, 1)} s (median of ${comp.runs.length})`,
    '',
    '',
  ],
  ['  MB/s', n(comp.bytes / MB / comp.seconds, 1), '', ''],
  [
    '  peak RSS (worst run)',
    `${n(compRssMB, 1)} MB (runs: ${rssList(comp)})`,
    '< 200 MB',
    verdict(targets.completionsPeakRss.pass),
  ],
  [
    'live append → onBatch, 20 ms gaps',
    `${live.committed}/${live.appended} committed, ${live.multiLineBatches} multi-line batches${missed(live)}`,
    '',
    '',
  ],
  ['  p50 / p90', `${ms(live.p50Ms)} / ${ms(live.p90Ms)}`, '', ''],
  ['  p99', ms(live.p99Ms), '< 250 ms', verdict(targets.liveP99.pass)],
  ['  max committed / mean', `${ms(live.maxMs)} / ${ms(live.meanMs)}`, '', ''],
  [
    'live, 60 ms gaps (info)',
    `${liveSlow.committed}/${liveSlow.appended} committed, ${liveSlow.multiLineBatches} multi-line batches${missed(liveSlow)}`,
    '',
    '',
  ],
  ['  p50 / p99 / max', `${ms(liveSlow.p50Ms)} / ${ms(liveSlow.p99Ms)} / ${ms(liveSlow.maxMs)}`, '', ''],
  [
    `live, ${liveScale.runs} runs x ${liveScale.perSec} lines/s`,
    `${liveScale.committed}/${liveScale.appended} committed in ${liveScale.seconds} s; p50 ${ms(liveScale.p50Ms)} (polled every ${liveScale.pollMs} ms)`,
    '',
    '',
  ],
  ['  p99 line → commit', ms(liveScale.p99Ms), `< ${LIVE_SCALE_P99_TARGET_MS} ms`, verdict(targets.liveScaleP99.pass)],
  [
    '  CPU (of one core) / RSS',
    `${n(liveScale.cpu * 100, 0)}% / ${n(liveScale.rssMB)} MB (the rlwatch start process)`,
    `< ${LIVE_SCALE_CPU_TARGET * 100}%`,
    verdict(targets.liveScaleCpu.pass),
  ],
  [
    '  SQL statements per line',
    `${n(liveStatements.perLine, 1)} (the same on every run: bench/liveStatements.ts)`,
    '',
    '',
  ],
  [
    '  CPU per line ÷ the bare floor',
    `${n(liveScale.bare.ratio, 1)}× (${n(liveScale.cpuPerLineUs, 0)} µs ÷ ${n(liveScale.bare.cpuPerLineUs, 0)} µs: read, split, upsert, commit)`,
    '',
    '',
  ],
  [
    `${n(liveScale.idle.runs)} idle runs watched`,
    `rlwatch start: CPU ${n(liveScale.idle.cpu * 100, 2)}% over ${liveScale.idle.seconds} s`,
    `< ${IDLE_CPU_TARGET * 100}%`,
    verdict(targets.idleCpu.pass),
  ],
  ['  RSS', `${n(liveScale.idle.rssMB)} MB`, `< ${IDLE_RSS_TARGET_MB} MB`, verdict(targets.idleRss.pass)],
];
const width = [0, 1, 2, 3].map((i) =>
  Math.max(...rows.map((r) => r[i]!.length), ['measure', 'figure', 'target', ''][i]!.length),
);
const line = (r: readonly string[]): string =>
  r
    .map((c, i) => c.padEnd(width[i]!))
    .join('  ')
    .trimEnd();
const out = [
  '',
  `rlwatch bench — ${results.node}, ${results.cpus} × ${results.cpuModel}  (file MB = 10^6 bytes; RSS MB = 2^20 bytes)`,
  line(['measure', 'figure', 'target', '']),
  line(width.map((w) => '-'.repeat(w))),
  ...rows.map(line),
  '',
  `results: ${join(OUT, 'results.json')}`,
  '',
  formatNoiseReport(noise, noiseSeconds),
  '',
  formatScenarioReport(scenarios),
  '',
  formatSuiteReport(suite),
  formatFailureReport(failures),
  '',
  formatChatReport(chat),
  '',
  formatTfeventsReport(tfevents),
  '',
  formatFormatsReport(formats),
  '',
  formatWorstCaseReport(worstCase),
  '',
];
process.stdout.write(out.join('\n'));
process.stdout.write(await (await import('./postgres.ts')).pgBenchReport()); // PostgreSQL ingest (bench/postgres.ts)
// many hosts on one PostgreSQL: 3 watcher processes and a bot (bench/pgWatchers.ts)
const { formatPgWatchersReport, runPgWatchers } = await import('./pgWatchers.ts');
const pgWatchers = await runPgWatchers(pgWatchersOptions());
process.stdout.write(formatPgWatchersReport(pgWatchers));
// an alert storm against the real rlwatch start and a fake Discord that answers 429 for a while (bench/storm.ts)
const { formatStormReport, runStorm } = await import('./storm.ts');
process.stdout.write(`\n${formatStormReport(await runStorm(join(OUT, 'storm')))}`);
process.exit(0);
