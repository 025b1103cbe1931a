/**
 * The independent labelled suite: 10 healthy runs and 14 failures in three formats (bench/suite/runs.ts), written
 * to disk, backfilled by the real `rlwatch backfill` (bin/rlwatch, the default config's rules) and scored from
 * `rlwatch alerts --all --json` (bench/suite/score.ts). Writes bench/out/suite.json.
 * Alone: BENCH_ONLY=suite npm run bench.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { bareEnv } from '../proc.ts';
import { buildSuite } from './runs.ts';
import {
  GRADUAL_TARGET,
  MAX_NOTIFICATIONS_AFTER,
  scoreRun,
  SUDDEN_TARGET,
  totals,
  type Incident,
  type RunScore,
  type SuiteTotals,
} from './score.ts';
import { writeRun } from './write.ts';

const RLWATCH = join(import.meta.dirname, '..', '..', 'bin', 'rlwatch');

export interface SuiteResult {
  runs: Array<RunScore & { format: string; steps: number }>;
  totals: SuiteTotals;
  seconds: { generate: number; backfill: number; total: number };
}

function rlwatch(cwd: string, args: readonly string[]): string {
  // the default config: no RLWATCH_* settings, and a working directory without an rlwatch.yaml
  const child = spawnSync(process.execPath, [RLWATCH, ...args], {
    cwd,
    env: bareEnv(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 256 * 1024 * 1024,
  });
  if (child.status !== 0) throw new Error(`rlwatch ${args[0]} exited ${child.status}: ${child.stderr.slice(-2000)}`);
  return child.stdout;
}

export function runSuite(dir: string): SuiteResult {
  const t0 = performance.now();
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'runs');
  mkdirSync(root, { recursive: true });
  const suite = buildSuite();
  for (const run of suite) writeRun(root, run);
  const t1 = performance.now();
  const db = join(dir, 'suite.db');
  rlwatch(dir, ['backfill', root, '--db', db]);
  const t2 = performance.now();
  const incidents = JSON.parse(rlwatch(dir, ['alerts', '--all', '--json', '--db', db])) as Incident[];
  const runs = suite.map((run) => ({
    ...scoreRun(run.name, run.label, incidents),
    format: run.format,
    steps: run.data.steps.length,
  }));
  const t3 = performance.now();
  return {
    runs,
    totals: totals(runs),
    seconds: { generate: (t1 - t0) / 1000, backfill: (t2 - t1) / 1000, total: (t3 - t0) / 1000 },
  };
}

export function writeSuiteJson(outDir: string, r: SuiteResult): void {
  writeFileSync(join(outDir, 'suite.json'), `${JSON.stringify(r, null, 2)}\n`);
}

const pages = (ps: ReadonlyArray<{ rule: string; step: number }>): string =>
  ps.length === 0
    ? '-'
    : ps
        .slice(0, 4)
        .map((p) => `${p.rule}@${p.step}`)
        .join(', ') + (ps.length > 4 ? ` +${ps.length - 4}` : '');

export function formatSuiteReport(r: SuiteResult): string {
  const rows: string[][] = r.runs.map((s) => {
    const verdict = s.pass ? 'PASS' : 'FAIL';
    if (s.onset === undefined) {
      return [
        s.run,
        s.format,
        String(s.steps),
        'healthy',
        '',
        '',
        '',
        `${s.falseAlarms.length} pages: ${pages(s.falseAlarms)}`,
        '',
        verdict,
      ];
    }
    const caught = s.detectedBy ? `${s.detectedBy.rule} +${s.delay}` : 'missed';
    return [
      s.run,
      s.format,
      String(s.steps),
      `${s.kind} (${s.sudden ? 'sudden' : 'gradual'})`,
      String(s.onset),
      caught,
      `<= ${s.target}${s.detectedBy ? (s.inTime ? ' ok' : ' late') : ''}`,
      `${s.falseAlarms.length} before: ${pages(s.falseAlarms)}`,
      `${s.after.length} after (${s.wrongCause.length} wrong: ${pages(s.wrongCause)})` +
        (s.riders.length > 0
          ? `; with a resolution: ${s.riders.map((p) => `${p.rule}@${p.step} (${p.with})`).join(', ')}`
          : '') +
        (s.escalations.length > 0
          ? `; escalated, the same incident: ${s.escalations.map((p) => `${p.rule}@${p.step} (${p.severity})`).join(', ')}`
          : ''),
      verdict,
    ];
  });
  const head = [
    'run',
    'format',
    'steps',
    'label',
    'onset',
    'caught by, delay',
    'target',
    'false alarms',
    'notifications',
    '',
  ];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(width[i]!))
      .join('  ')
      .trimEnd();
  const t = r.totals;
  return [
    `independent labelled suite: ${r.runs.length} runs (targets: a right rule within ${SUDDEN_TARGET} steps of a sudden onset, ` +
      `${GRADUAL_TARGET} of a gradual one; no page before it; <= ${MAX_NOTIFICATIONS_AFTER} notification after it; no page on a healthy run)`,
    line(head),
    line(width.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `failures caught with the right cause in time: ${t.caught} of ${t.failures} (detected at all: ${t.detected}); ` +
      `wrong-cause pages after onset: ${t.wrongCause}; symptoms announced with their cause's resolution: ${t.riders}; ` +
      `incidents announced again when their severity rose: ${t.escalations}`,
    `healthy runs with any warning or critical: ${t.healthyWithPages} of ${t.healthy}; false alarms in all: ${t.falseAlarms}`,
    `suite ${t.pass ? 'PASS' : 'FAIL'} (${r.seconds.total.toFixed(1)} s: generate ${r.seconds.generate.toFixed(1)} s, ` +
      `backfill ${r.seconds.backfill.toFixed(1)} s)`,
    '',
  ].join('\n');
}
