/**
 * What a backfill of the sample runs leaves in the database, by two routes that must agree:
 * - the product's: lines parsed in a worker thread, the rules inside each batch's transaction (one commit per
 *   batch), look-back windows from the store's memory of the newest points, metric ids found by line shape;
 * - the plain one: each file ingested in-thread, each batch committed alone, then the rules evaluated in a
 *   transaction of their own by an engine on a second connection, which has no memory of what was written and
 *   reads everything from SQLite.
 * The points are also checked against the sample's own lines, parsed here.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import { discoverFiles } from '../../src/ingest/discover/discover.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { rowsOf, ruleQueries } from '../store/tableRows.ts';
import { tempDir } from '../helpers.ts';

const SAMPLES = join(import.meta.dirname, '..', '..', 'samples');
const config = ConfigSchema.parse({});
/** small reads: many batches, so that windows reach back across batches; lines past 2 KB are skipped */
const OPTS = { ...config.ingest, chunkBytes: 4096, maxLineBytes: 2048 };
const NOW = 1_800_000_000_000;

/** The sample runs, a rough one (malformed and overlong lines) and one that crashed (a traceback without a step,
 * after step 34). */
function logsRoot(): string {
  const root = tempDir();
  cpSync(SAMPLES, root, { recursive: true });
  const head = readFileSync(join(SAMPLES, 'grpo-demo', 'learning.log'), 'utf8')
    .split('\n')
    .slice(0, 60);
  head.splice(20, 0, 'not a metric line', 'x'.repeat(3000));
  head.splice(40, 0, '\u0000\u0001 binary');
  const rough = join(root, 'rough');
  mkdirSync(rough);
  writeFileSync(join(rough, 'learning.log'), head.join('\n'));
  const callback = readFileSync(join(SAMPLES, 'grpo-callback', 'train.log'), 'utf8')
    .split('\n')
    .slice(0, 400);
  const crash = [
    'Traceback (most recent call last):',
    '  File "train.py", line 3, in <module>',
    'torch.OutOfMemoryError: CUDA out of memory.',
  ];
  mkdirSync(join(root, 'crashed'));
  writeFileSync(join(root, 'crashed', 'train.log'), [...callback, ...crash, 'y'.repeat(5000), ''].join('\n'));
  return root;
}

async function productRoute(db: string, root: string): Promise<void> {
  const store = Store.open(db, { now: () => NOW });
  const engine = makeEngine(store, config, { terminal: true, now: () => NOW });
  await backfill(
    new Ingestor(
      store,
      OPTS,
      () => {},
      (r) => engine.evaluate(r.runId, false),
    ),
    [root],
    config.watch,
  );
  store.close();
}

async function plainRoute(db: string, root: string): Promise<void> {
  const store = Store.open(db, { now: () => NOW });
  const reader = Store.open(db, { now: () => NOW });
  const engine = makeEngine(reader, config, { terminal: true, now: () => NOW });
  const ingestor = new Ingestor(store, OPTS, (e) => {
    if (e.kind === 'batch') engine.evaluate(e.result.runId, false);
  });
  for (const path of discoverFiles(root, config.watch.depth)) await ingestor.ingest(path, root);
  reader.close();
  store.close();
}

/** Every row of the tables the backfill and the rules write, keyed by names (not ids) and without ids. */
function contents(path: string): Record<string, unknown[]> {
  return rowsOf(path, {
    points: `SELECT r.name, m.name AS metric, p.step, p.value FROM points p JOIN runs r ON r.id = p.run_id
             JOIN metrics m ON m.id = p.metric_id ORDER BY 1, 2, 3`,
    steps: 'SELECT r.name, s.step FROM steps s JOIN runs r ON r.id = s.run_id ORDER BY 1, 2',
    ...ruleQueries(),
    runs: 'SELECT name, first_step, last_step, records, batches FROM runs ORDER BY name',
    examples:
      'SELECT r.name, e.step, e.reward, e.completion FROM examples e JOIN runs r ON r.id = e.run_id ORDER BY 1, 2, 3, 4',
    events: `SELECT r.name, e.step, e.kind, e.title, e.text, e.fatal, e.context, e.vals, e.config FROM events e
             JOIN runs r ON r.id = e.run_id ORDER BY 1, e.id`,
    files: 'SELECT path, format, offset, seq, lines, records, skipped FROM files ORDER BY path',
    skips: `SELECT f.path, s.reason, s.count, s.sample FROM file_skips s JOIN files f ON f.id = s.file_id ORDER BY 1, 2`,
  });
}

/** The sample's learning.log, read here: `[Epoch E]  name=value  name=mean±std ...`, records numbered 1, 2, ... */
function learningLogPoints(): Map<string, number> {
  const names: Record<string, string> = { grad: 'grad_norm', syntax_rew: 'rewards/syntax_aware_reward' };
  const out = new Map<string, number>();
  const lines = readFileSync(join(SAMPLES, 'grpo-demo', 'learning.log'), 'utf8')
    .split('\n')
    .filter(Boolean);
  lines.forEach((line, i) => {
    const step = i + 1;
    out.set(`epoch@${step}`, Number(/^\[Epoch ([\d.]+)\]/.exec(line)![1]));
    for (const [, key, mean, std] of line.matchAll(/(\w+)=([-\d.e+]+)(?:±([-\d.e+]+))?/g)) {
      const name = names[key!] ?? key!;
      out.set(`${name}@${step}`, Number(mean));
      if (std !== undefined) out.set(`${name === 'reward' ? 'reward_std' : `${name}/std`}@${step}`, Number(std));
    }
  });
  return out;
}

describe('a backfill of the sample runs', () => {
  let product: Record<string, unknown[]>;
  let plain: Record<string, unknown[]>;
  beforeAll(async () => {
    const dir = tempDir();
    const root = logsRoot();
    await productRoute(join(dir, 'product.db'), root);
    await plainRoute(join(dir, 'plain.db'), root);
    product = contents(join(dir, 'product.db'));
    plain = contents(join(dir, 'plain.db'));
  }, 120_000);

  it('stores the points of the sample learning.log as its lines say', () => {
    const expected = learningLogPoints();
    expect(expected.size).toBe(300 * 10);
    const stored = new Map(
      (product.points as Array<{ name: string; metric: string; step: number; value: number }>)
        .filter((p) => p.name === 'grpo-demo' && expected.has(`${p.metric}@${p.step}`))
        .map((p) => [`${p.metric}@${p.step}`, p.value]),
    );
    expect(stored).toEqual(expected);
  });

  it('leaves the same points, alerts, alert history and rule state by both routes', () => {
    expect(product.points!.length).toBeGreaterThan(300 * 14);
    // the sample run fires and resolves (the demo's spike and collapse): there is rule state to compare
    expect(product.alerts!.length).toBeGreaterThan(3);
    expect(product.cursors!.length).toBeGreaterThan(10);
    // the rough run's skipped lines, and the crash filed under the latest step logged before it
    expect(product.skips).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reason: 'unrecognised line', count: 1, sample: 'not a metric line' }),
        expect.objectContaining({ reason: 'line too long', count: 1 }),
        expect.objectContaining({ reason: 'binary data', count: 1 }),
      ]),
    );
    expect(product.skips!.filter((s) => (s as { reason: string }).reason === 'line too long')).toHaveLength(2);
    expect(product.events).toContainEqual(expect.objectContaining({ name: 'crashed', kind: 'error', step: 34 }));
    for (const table of Object.keys(plain)) expect(product[table], table).toEqual(plain[table]);
  });
});
