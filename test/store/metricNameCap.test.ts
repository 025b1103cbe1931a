/**
 * `ingest.maxMetricNames`: a run keeps at most that many distinct metric names; values of names past it are not
 * stored, and are counted under one skip reason naming the first few, the same read whole (backfill) and read live
 * in small appends. A real SQLite file, the real Ingestor, and `rlwatch backfill` / `rlwatch files` with the cap in a
 * config file.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { pastCap } from '../../src/store/batchGuard.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { tempDir } from '../helpers.ts';
import { rlwatch } from '../integration/cli.ts';

const CAP = 50;
const config = ConfigSchema.parse({ ingest: { maxMetricNames: CAP } });
const name = (i: number): string => `k${String(i).padStart(3, '0')}`;
/** 20 lines of 10 new names each: 200 distinct names, the first 50 in the first 5 lines */
const LINES = Array.from({ length: 20 }, (_, l) =>
  JSON.stringify({
    step: l + 1,
    ...Object.fromEntries(Array.from({ length: 10 }, (_, k) => [name(l * 10 + k), l + k / 10])),
  }),
);
const KEPT = Array.from({ length: CAP }, (_, i) => name(i));
const REASON = pastCap(CAP, [50, 51, 52, 53, 54].map(name).join(', '));

interface Held {
  metrics: string[];
  points: number;
  skips: Array<{ reason: string; count: number }>;
  offset: number;
}

function held(store: Store, file: string): Held {
  const run = store.runs.list()[0]!;
  const row = store.files.byPath(file)!;
  return {
    metrics: store.points.metricsOf(run.id),
    points: store.db.prepare('SELECT count(*) FROM points').pluck().get() as number,
    skips: store.files.skipsOf(row.id).map(({ reason, count }) => ({ reason, count })),
    offset: row.offset,
  };
}

function runRoot(): { root: string; file: string } {
  const root = join(tempDir(), 'runs');
  mkdirSync(join(root, 'r1'), { recursive: true });
  return { root, file: join(root, 'r1', 'metrics.jsonl') };
}

describe('a cap on distinct metric names per run', () => {
  it('keeps the first names, counts the lines of values past the cap under one reason naming the first few: backfill and live (across a restart) alike', async () => {
    const whole = runRoot();
    writeFileSync(whole.file, LINES.map((l) => `${l}\n`).join(''));
    const { store: a } = freshStore();
    await backfill(new Ingestor(a, config.ingest), [whole.root], config.watch);
    const backfilled = held(a, whole.file);
    a.close();

    const live = runRoot();
    const dbPath = join(tempDir(), 'b.db');
    let b = Store.open(dbPath);
    let ingestor = new Ingestor(b, config.ingest);
    for (let i = 0; i < LINES.length; i += 3) {
      appendFileSync(
        live.file,
        LINES.slice(i, i + 3)
          .map((l) => `${l}\n`)
          .join(''),
      );
      await ingestor.ingest(live.file, live.root);
      if (i === 9) {
        // a restart past the cap: the later lines are counted under the reason the first ones named
        b.close();
        b = Store.open(dbPath);
        ingestor = new Ingestor(b, config.ingest);
      }
    }
    const appended = held(b, live.file);
    b.close();

    expect(backfilled).toEqual({
      metrics: KEPT,
      points: CAP,
      skips: [{ reason: REASON, count: LINES.length - CAP / 10 }], // the lines past the first 5
      offset: Buffer.byteLength(LINES.map((l) => `${l}\n`).join('')),
    });
    expect(appended).toEqual(backfilled);
  });

  it('names a long or multi-line name past the cap short and on one line', () => {
    const { store } = freshStore();
    const run = store.runs.ensure('r', '/runs/r');
    const file = store.files.add(run.id, '/runs/r/m.jsonl', 'jsonlMetrics');
    const long = `${'x'.repeat(100)}\nINJECTED`;
    store.commit(
      {
        runId: run.id,
        fileId: file.id,
        metrics: [
          {
            step: 1,
            values: new Map([
              ['loss', 1],
              [long, 2],
              ['a\tb', 3],
            ]),
          },
        ],
        examples: [],
        skips: new Map(),
        progress: { dev: 1, ino: 1, offset: 10, size: 10, mtimeMs: 0, seq: 0, lines: 1, records: 1 },
        maxMetricNames: 1,
      },
      2,
    );
    expect(store.points.metricsOf(run.id)).toEqual(['loss']);
    expect(store.files.skipsOf(file.id).map((s) => [s.reason, s.count])).toEqual([
      [pastCap(1, `${'x'.repeat(39)}…, a?b`), 1],
    ]);
    store.close();
  });

  it('`rlwatch files` names the reason after a backfill with the cap set in the config file', () => {
    const { root, file } = runRoot();
    writeFileSync(file, LINES.map((l) => `${l}\n`).join(''));
    const dir = tempDir();
    const cfg = join(dir, 'rlwatch.yaml');
    writeFileSync(cfg, `ingest:\n  maxMetricNames: ${CAP}\n`);
    const db = join(dir, 'x.db');
    expect(rlwatch(['backfill', root, '--config', cfg, '--db', db]).status).toBe(0);
    const listed = rlwatch(['files', '--config', cfg, '--db', db]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(`${LINES.length - CAP / 10} lines skipped`);
    expect(listed.stdout).toContain(REASON);
  });
});
