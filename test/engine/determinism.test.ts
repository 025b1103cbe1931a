/**
 * The alerts of a run are a function of its bytes, not of how they were read: the same files fed to the real
 * Ingestor and Engine (a real SQLite file) as one backfill, as many small live reads (pieces cut anywhere, files
 * interleaved, each read evaluated and announced) and as a few large ones leave the same `alerts --all` rows.
 * Over the bundled demo run, every run of ../shared/real-logs and a seeded synthetic run that collapses and recovers.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { discoverFiles } from '../../src/ingest/discover/discover.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { realLogsDir, tempDir } from '../helpers.ts';
import { Trace, presetOnly, times, type Values } from './trace.ts';

const config = ConfigSchema.parse({});
/** one fixed clock for every route: the wall clock is no part of what is compared */
const NOW = 1_800_000_000_000;
const DEPTH = 8;
const HOUR = 3_600_000;

/** A run's files: path relative to the runs' root -> bytes. */
type Files = Map<string, Buffer>;

function filesUnder(root: string): Files {
  return new Map(discoverFiles(root, DEPTH).map((p) => [relative(root, p), readFileSync(p)]));
}

/**
 * A seeded GRPO run in learning.log lines: a reward climbing under noise, a collapse at step 250 (reward to a
 * quarter, entropy to near zero, every group the same) and a recovery from step 400.
 */
function syntheticRun(seed: number): Buffer {
  const rand = mulberry32(seed);
  const noise = (scale: number): number => (rand() + rand() + rand() - 1.5) * scale;
  const lines: string[] = [];
  for (let i = 0; i < 600; i++) {
    const collapsed = i >= 250 && i < 400;
    const reward = Math.max(0, (collapsed ? 0.12 : 0.2 + 0.5 * (1 - Math.exp(-i / 150))) + noise(0.05));
    const entropy = collapsed ? 0.01 + noise(0.002) : 0.15 + noise(0.02);
    const frac = collapsed ? 0.95 : Math.min(1, Math.max(0, 0.2 + noise(0.1)));
    lines.push(
      `[Epoch ${(i / 100).toFixed(2)}]  loss=${noise(0.05).toFixed(4)}  grad=${(0.06 + Math.abs(noise(0.02))).toFixed(4)}  ` +
        `lr=3.58e-06  reward=${reward.toFixed(3)}±0.077  syntax_rew=${reward.toFixed(3)}±0.078  ` +
        `entropy=${Math.abs(entropy).toFixed(3)}  frac_zero_std=${frac.toFixed(2)}`,
    );
  }
  return Buffer.from(lines.map((l) => `${l}\n`).join(''));
}

/** What `alerts --all --json` says of each alert that is a function of the records: not ids, not wall-clock times. */
interface Seen {
  run: string;
  rule: string;
  metric: string;
  severity: string;
  state: string;
  started: number;
  fired: number | null;
  resolved: number | null;
  summary: string;
}

const ON_THE_CLOCK = new Set(GRPO_PRESET.filter((r) => r.kind === 'stall' || r.kind === 'crash').map((r) => r.id));

function alertsOf(store: Store): Seen[] {
  const names = new Map(store.runs.list().map((r) => [r.id, r.name]));
  return (
    store.alerts
      .list({ all: true })
      // judged on rlwatch's clock, not on the records: stall (the silence since the file last grew), and run_crashed
      // of an error that is not fatal (read live it is held for a grace to see whether the job survives; read as
      // history it fires only when it is the log's last word from the job's own process)
      .filter((a) => !ON_THE_CLOCK.has(a.rule))
      .map((a) => ({
        run: names.get(a.run_id) ?? '?',
        rule: a.rule,
        metric: a.metric,
        severity: a.severity,
        state: a.state,
        started: a.started_step,
        fired: a.fired_step,
        resolved: a.resolved_step,
        summary: a.summary,
      }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
  );
}

/** The whole files read by one backfill, history evaluated without announcing, then one tick: `rlwatch backfill`. */
async function readByBackfill(files: Files): Promise<Seen[]> {
  const root = tempDir('rlw-det-');
  const runs = join(root, 'runs');
  for (const [rel, bytes] of files) {
    mkdirSync(dirname(join(runs, rel)), { recursive: true });
    writeFileSync(join(runs, rel), bytes);
  }
  const { store } = freshStore({ dir: root, now: () => NOW });
  try {
    const engine = makeEngine(store, config, { terminal: true, now: () => NOW });
    const ingestor = new Ingestor(store, config.ingest, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId, false);
    });
    await backfill(ingestor, [runs], { depth: DEPTH });
    engine.tick();
    return alertsOf(store);
  } finally {
    store.close();
  }
}

/**
 * The files as `start` reads them while a trainer writes: each file grows by pieces of 1 to `maxPiece` bytes (cut
 * mid-line and mid-character), the files taking turns at random, a read after each piece whose batches are evaluated
 * and announced at once; the reader's own buffer is random too. With `restarts`, after a piece the process stops
 * at that rate (the store closed, nothing else kept) and a new one reads what is there as history, then live.
 */
async function readLive(files: Files, seed: number, maxPiece: number, restarts = 0): Promise<Seen[]> {
  const rand = mulberry32(seed);
  const root = tempDir('rlw-det-');
  const runs = join(root, 'runs');
  let now = NOW;
  const chunkBytes = 256 + Math.floor(rand() * 4096);
  const left = [...files].map(([rel, bytes]) => ({ path: join(runs, rel), bytes, at: 0 }));
  for (const f of left) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, '');
  }
  let announce = true;
  const startProcess = () => {
    const store = Store.open(join(root, 'rlwatch.db'), { now: () => now });
    const engine = makeEngine(store, config, { terminal: true, now: () => now });
    const ingestor = new Ingestor(store, { ...config.ingest, chunkBytes }, (e) => {
      if (e.kind === 'batch') engine.evaluate(e.result.runId, announce);
    });
    return { store, engine, ingestor };
  };
  let p = startProcess();
  p.engine.caughtUp();
  try {
    while (left.length > 0) {
      const k = Math.floor(rand() * left.length);
      const f = left[k]!;
      const end = Math.min(f.bytes.length, f.at + 1 + Math.floor(rand() * maxPiece));
      appendFileSync(f.path, f.bytes.subarray(f.at, end));
      f.at = end;
      await p.ingestor.ingest(f.path, runs);
      if (f.at === f.bytes.length) left.splice(k, 1);
      if (rand() < restarts) {
        p.store.close();
        p = startProcess();
        announce = false;
        for (const g of files.keys()) await p.ingestor.ingest(join(runs, g), runs);
        announce = true;
        p.engine.caughtUp();
      }
    }
    // an error read live is held for run_crashed's grace on rlwatch's clock (the job may survive it): let it pass
    now += HOUR;
    p.engine.tick();
    return alertsOf(p.store);
  } finally {
    if (p.store.db.open) p.store.close();
  }
}

const SAMPLES = join(import.meta.dirname, '..', '..', 'samples');

/** Each source as its own set of files: the demo run, each real run, the synthetic run. */
function sources(): Array<[string, Files]> {
  const out: Array<[string, Files]> = [['grpo-demo', filesUnder(SAMPLES)]];
  const real = realLogsDir();
  const byRun = new Map<string, Files>();
  for (const [rel, bytes] of filesUnder(real)) {
    const run = rel.split('/')[0]!;
    if (!byRun.has(run)) byRun.set(run, new Map());
    byRun.get(run)!.set(rel, bytes);
  }
  for (const [run, files] of [...byRun].sort(([a], [b]) => a.localeCompare(b)))
    if (files.size > 0 && !run.includes('.')) out.push([run, files]);
  out.push(['synthetic', new Map([['synthetic/learning.log', syntheticRun(7)]])]);
  return out;
}

describe('the same bytes give the same alerts, however they are read', () => {
  const all = sources();
  const whole = new Map<string, Seen[]>();
  beforeAll(async () => {
    for (const [name, files] of all) whole.set(name, await readByBackfill(files));
  }, 300_000);

  it('the sources raise alerts that fire and resolve: there is something to compare', () => {
    const seen = [...whole.values()].flat();
    expect(seen.some((a) => a.state === 'resolved')).toBe(true);
    expect(seen.filter((a) => a.fired !== null).length).toBeGreaterThan(10);
    // the synthetic collapse is caught
    expect(whole.get('synthetic')!.some((a) => a.fired !== null && a.fired >= 250 && a.fired < 400)).toBe(true);
  });

  it.each(all.map(([name]) => name))(
    '%s: many small live reads, a few large ones, one backfill',
    async (name) => {
      const files = all.find(([n]) => n === name)![1];
      const expected = whole.get(name)!;
      for (const seed of [1, 2, 3])
        expect(await readLive(files, seed, 400), `small pieces, seed ${seed}`).toEqual(expected);
      for (const seed of [4, 5])
        expect(await readLive(files, seed, 200_000), `large pieces, seed ${seed}`).toEqual(expected);
    },
    300_000,
  );

  // A process that starts again in the middle of a console log's multi-line step, or of its reader's working out of
  // steps (tqdm marks, steps per epoch), reads the lines before its checkpoint again to get that context back.
  it.each(all.map(([name]) => name))(
    '%s: live reads with the process restarted now and then',
    async (name) => {
      const files = all.find(([n]) => n === name)![1];
      for (const seed of [6, 7])
        expect(await readLive(files, seed, 2000, 0.05), `restarts, seed ${seed}`).toEqual(whole.get(name));
    },
    300_000,
  );
});

describe('a step whose record lands in two reads', () => {
  /** Each record committed and evaluated in two halves at the same step (the first key, then the rest), as the
   * lines of one console step read in two pieces; `whole` commits each record at once. */
  function split(book: RuleBook, rows: readonly Values[], whole: boolean, rand?: () => number): string[] {
    const t = new Trace({ book });
    rows.forEach((row, i) => {
      const entries = Object.entries(row);
      if (whole || entries.length < 2) {
        t.feed([row]);
        return;
      }
      // the first key alone, or (with `rand`) a random share of the keys in their order
      const at = rand ? 1 + Math.floor(rand() * (entries.length - 1)) : 1;
      t.feed([Object.fromEntries(entries.slice(0, at))]);
      t.resumeAt(i + 1).feed([Object.fromEntries(entries.slice(at))]);
    });
    // in no particular order: which alert is made first within a step follows which metric came first
    return t
      .alerts()
      .map((a) => `${a.rule} ${a.state} ${a.started_step} ${a.fired_step} ${a.resolved_step} ${a.summary}`)
      .sort();
  }

  it('the whole preset over a seeded run that collapses and recovers, each record cut in two at random', () => {
    const rand = mulberry32(11);
    const noise = (scale: number): number => (rand() + rand() + rand() - 1.5) * scale;
    const rows: Values[] = Array.from({ length: 400 }, (_, i) => {
      const collapsed = i >= 200 && i < 280;
      const reward = collapsed ? 0.1 + noise(0.03) : 0.25 + 0.4 * (1 - Math.exp(-i / 120)) + noise(0.05);
      return {
        epoch: (i + 1) / 100,
        loss: noise(0.05),
        grad_norm: collapsed && i % 17 === 0 ? 40 : 0.5 + Math.abs(noise(0.2)),
        reward,
        reward_std: collapsed ? 0.01 : 0.2 + noise(0.05),
        'rewards/format': collapsed ? 0.95 : 0.5 + noise(0.1),
        'rewards/accuracy': collapsed ? 0.02 : reward,
        entropy: collapsed ? 0.02 : 0.4 + noise(0.05),
        frac_zero_std: collapsed ? 0.95 : Math.max(0, 0.2 + noise(0.1)),
        kl: collapsed ? 0.5 : 0.01 + Math.abs(noise(0.005)),
        clipped_ratio: collapsed ? 0.9 : Math.max(0, 0.05 + noise(0.05)),
        completion_length: collapsed ? 1024 : 300 + noise(60),
      };
    });
    const cut = mulberry32(12);
    const shuffled = rows.map((r) => Object.fromEntries(Object.entries(r).sort(() => cut() - 0.5)));
    const whole = split(RuleBook.build(GRPO_PRESET, []), shuffled, true);
    expect(whole.length).toBeGreaterThan(3);
    expect(split(RuleBook.build(GRPO_PRESET, []), shuffled, false, cut)).toEqual(whole);
  });

  it('a rule of two metrics (no_learning: loss 0 and grad_norm 0 for 3) judges each step with both', () => {
    const rows = [
      ...times(5, { loss: 0.1, grad_norm: 0.5 }),
      ...times(4, { loss: 0, grad_norm: 0 }),
      ...times(5, { loss: 0.1, grad_norm: 0.5 }),
    ];
    const whole = split(presetOnly('no_learning'), rows, true);
    expect(whole.length).toBe(1);
    expect(split(presetOnly('no_learning'), rows, false)).toEqual(whole);
  });

  it('non_finite counts a step once towards its recovery (recoverFor 5), whichever of its metrics comes first', () => {
    const ok = { loss: 0.1, grad_norm: 0.5, reward: 0.3 };
    const rows = [...times(3, ok), { loss: NaN, grad_norm: Infinity, reward: 0.3 }, ...times(8, ok)];
    const whole = split(presetOnly('non_finite'), rows, true);
    expect(whole.length).toBe(1);
    expect(split(presetOnly('non_finite'), rows, false)).toEqual(whole);
  });

  it('reward_hacking judges each step with every reward function', () => {
    const fill = (n: number, v: number): number[] => Array<number>(n).fill(v);
    const format = [...fill(15, 0.48), ...fill(30, 0.86)];
    const accuracy = [...fill(15, 0.16), ...fill(30, 0.06)];
    const rows = format.map((f, i) => ({ 'rewards/format': f, 'rewards/accuracy': accuracy[i]! }));
    const whole = split(presetOnly('reward_hacking'), rows, true);
    expect(whole.length).toBe(1);
    expect(split(presetOnly('reward_hacking'), rows, false)).toEqual(whole);
  });
});
