/**
 * Stationary noise through the GRPO preset: 100,000 steps of a reward that never changes its level, in several shapes
 * and levels, committed to a fresh Store in batches and evaluated as `rlwatch backfill` would. A monitor that raises
 * trends on such a series is noise itself (a trend rule on the 10% change alone raised 23,066 incidents on 200,000
 * steps).
 * Target: 0 trend incidents and at most 1 plateau incident per series. Writes bench/out/noise.json.
 *
 * A report, not a test. Alone: `node --import tsx bench/noise.ts`; also run by `npm run bench`.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Engine } from '../src/engine/engine.ts';
import { GRPO_PRESET } from '../src/engine/presets/grpo.ts';
import { RuleBook } from '../src/engine/rules.ts';
import { Store } from '../src/store/sqlite/store.ts';
import { rng } from './generate.ts';

const OUT = join(dirname(fileURLToPath(import.meta.url)), 'out');
export const NOISE_STEPS = 100_000;
const BATCH = 1000;
const TREND_RULES = new Set(['reward_trend']);

export interface NoiseResult {
  name: string;
  steps: number;
  /** incidents (alert rows that fired) per rule */
  incidents: Record<string, number>;
  trendIncidents: number;
  plateauIncidents: number;
  pass: boolean;
}

/** The series: each a draw per step from one fixed distribution. */
export function noiseSeries(): Array<{ name: string; draw: (r: () => number) => number }> {
  const gauss = (r: () => number): number =>
    Math.sqrt(-2 * Math.log(Math.max(r(), 1e-12))) * Math.cos(2 * Math.PI * r());
  return [
    { name: 'uniform [0.05, 0.3]', draw: (r) => 0.05 + 0.25 * r() },
    { name: 'uniform [0, 1]', draw: (r) => r() },
    { name: 'gaussian 0.5 ± 0.1', draw: (r) => 0.5 + 0.1 * gauss(r) },
    { name: 'gaussian 0.2 ± 0.1', draw: (r) => 0.2 + 0.1 * gauss(r) },
    { name: 'gaussian -1.5 ± 0.5 (rewards in [-3, 0])', draw: (r) => -1.5 + 0.5 * gauss(r) },
    { name: 'bimodal 0.1 / 0.8 (± 0.03)', draw: (r) => (r() < 0.5 ? 0.1 : 0.8) + 0.03 * gauss(r) },
  ];
}

export function runNoise(steps = NOISE_STEPS): NoiseResult[] {
  const dir = join(OUT, 'noise');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const book = RuleBook.build(GRPO_PRESET, []);
  return noiseSeries().map(({ name, draw }, k) => {
    const store = Store.open(join(dir, `${k}.db`));
    const engine = new Engine(store, book, { repeatIntervalMs: 4 * 3_600_000, targets: ['console'], now: () => 0 });
    const run = store.runs.ensure(`noise-${k}`, `/noise/${k}`);
    const file = store.files.add(run.id, `/noise/${k}/train.jsonl`, 'jsonlMetrics');
    const r = rng(11_000 + k);
    for (let s = 1; s <= steps; s += BATCH) {
      const metrics = [];
      for (let step = s; step < Math.min(s + BATCH, steps + 1); step++)
        metrics.push({ step, values: new Map([['reward', draw(r)]]) });
      const n = metrics.length;
      store.commit(
        {
          runId: run.id,
          fileId: file.id,
          metrics,
          examples: [],
          skips: new Map(),
          progress: { dev: 0, ino: 0, offset: s + n, size: s + n, mtimeMs: 0, seq: s, lines: n, records: n },
        },
        2,
      );
      engine.evaluate(run.id, false);
    }
    const fired = store.alerts.list({ runId: run.id, all: true }).filter((a) => a.fired_step !== null);
    store.close();
    const incidents: Record<string, number> = {};
    for (const a of fired) incidents[a.rule] = (incidents[a.rule] ?? 0) + 1;
    const trendIncidents = fired.filter((a) => TREND_RULES.has(a.rule)).length;
    const plateauIncidents = incidents['reward_plateau'] ?? 0;
    return {
      name,
      steps,
      incidents,
      trendIncidents,
      plateauIncidents,
      pass: trendIncidents === 0 && plateauIncidents <= 1,
    };
  });
}

export function formatNoiseReport(results: readonly NoiseResult[], seconds: number): string {
  const lines = [
    `stationary noise through the GRPO preset (${results[0]?.steps ?? 0} steps each, ${seconds.toFixed(1)} s):`,
  ];
  for (const r of results) {
    const all =
      Object.entries(r.incidents)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none';
    lines.push(
      `  ${r.name.padEnd(42)} trend ${r.trendIncidents} (0), plateau ${r.plateauIncidents} (≤ 1)  ${r.pass ? 'PASS' : 'FAIL'}   all: ${all}`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const t0 = performance.now();
  const steps = Number(process.env['BENCH_NOISE_STEPS']) || NOISE_STEPS;
  const results = runNoise(steps);
  const seconds = (performance.now() - t0) / 1000;
  mkdirSync(OUT, { recursive: true });
  writeFileSync(
    join(OUT, 'noise.json'),
    `${JSON.stringify({ date: new Date().toISOString(), seconds, results }, null, 2)}\n`,
  );
  process.stdout.write(`${formatNoiseReport(results, seconds)}\n`);
}
