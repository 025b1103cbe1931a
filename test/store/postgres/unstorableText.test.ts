/**
 * A NUL byte or a lone UTF-16 half in a log (a JSON key, a generation, a run's config) on the real embedded
 * PostgreSQL: PostgreSQL's text refuses NUL, and the batch with it, so the file never got past that line. The store
 * leaves out a metric whose name holds one, cleans other text, and counts both among the file's skips; the lines
 * after it are stored, and SQLite holds the same.
 */
import pg from 'pg';
import Database from 'better-sqlite3';
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../../src/config/schema.ts';
import { backfill } from '../../../src/ingest/backfill.ts';
import { Ingestor } from '../../../src/ingest/ingestor.ts';
import { BAD_NAME, CLEANED_TEXT } from '../../../src/store/batchGuard.ts';
import type { LiveStore } from '../../../src/store/live.ts';
import { PgLiveStore } from '../../../src/store/postgres/pgLiveStore.ts';
import { PgStore } from '../../../src/store/postgres/pgStore.ts';
import { Store } from '../../../src/store/sqlite/store.ts';
import { tempDir } from '../../helpers.ts';
import { freshPgDatabase } from '../../pg/pgTest.ts';

const config = ConfigSchema.parse({});
const NOW = 1_800_000_000_000;
const INGEST = { ...config.ingest, runPrefix: 'gpu-a' };

// JSON escapes, as a logger writes them: the parsed text holds the NUL and the lone half
const METRIC_LINES = [
  '{"step": 1, "loss": 0.5}',
  '{"step": 2, "loss": 0.4, "bad\\u0000key": 1}',
  '{"step": 3, "loss": 0.3, "half\\ud800": 2}',
  '{"step": 4, "loss": 0.2}',
  '{"step": 5, "loss": 0.1}',
];
const COMPLETIONS = [
  '{"problem_id": "p1", "reward": 0.5, "completion": "print(1)\\u0000 END"}',
  '{"problem_id": "p1", "reward": 0.9, "completion": "fine \\ud83d\\ude00 END"}',
];

/** Backfills the run into `store`, then commits a batch whose event carries a run config with a NUL in a value. */
async function ingest(store: LiveStore, root: string): Promise<void> {
  mkdirSync(join(root, 'r1', 'reward_logs'), { recursive: true });
  appendFileSync(join(root, 'r1', 'metrics.jsonl'), METRIC_LINES.map((l) => `${l}\n`).join(''));
  appendFileSync(join(root, 'r1', 'reward_logs', 'completions.jsonl'), COMPLETIONS.map((l) => `${l}\n`).join(''));
  await backfill(new Ingestor(store, INGEST, () => {}), [root], config.watch);
  const run = store.runs.list()[0]!;
  const file = store.files.byPath(join(root, 'r1', 'metrics.jsonl'))!;
  store.commit(
    {
      runId: run.id,
      fileId: file.id,
      metrics: [{ step: 6, values: new Map([['loss', 0.05]]) }],
      examples: [],
      events: [
        { kind: 'meta', step: 6, title: 'config', text: 'model: qwen\u0000', config: { model: 'qwen\u0000-7b' } },
      ],
      skips: new Map(),
      progress: {
        dev: file.dev!,
        ino: file.ino!,
        offset: file.offset,
        size: file.size,
        mtimeMs: 0,
        seq: file.seq,
        lines: 1,
        records: 1,
      },
    },
    2,
  );
}

const QUERIES = {
  metrics: 'SELECT m.name FROM run_metrics r JOIN metrics m ON m.id = r.metric_id ORDER BY m.name',
  points: 'SELECT m.name, p.step, p.value FROM points p JOIN metrics m ON m.id = p.metric_id ORDER BY p.step, m.name',
  examples: 'SELECT completion, reward FROM examples ORDER BY reward',
  events: "SELECT title, text, config FROM events WHERE kind = 'meta' ORDER BY id",
  skips: `SELECT f.path, s.reason, s.count, s.sample FROM file_skips s JOIN files f ON f.id = s.file_id
          ORDER BY s.reason, s.sample`,
  files: 'SELECT path, "offset", size, lines, skipped FROM files ORDER BY path',
};
type Rows = Record<keyof typeof QUERIES, Array<Record<string, unknown>>>;

async function pgRowsOf(url: string): Promise<Rows> {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === 20 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const c = new pg.Client({ connectionString: url, types });
  await c.connect();
  try {
    const out: Record<string, unknown[]> = {};
    for (const [k, q] of Object.entries(QUERIES)) out[k] = (await c.query(q)).rows;
    return out as Rows;
  } finally {
    await c.end();
  }
}

function sqliteRowsOf(path: string): Rows {
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(Object.entries(QUERIES).map(([k, q]) => [k, db.prepare(q).all()])) as Rows;
  } finally {
    db.close();
  }
}

describe('text PostgreSQL refuses, in a log', () => {
  it('holds no file back: later lines stored, the parts counted, the same records as SQLite', async () => {
    const root = join(tempDir(), 'runs');
    const url = await freshPgDatabase();
    const postgres = await PgLiveStore.open(url, { scope: 'gpu-a', now: () => NOW });
    try {
      await ingest(postgres, root);
    } finally {
      await postgres.close();
    }
    const got = await pgRowsOf(url);
    expect(got.metrics).toEqual([{ name: 'loss' }]);
    expect(got.points.map((p) => [p.step, p.value])).toEqual([
      [1, 0.5],
      [2, 0.4],
      [3, 0.3],
      [4, 0.2],
      [5, 0.1],
      [6, 0.05],
    ]);
    expect(got.examples).toEqual([
      { completion: 'print(1) END', reward: 0.5 },
      { completion: 'fine \u{1F600} END', reward: 0.9 },
    ]);
    expect(got.events).toEqual([
      { title: 'config', text: 'model: qwen', config: JSON.stringify({ model: 'qwen-7b' }) },
    ]);
    const metricsFile = join(root, 'r1', 'metrics.jsonl');
    const completionsFile = join(root, 'r1', 'reward_logs', 'completions.jsonl');
    expect(got.skips).toEqual([
      { path: metricsFile, reason: BAD_NAME, count: 2, sample: 'badkey' },
      { path: completionsFile, reason: CLEANED_TEXT, count: 1, sample: 'a generation' },
      { path: metricsFile, reason: CLEANED_TEXT, count: 1, sample: 'a meta event' },
    ]);
    const bytes = (lines: string[]) => Buffer.byteLength(lines.map((l) => `${l}\n`).join(''));
    expect(got.files.map((f) => [f.path, f.offset])).toEqual([
      [metricsFile, bytes(METRIC_LINES)],
      [completionsFile, bytes(COMPLETIONS)],
    ]);

    const path = join(tempDir(), 'rlwatch.db');
    const sqlite = Store.open(path, { now: () => NOW });
    try {
      rmSync(root, { recursive: true }); // the same paths, written anew
      await ingest(sqlite, root);
    } finally {
      sqlite.close();
    }
    expect(sqliteRowsOf(path)).toEqual(got);
  });

  it("stores a mute's reason and an ack's comment from chat without the NUL, instead of failing the command", async () => {
    const store = await PgStore.open(await freshPgDatabase());
    try {
      const run = await store.runs.ensure('grpo', '/runs/grpo');
      const change = { step: 1, at: NOW, severity: 'critical', summary: 'x', details: {} };
      const alert = await store.alerts.create(run.id, 'grad_explosion', 'grad_norm', 'firing', change);
      await store.alerts.ack(alert.id, { id: '<@U1>', name: 'A\u0000na' }, 'on it\u0000\ud800', NOW);
      const mute = await store.silences.add({
        run: 'grpo',
        rule: null,
        severity: null,
        starts_at: NOW,
        ends_at: NOW + 60_000,
        author: '<@U1>',
        reason: 'noisy\u0000',
      });
      expect(await store.alerts.byId(alert.id)).toMatchObject({ acked_by_name: 'Ana', ack_comment: 'on it\ufffd' });
      expect(mute.reason).toBe('noisy');
    } finally {
      await store.close();
    }
  });
});
