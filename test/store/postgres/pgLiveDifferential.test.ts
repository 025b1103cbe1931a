/**
 * The same logs ingested by the real Ingestor and Engine into the SQLite Store and into a PgLiveStore leave the same
 * points, files, runs, examples, alerts, alert history, rule cursors and outbox payloads (ids and the rows' own ids
 * aside). Two routes, since their code paths differ: a backfill (each file read whole, evaluated without announcing,
 * then evaluated-behind and ticked), and live (the files appended to in small pieces, each read evaluated and
 * announced at once). The logs: the demo run (a collapse, a spike, plateaus; generations), and two written here: a TRL
 * run with a NaN loss and grad_norm, an infinite grad_norm, a trainer warning and its end, and a verl job restarted
 * from a checkpoint.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../../src/config/schema.ts';
import { parseDuration } from '../../../src/lib/duration.ts';
import { Engine } from '../../../src/engine/engine.ts';
import { ruleBookFor } from '../../../src/engine/presets/index.ts';
import { backfill } from '../../../src/ingest/backfill.ts';
import { Ingestor } from '../../../src/ingest/ingestor.ts';
import type { AlertRow } from '../../../src/store/alerts.ts';
import type { LiveStore } from '../../../src/store/live.ts';
import { PgLiveStore } from '../../../src/store/postgres/pgLiveStore.ts';
import { Store } from '../../../src/store/sqlite/store.ts';
import { tempDir } from '../../helpers.ts';
import { freshPgDatabase } from '../../pg/pgTest.ts';

const SAMPLE = join(import.meta.dirname, '..', '..', '..', 'samples', 'grpo-demo');
const config = ConfigSchema.parse({});
const NOW = 1_800_000_000_000;
const PREFIX = 'gpu-a';
const INGEST = { ...config.ingest, runPrefix: PREFIX };

/** A TRL run's stdout: healthy, then a NaN loss and grad_norm at step 20, an infinite grad_norm at 25, a reward
 * spike at 30, healthy again to 40; a trainer warning after steps 12 and 14, and the end-of-training summary. */
function trlLines(): string[] {
  const warning =
    '/trl/trainer/grpo_trainer.py:812: UserWarning: KL divergence is starting to become negative: ' +
    '-0.02 - this might be a precursor for failed training.';
  const lines = Array.from({ length: 40 }, (_, k) => {
    const i = k + 1;
    const loss = i === 20 ? 'nan' : (0.01 * i).toFixed(4);
    const grad = i === 20 ? 'nan' : i === 25 ? 'inf' : (0.5 + i / 100).toFixed(2);
    const reward = i === 30 ? '3.000' : (0.3 + i / 100).toFixed(3);
    const line =
      `{'loss': ${loss}, 'grad_norm': ${grad}, 'learning_rate': 9.8e-07, 'reward': ${reward}, ` +
      `'reward_std': 0.31, 'frac_reward_zero_std': 0.1, 'kl': 0.0004, 'entropy': 0.61, ` +
      `'epoch': ${(i / 50).toFixed(2)}}`;
    return i === 12 || i === 14 ? [line, warning] : [line];
  });
  const end = "{'train_runtime': 612.3, 'train_samples_per_second': 1.307, 'train_loss': 0.0061, 'epoch': 0.8}";
  return [...lines.flat(), end];
}

/** A verl console log of a job that restarts from its checkpoint of step 14 after logging step 23 (live, the
 * restart is the first line of a read): steps 15-23 come again, as a second attempt. grad_norm explodes at steps
 * 19-23 the first time, and its alert is open when the job restarts. */
function verlRestartLines(): string[] {
  const line = (step: number, grad: number): string =>
    `(TaskRunner pid=2231) step:${step} - actor/pg_loss:0.012 - actor/grad_norm:${grad} - ` +
    `critic/score/mean:${(0.2 + step / 100).toFixed(3)} - actor/entropy:0.61 - response_length/mean:312.0`;
  const first = Array.from({ length: 23 }, (_, k) => line(k + 1, k >= 18 ? 40 : 0.31));
  const again = Array.from({ length: 26 }, (_, k) => line(k + 15, 0.3));
  return [...first, ...again];
}

/** Each log's lines, by its path under a run root. */
function logs(): Map<string, string[]> {
  const files = new Map<string, string[]>();
  const sampleFiles = [
    'learning.log',
    'batch_metrics.jsonl',
    'reward_logs/completions.jsonl',
    'reward_logs/syntax_aware_breakdown.jsonl',
  ];
  for (const f of sampleFiles) {
    files.set(
      join('grpo-demo', f),
      readFileSync(join(SAMPLE, f), 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    );
  }
  files.set(join('trl-nan', 'train.log'), trlLines());
  files.set(join('verl-restart', 'verl_demo.log'), verlRestartLines());
  return files;
}

function engineOn(store: LiveStore): Engine {
  return new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: parseDuration(config.alerts.repeatInterval) as number,
    targets: ['console'],
    now: () => NOW,
  });
}

/** The backfill route, as `rlwatch backfill` (src/app/start.ts backfillPipeline): rules in each batch, no announcements,
 * then what is behind evaluated and one tick. */
async function backfillRoute(store: LiveStore, root: string): Promise<void> {
  for (const [path, lines] of logs()) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    appendFileSync(join(root, path), lines.map((l) => `${l}\n`).join(''));
  }
  const engine = engineOn(store);
  const ingestor = new Ingestor(
    store,
    INGEST,
    () => {},
    (r) => void engine.evaluate(r.runId, false),
  );
  await backfill(ingestor, [root], config.watch);
  engine.evaluateBehind();
  engine.tick();
}

/** The live route, as `rlwatch start` after its catch-up: every file appended to `piece` lines at a time, in turn,
 * each append read at once and its batch evaluated and announced; a tick every few rounds. */
async function liveRoute(store: LiveStore, root: string, piece = 23): Promise<void> {
  const all = logs();
  for (const path of all.keys()) mkdirSync(join(root, path, '..'), { recursive: true });
  const engine = engineOn(store);
  const ingestor = new Ingestor(
    store,
    INGEST,
    () => {},
    (r) => void engine.evaluate(r.runId, true),
  );
  engine.caughtUp();
  for (let round = 0; [...all.values()].some((lines) => lines.length > round * piece); round++) {
    for (const [path, lines] of all) {
      const part = lines.slice(round * piece, (round + 1) * piece);
      if (part.length === 0) continue;
      appendFileSync(join(root, path), part.map((l) => `${l}\n`).join(''));
      await ingestor.ingest(join(root, path), root);
    }
    if (round % 4 === 3) engine.tick();
  }
  engine.tick();
}

/** What both stores must hold alike, by names (not ids), with JSON compared as values. */
const QUERIES = {
  runs: `SELECT name, path, first_step, last_step, records, batches, evaluated, live_at IS NOT NULL AS live
         FROM runs ORDER BY id`,
  files: `SELECT f.path, f.format, f."offset", f.size, f.lines, f.records, f.skipped, f.last_step, f.attempt
          FROM files f ORDER BY f.id`,
  points: `SELECT r.name AS run, m.name AS metric, p.step, p.value FROM points p JOIN runs r ON r.id = p.run_id
           JOIN metrics m ON m.id = p.metric_id`,
  examples: `SELECT r.name AS run, e.step, e.key, e.reward, e.completion, e.breakdown FROM examples e
             JOIN runs r ON r.id = e.run_id`,
  attempts: 'SELECT run_id, attempt, resumed_step, last_step, rewound FROM attempts ORDER BY run_id, attempt',
  alerts: `SELECT r.name AS run, a.rule, a.metric, a.severity, a.state, a.summary, a.details, a.started_step,
             a.fired_step, a.resolved_step, a.notified_state
           FROM alerts a JOIN runs r ON r.id = a.run_id ORDER BY a.id`,
  alertEvents: `SELECT a.rule, a.metric, a.started_step, e.step, e.state, e.details FROM alert_events e
                JOIN alerts a ON a.id = e.alert_id ORDER BY e.id`,
  cursors: `SELECT r.name AS run, c.cursors AS cursors FROM run_cursors c JOIN runs r ON r.id = c.run_id
            ORDER BY r.name`,
  outbox: 'SELECT r.name AS run, o.target, o.payload FROM outbox o JOIN runs r ON r.id = o.run_id ORDER BY o.id',
};
type Rows = Record<keyof typeof QUERIES, Array<Record<string, unknown>>>;

/** JSON columns as values; SQLite's NULL for a NaN point as NaN; alert ids out of the payloads; rows whose order
 * the query leaves open sorted. */
function normalised(rows: Rows): Rows {
  const json = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);
  const withoutIds = (v: unknown): unknown =>
    JSON.parse(JSON.stringify(v), (k, x: unknown) => (k === 'alertId' ? undefined : x));
  const byKey = (a: Record<string, unknown>, b: Record<string, unknown>): number => {
    const ka = JSON.stringify(Object.values(a));
    const kb = JSON.stringify(Object.values(b));
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
  return {
    ...rows,
    runs: rows.runs.map((r) => ({ ...r, live: Boolean(r.live) })),
    points: rows.points.map((p) => ({ ...p, value: p.value === null ? NaN : p.value })).sort(byKey),
    examples: rows.examples.map((e) => ({ ...e, breakdown: json(e.breakdown) })).sort(byKey),
    alerts: rows.alerts.map((a) => ({ ...a, details: json(a.details) })),
    alertEvents: rows.alertEvents.map((e) => ({ ...e, details: json(e.details) })),
    cursors: rows.cursors.map((c) => ({ ...c, cursors: json(c.cursors) })),
    outbox: rows.outbox.map((o) => ({ ...o, payload: withoutIds(json(o.payload)) })),
  };
}

function sqliteRows(path: string): Rows {
  const db = new Database(path, { readonly: true });
  try {
    return normalised(
      Object.fromEntries(Object.entries(QUERIES).map(([k, sql]) => [k, db.prepare(sql).all()])) as Rows,
    );
  } finally {
    db.close();
  }
}

/** The rows of `sql` (or of each query of a set), bigint as numbers as the stores read them. */
async function pgQuery(url: string, sql: string): Promise<unknown[]>;
async function pgQuery(url: string, sql: Record<string, string>): Promise<Record<string, unknown[]>>;
async function pgQuery(url: string, sql: string | Record<string, string>): Promise<unknown> {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === 20 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const c = new pg.Client({ connectionString: url, types });
  await c.connect();
  try {
    if (typeof sql === 'string') return (await c.query(sql)).rows;
    const out: Record<string, unknown[]> = {};
    for (const [k, q] of Object.entries(sql)) out[k] = (await c.query(q)).rows;
    return out;
  } finally {
    await c.end();
  }
}

/** `route` into each store, over the same root (made anew for each): run and file paths are the same. */
async function bothStores(
  route: (s: LiveStore, root: string) => Promise<void>,
): Promise<{ sqlite: Rows; postgres: Rows }> {
  const root = join(tempDir(), 'runs');
  const fresh = (): string => {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root);
    return root;
  };
  const path = join(tempDir(), 'rlwatch.db');
  const sqlite = Store.open(path, { now: () => NOW });
  try {
    await route(sqlite, fresh());
  } finally {
    sqlite.close();
  }
  const url = await freshPgDatabase();
  const postgres = await PgLiveStore.open(url, { scope: PREFIX, now: () => NOW });
  let held: AlertRow[];
  try {
    await route(postgres, fresh());
    held = postgres.runs.list().flatMap((r) => postgres.alerts.openOf(r.id));
  } finally {
    await postgres.close();
  }
  // the open alerts the store holds between evaluations are the table's
  expect(held).toEqual(await pgQuery(url, `SELECT * FROM alerts WHERE state != 'resolved' ORDER BY run_id, id`));
  return { sqlite: sqliteRows(path), postgres: normalised((await pgQuery(url, QUERIES)) as Rows) };
}

function expectAlike(r: { sqlite: Rows; postgres: Rows }): void {
  for (const table of Object.keys(QUERIES) as Array<keyof Rows>) {
    expect(r.postgres[table], table).toEqual(r.sqlite[table]);
  }
}

describe('the same logs into SQLite and into PgLiveStore', () => {
  let backfilled: { sqlite: Rows; postgres: Rows };
  let live: { sqlite: Rows; postgres: Rows };
  beforeAll(async () => {
    backfilled = await bothStores(backfillRoute);
    live = await bothStores((s, root) => liveRoute(s, root));
  }, 240_000);

  it('as a backfill: the same points, files, runs, alerts, alert history, cursors and outbox payloads', () => {
    const { sqlite } = backfilled;
    // there is something to compare: the demo's and the NaN run's incidents, still firing ones announced
    expect(sqlite.points.length).toBeGreaterThan(3000);
    expect(sqlite.alerts.map((a) => a.rule)).toEqual(expect.arrayContaining(['non_finite', 'mode_collapse']));
    expect(sqlite.outbox.length).toBeGreaterThan(0);
    expect(sqlite.examples.length).toBeGreaterThanOrEqual(4);
    expect(sqlite.attempts.map((a) => a.attempt)).toContain(2); // the verl job's restart
    expectAlike(backfilled);
  });

  it('live, in small appends, each evaluated and announced: the same again', () => {
    const { sqlite } = live;
    expect(sqlite.outbox.length).toBeGreaterThan(5);
    expect(sqlite.alerts.some((a) => a.state === 'resolved' && a.notified_state === 'resolved')).toBe(true);
    expect(sqlite.runs.every((r) => r.live)).toBe(true);
    expect(sqlite.attempts.map((a) => a.attempt)).toContain(2);
    const restarted = sqlite.alerts.filter((a) => a.run === 'gpu-a/verl-restart' && a.rule === 'grad_explosion');
    expect(restarted.map((a) => a.summary)).toEqual([expect.stringMatching(/^grad_norm/)]);
    expect(sqlite.alertEvents.some((e) => JSON.stringify(e.details).includes('the job restarted'))).toBe(true);
    // the TRL run's warning and its end were read from its events
    const trl = sqlite.alerts.filter((a) => a.run === 'gpu-a/trl-nan').map((a) => a.rule);
    expect(trl).toEqual(expect.arrayContaining(['trainer_warning', 'run_finished']));
    expectAlike(live);
  });
});
