/**
 * Alert-scenario suite: labelled learning.log traces (bench/scenarioTraces.ts) fed step by step through a
 * fresh Store and the Engine with the built-in GRPO preset, as `rlwatch start` would see them live
 * (`evaluate` after every record, `tick` on the clock). Reports, per scenario, when the rule that should
 * catch it fired, how many warning/critical alerts the healthy part raised, and how many notifications
 * the incident produced. Writes bench/out/scenarios.json.
 *
 * A report, not a test: exits 0 whatever the verdicts. Alone: `node --import tsx bench/scenarios.ts`;
 * also run by `npm run bench` (bench/run.ts).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Engine } from '../src/engine/engine.ts';
import type { Notification } from '../src/engine/notification.ts';
import { GRPO_PRESET } from '../src/engine/presets/grpo.ts';
import { RuleBook } from '../src/engine/rules.ts';
import type { AlertRow } from '../src/store/alerts.ts';
import { Store } from '../src/store/sqlite/store.ts';
import { canonicalName } from '../src/ingest/metricNames.ts';
import { buildModelScenarios } from './scenarioModels.ts';
import { buildScenarios, learningLogLine, type Scenario, type StepValues } from './scenarioTraces.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT = join(BENCH_DIR, 'out');

/**
 * 2025-12-10 03:00 UTC (the date of a GRPO training analysis of Qwen2.5-Coder-1.5B; the 3 a.m. of the product's
 * promise)
 */
const T0 = Date.UTC(2025, 11, 10, 3, 0, 0);
/** one GRPO step (4 prompts × 6 generations of ≤ 512 tokens, then the update) every 30 s */
const STEP_MS = 30_000;
/** what `rlwatch start` ticks at (src/app/start.ts TICK_MS) */
const TICK_MS = 10_000;
/** the config default (`alerts.repeatInterval: 4h`) */
const REPEAT_MS = 4 * 3_600_000;
/** how long a stall scenario watches the clock after the last line */
const STALL_WATCH_MS = 60 * 60_000;

export const TARGET_DELAY_STEPS = 20;
/** a slow failure (a plateau, a slow decline) is caught within 60 steps of its onset: flat or falling is told from
 * noise only once enough records show it */
export const TARGET_GRADUAL_DELAY_STEPS = 60;
const delayTarget = (s: { gradual?: boolean }): number => (s.gradual ? TARGET_GRADUAL_DELAY_STEPS : TARGET_DELAY_STEPS);
/** ours: a hang is caught in under 6 × the median step interval; the preset's floor is 10 min (+ one tick) */
export const TARGET_STALL_INTERVALS = 6;
const STALL_FLOOR_MS = 10 * 60_000;
export const stallTargetMinutes = (stepMs: number): number =>
  Math.max(STALL_FLOOR_MS + TICK_MS, TARGET_STALL_INTERVALS * stepMs) / 60_000;

export interface AlertSummary {
  rule: string;
  metric: string;
  severity: string;
  state: string;
  startedStep: number;
  firedStep: number | null;
  resolvedStep: number | null;
  summary: string;
}

export interface ScenarioResult {
  name: string;
  description: string;
  seed: number;
  steps: number;
  onset: number | null;
  expectedRule: string | null;
  expectedMetric: string | null;
  friends: readonly string[];
  /** first alert of the expected rule/key/severity that fired at or after the onset */
  firedStep: number | null;
  delaySteps: number | null;
  /** a slow failure, judged by the gradual delay target */
  gradual: boolean;
  /** stall: minutes from the last line read to the alert firing */
  delayMinutes: number | null;
  /** the trace's step interval, and the stall delay in step intervals */
  stepMs: number;
  delayIntervals: number | null;
  /** warning/critical alerts that fired on healthy data: the whole of a healthy trace, the part of an
   * incident trace before its onset, and (after the onset) rules that have nothing to do with the incident */
  falseAlerts: AlertSummary[];
  /** outbox rows carrying a `firing` item for the expected rule's key, from the onset on */
  firingNotifications: number | null;
  /** the expected key's alert rows (incidents as the engine sees them) from the onset on */
  incidents: number | null;
  outboxRows: number;
  /** `firing` items in the outbox per alert key (`rule[metric]`), the whole trace */
  firingItemsByKey: Record<string, number>;
  alerts: AlertSummary[];
  pass: boolean;
  why: string[];
}

export interface ScenarioReport {
  date: string;
  node: string;
  seconds: number;
  preset: 'grpo';
  /** where the report was written */
  file: string;
  clock: { t0: string; stepMs: number; tickMs: number; repeatIntervalMs: number };
  targets: {
    delaySteps: number;
    gradualDelaySteps: number;
    stallIntervals: number;
    stallFloorMs: number;
    falseAlerts: 0;
    firingNotificationsPerIncident: 1;
  };
  passed: number;
  failed: number;
  scenarios: ScenarioResult[];
}

const summarize = (a: AlertRow): AlertSummary => ({
  rule: a.rule,
  metric: a.metric,
  severity: a.severity,
  state: a.state,
  startedStep: a.started_step,
  firedStep: a.fired_step,
  resolvedStep: a.resolved_step,
  summary: a.summary,
});

function removeDb(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

export function runScenario(s: Scenario, dir: string, book: RuleBook): ScenarioResult {
  const dbPath = join(dir, `${s.name}.db`);
  removeDb(dbPath);
  let clock = T0;
  const store = Store.open(dbPath, { now: () => clock });
  const engine = new Engine(store, book, {
    repeatIntervalMs: REPEAT_MS,
    targets: ['console'],
    now: () => clock,
    sessionStart: T0,
  });
  const runDir = join(dir, s.name);
  const jsonl = s.format === 'jsonl';
  const logPath = join(runDir, jsonl ? 'metrics.jsonl' : 'learning.log');
  const run = store.runs.ensure(s.name, runDir);
  const file = store.files.add(run.id, logPath, jsonl ? 'jsonlMetrics' : 'learningLog');
  engine.caughtUp(); // nothing was there: every record below is read live
  const stepMs = s.stepMs ?? STEP_MS;
  const readLines = (lines: number, metrics: Array<{ step: number; values: Map<string, number> }>, offset: number) =>
    store.commit(
      {
        runId: run.id,
        fileId: file.id,
        metrics,
        examples: [],
        skips: new Map(),
        progress: { dev: 0, ino: 0, offset, size: offset, mtimeMs: clock, seq: 0, lines, records: metrics.length },
      },
      2,
    );

  // the trace as text, for looking at it (the store is fed the same values directly, under the canonical
  // names the ingestor maps the trainer's keys to)
  const text = s.steps.map(
    (v, i) => `${jsonl ? JSON.stringify({ step: i + 1, ...v }) : learningLogLine(v as StepValues)}\n`,
  );
  mkdirSync(runDir, { recursive: true });
  writeFileSync(logPath, text.join(''));

  let offset = 0;
  s.steps.forEach((values, i) => {
    const step = i + 1;
    clock += stepMs;
    offset += Buffer.byteLength(text[i]!);
    // the store is fed the canonical names the ingestor maps the trainer's keys to
    readLines(1, [{ step, values: new Map(Object.entries(values).map(([k, v]) => [canonicalName(k), v])) }], offset);
    engine.evaluate(run.id);
    engine.tick();
    const pause = s.evalPause;
    if (pause && step % pause.every === 0) {
      // an evaluation: no record, a progress line now and then, the app ticking all along
      for (let waited = TICK_MS; waited <= pause.ms; waited += TICK_MS) {
        clock += TICK_MS;
        if (waited % pause.printEveryMs === 0) readLines(1, [], offset);
        engine.tick();
      }
    }
  });

  const exp = s.expected;
  let delayMinutes: number | null = null;
  if (s.stall) {
    const last = clock;
    for (let t = last + TICK_MS; t <= last + STALL_WATCH_MS; t += TICK_MS) {
      clock = t;
      engine.tick();
      if (delayMinutes === null && exp && store.alerts.list({ runId: run.id }).some((a) => a.rule === exp.rule)) {
        delayMinutes = (t - last) / 60_000;
      }
    }
  }

  const alerts = store.alerts.list({ runId: run.id, all: true }).reverse();
  const outbox = store.outbox.pending('console', 1_000_000).filter((r) => r.run_id === run.id);
  store.close();
  removeDb(dbPath);

  const onset = s.onset ?? Infinity;
  const isExpectedKey = (a: { rule: string; metric: string }): boolean =>
    exp !== null && a.rule === exp.rule && a.metric === exp.metric;
  const allowed = new Set(exp ? [exp.rule, ...s.friends] : []);
  const fired = alerts.filter((a) => a.fired_step !== null);
  const falseAlerts = fired
    .filter((a) => a.severity === 'warning' || a.severity === 'critical')
    .filter((a) => (a.fired_step as number) < onset || !allowed.has(a.rule));
  const hits = exp
    ? fired.filter(
        (a) =>
          isExpectedKey(a) &&
          (exp.severities as readonly string[]).includes(a.severity) &&
          (a.fired_step as number) >= onset,
      )
    : [];
  const first = hits.length > 0 ? Math.min(...hits.map((a) => a.fired_step as number)) : null;
  const firingNotifications = exp
    ? outbox.filter((r) =>
        (JSON.parse(r.payload) as Notification).items.some(
          (it) => it.kind === 'firing' && isExpectedKey(it) && it.step >= onset,
        ),
      ).length
    : null;
  const firingItemsByKey: Record<string, number> = {};
  for (const row of outbox) {
    for (const it of (JSON.parse(row.payload) as Notification).items) {
      if (it.kind !== 'firing') continue;
      const key = `${it.rule}[${it.metric}]`;
      firingItemsByKey[key] = (firingItemsByKey[key] ?? 0) + 1;
    }
  }
  const incidents = exp ? alerts.filter((a) => isExpectedKey(a) && a.started_step >= onset).length : null;
  const delaySteps = first !== null && s.onset !== null ? first - s.onset : null;
  const delayIntervals = delayMinutes === null ? null : (delayMinutes * 60_000) / stepMs;

  const why: string[] = [];
  if (exp) {
    if (first === null) why.push(`${exp.rule} never fired`);
    else if (s.stall) {
      const target = stallTargetMinutes(stepMs);
      if (delayMinutes === null || delayMinutes > target)
        why.push(`${exp.rule} after ${delayMinutes} min (> ${target.toFixed(1)})`);
    } else if ((delaySteps as number) > delayTarget(s)) why.push(`${exp.rule} ${delaySteps} steps after the onset`);
    if (firingNotifications !== 1) why.push(`${firingNotifications} firing notifications for ${exp.rule}`);
  }
  if (falseAlerts.length > 0) {
    why.push(`false alerts: ${falseAlerts.map((a) => `${a.rule}/${a.severity}@${a.fired_step}`).join(', ')}`);
  }
  return {
    name: s.name,
    description: s.description,
    seed: s.seed,
    steps: s.steps.length,
    onset: s.onset,
    expectedRule: exp?.rule ?? null,
    expectedMetric: exp?.metric ?? null,
    friends: s.friends,
    firedStep: first,
    delaySteps,
    gradual: s.gradual === true,
    delayMinutes,
    stepMs,
    delayIntervals,
    falseAlerts: falseAlerts.map(summarize),
    firingNotifications,
    incidents,
    outboxRows: outbox.length,
    firingItemsByKey,
    alerts: alerts.map(summarize),
    pass: why.length === 0,
    why,
  };
}

/** Runs every scenario with the GRPO preset (plus `overrides`, as `alerts.rules` entries would). */
export function runScenarios(
  opts: { outDir?: string; overrides?: readonly unknown[]; write?: boolean } = {},
): ScenarioReport {
  const outDir = opts.outDir ?? OUT;
  const dir = join(outDir, 'scenarios');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const book = RuleBook.build(GRPO_PRESET, opts.overrides ?? []);
  const scenarios = [...buildScenarios(), ...buildModelScenarios()].map((s) => runScenario(s, dir, book));
  const report: ScenarioReport = {
    date: new Date().toISOString(),
    node: process.version,
    seconds: (performance.now() - t0) / 1000,
    preset: 'grpo',
    file: join(outDir, 'scenarios.json'),
    clock: { t0: new Date(T0).toISOString(), stepMs: STEP_MS, tickMs: TICK_MS, repeatIntervalMs: REPEAT_MS },
    targets: {
      delaySteps: TARGET_DELAY_STEPS,
      gradualDelaySteps: TARGET_GRADUAL_DELAY_STEPS,
      stallIntervals: TARGET_STALL_INTERVALS,
      stallFloorMs: STALL_FLOOR_MS,
      falseAlerts: 0,
      firingNotificationsPerIncident: 1,
    },
    passed: scenarios.filter((s) => s.pass).length,
    failed: scenarios.filter((s) => !s.pass).length,
    scenarios,
  };
  if (opts.write !== false) writeFileSync(report.file, `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

/** The table, the healthy traces' alerts and the reasons for each FAIL, as printed. */
export function formatScenarioReport(r: ScenarioReport): string {
  const head = [
    'scenario',
    'expected rule',
    'fired at step',
    `onset → alert (≤ ${TARGET_DELAY_STEPS}; gradual ≤ ${TARGET_GRADUAL_DELAY_STEPS})`,
    'warn/crit on healthy (0)',
    'notifications/incident (1)',
    '',
  ];
  const rows = r.scenarios.map((s) => [
    s.name,
    s.expectedRule ?? '— (none)',
    s.expectedRule === null ? '—' : s.firedStep === null ? 'never' : String(s.firedStep),
    s.expectedRule === null
      ? '—'
      : s.delayMinutes !== null
        ? `${s.delayMinutes.toFixed(1)} min = ${s.delayIntervals!.toFixed(1)} × ${s.stepMs / 1000} s step (≤ ${stallTargetMinutes(s.stepMs).toFixed(1)} min)`
        : s.delaySteps === null
          ? 'never'
          : `${s.delaySteps} steps${s.gradual ? ' (gradual)' : ''}`,
    String(s.falseAlerts.length),
    s.firingNotifications === null ? '—' : String(s.firingNotifications),
    s.pass ? 'PASS' : 'FAIL',
  ]);
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(width[i]!))
      .join('  ')
      .trimEnd();

  const out = [
    `alert scenarios — GRPO preset (v2), ${r.scenarios[0]?.steps ?? 0}-step traces fed live (evaluate per step, one step per ${STEP_MS / 1000} s unless named), ${r.seconds.toFixed(1)} s`,
    line(head),
    line(width.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    'warn/crit on healthy: a healthy trace whole; an incident trace before its onset, and after it any rule',
    "unrelated to the incident. notifications: outbox rows with a 'firing' item for the expected rule's key.",
    `stall: from the last line read to the alert, ticking every ${TICK_MS / 1000} s; target max(10 min floor + a tick, ${TARGET_STALL_INTERVALS} × the step interval).`,
    '',
    'alerts raised on healthy traces:',
  ];
  for (const s of r.scenarios.filter((x) => x.onset === null)) {
    const fired = s.alerts.filter((a) => a.firedStep !== null);
    if (fired.length === 0) out.push(`  ${s.name}: none`);
    for (const a of fired) {
      out.push(
        `  ${s.name}: ${a.rule} [${a.metric}] ${a.severity} fired at step ${a.firedStep}` +
          `${a.resolvedStep !== null ? `, resolved at ${a.resolvedStep}` : ', still firing'} — ${a.summary}`,
      );
    }
  }
  const failed = r.scenarios.filter((s) => !s.pass);
  if (failed.length > 0) {
    out.push('', 'why FAIL:');
    for (const s of failed) out.push(`  ${s.name}: ${s.why.join('; ')}`);
  }
  out.push('', `${r.passed} PASS, ${r.failed} FAIL; details: ${r.file}`);
  return out.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const report = runScenarios();
  process.stdout.write(`\n${formatScenarioReport(report)}\n`);
  process.exit(0);
}
