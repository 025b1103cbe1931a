/**
 * A watcher's group of files on PostgreSQL (PgLiveStore.commitSoon): the batches of the files read together go out one
 * behind the other and are answered in one round trip, each then evaluated by the real Engine before the group
 * commits. What that stores, fires and queues must be what reading each file alone stores, fires and queues (one
 * commit per file, the path the other tests pin), and a group that fails must lose nothing.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ConfigSchema } from '../../../src/config/schema.ts';
import { parseDuration } from '../../../src/lib/duration.ts';
import { Engine } from '../../../src/engine/engine.ts';
import { ruleBookFor } from '../../../src/engine/presets/index.ts';
import { Ingestor } from '../../../src/ingest/ingestor.ts';
import { PgLiveStore } from '../../../src/store/postgres/pgLiveStore.ts';
import { tempDir } from '../../helpers.ts';
import { freshPgDatabase, pgRows } from '../../pg/pgTest.ts';
import { learningLine } from '../../learningLines.ts';

const config = ConfigSchema.parse({});
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** Run a's two files (its log and a rank's copy under logs/), b's and c's. */
const FILES = ['a/learning.log', 'a/logs/learning.log', 'b/learning.log', 'c/learning.log'];

/** What a trainer writes at `step` into `file`: b's gradient spikes at 25, c's groups go all-equal from 20 on. */
function lineOf(file: string, step: number): string {
  if (file.startsWith('b/') && step === 25) return learningLine(step, { grad: 15.786 });
  if (file.startsWith('c/') && step >= 20) return learningLine(step, { frac: 0.9 });
  return learningLine(step);
}

/** A watcher of `scope` (its own root) on the database at `url`, as `rlwatch start --role watcher` wires it. */
async function watcher(url: string, scope: string) {
  const store = await PgLiveStore.open(url, { scope, now: () => 1_000_000 });
  cleanup.push(() => store.close());
  const root = join(tempDir(), scope);
  for (const f of FILES) mkdirSync(join(root, f, '..'), { recursive: true });
  const engine = new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: parseDuration(config.alerts.repeatInterval) as number,
    targets: ['console'],
    now: () => 1_000_000,
  });
  const batches: number[] = [];
  const ingestor = new Ingestor(
    store,
    { ...config.ingest, runPrefix: scope },
    (e) => void (e.kind === 'batch' && batches.push(e.result.runId)),
    (r) => void engine.evaluate(r.runId, true),
  );
  engine.caughtUp();
  const paths = FILES.map((f) => join(root, f));
  const append = (step: number): void => {
    for (const [k, f] of FILES.entries()) appendFileSync(paths[k]!, `${lineOf(f, step)}\n`);
  };
  return { store, ingestor, paths, root, append, batches };
}

/** What the database holds of `scope`'s runs, by run name without the scope. */
async function stateOf(url: string, scope: string) {
  type Row = { run: string; [column: string]: unknown };
  const q = (sql: string) => pgRows<Row>(url, sql, [scope]);
  const byRun = `JOIN runs r ON r.id = x.run_id WHERE r.scope = $1`;
  const strip = (rows: Row[]) => rows.map((r): Row => ({ ...r, run: r.run.split('/')[1]! }));
  return {
    runs: strip(
      await q(`SELECT name AS run, first_step::int, last_step::int, records::int,
      evaluated = batches AS evaluated
      FROM runs x WHERE scope = $1 ORDER BY name`),
    ),
    // every value, in step order (a float sum's last digit depends on the order PostgreSQL adds them in)
    points: strip(
      await q(`SELECT r.name AS run, m.name AS metric, count(*)::int AS n, sum(x.step)::text AS steps,
      string_agg(x.value::text, ' ' ORDER BY x.step) AS vals
      FROM points x JOIN metrics m ON m.id = x.metric_id ${byRun}
      GROUP BY r.name, m.name ORDER BY r.name, m.name`),
    ),
    alerts: strip(
      await q(`SELECT r.name AS run, x.rule, x.metric, x.state, x.started_step::int AS started,
      x.fired_step::int AS fired, x.resolved_step::int AS resolved, x.notified_state
      FROM alerts x ${byRun} ORDER BY r.name, x.rule, x.metric, x.id`),
    ),
    outbox: strip(
      await q(`SELECT r.name AS run, count(*)::int AS n FROM outbox x ${byRun} GROUP BY r.name
      ORDER BY r.name`),
    ),
    cursors: strip(await q(`SELECT r.name AS run, x.cursors FROM run_cursors x ${byRun} ORDER BY r.name`)),
    attempts: strip(
      await q(`SELECT r.name AS run, x.attempt, x.resumed_step, x.last_step, x.rewound
      FROM attempts x ${byRun} ORDER BY r.name, x.attempt`),
    ),
  };
}

it('stores, fires and queues what reading each file alone does, waiting for the worker once per group', async () => {
  const url = await freshPgDatabase();
  const grouped = await watcher(url, 'grp');
  const alone = await watcher(url, 'one');
  const waits: Array<{ grouped: number; alone: number }> = [];
  for (let step = 1; step <= 40; step++) {
    grouped.append(step);
    alone.append(step);
    const before = grouped.store.calls.waited;
    const read = (p: string) => grouped.ingestor.ingest(p, grouped.root);
    const { reads, failed } = grouped.store.group(() => grouped.paths.map(read));
    await Promise.all(reads);
    expect(failed).toBeNull();
    const aloneBefore = alone.store.calls.waited;
    for (const p of alone.paths) await alone.ingestor.ingest(p, alone.root);
    waits.push({ grouped: grouped.store.calls.waited - before, alone: alone.store.calls.waited - aloneBefore });
  }
  const state = await stateOf(url, 'grp');
  expect(state).toEqual(await stateOf(url, 'one'));
  // the input's own route to what must be there: 40 steps in each run, b's spike and c's collapse fired and queued
  expect(state.runs.map((r) => [r.run, r.last_step, r.evaluated])).toEqual([
    ['a', 40, true],
    ['b', 40, true],
    ['c', 40, true],
  ]);
  expect(state.points.find((p) => p.run === 'b' && p.metric === 'loss')).toMatchObject({ n: 40, steps: '820' });
  expect(state.alerts.filter((a) => a.run === 'b').map((a) => a.fired)).toContain(25);
  expect(state.alerts.some((a) => a.run === 'c' && a.notified_state === 'firing')).toBe(true);
  expect(state.alerts.some((a) => a.run === 'a')).toBe(false);
  expect(grouped.batches).toHaveLength(40 * FILES.length);
  // each file read alone waits for its batch and its COMMIT; a group of the 4 files of 3 runs waits for BEGIN, the
  // answers of a's first file (its second is a's again: the rules of a run read what its batches wrote), those of
  // the 3 others, and COMMIT. The rules' own reads (run a's two files log the same steps) are the same both ways.
  for (const { grouped, alone } of waits.slice(30)) expect(grouped).toBe(alone - 2 * FILES.length + 4);
}, 180_000);

it('rolls a group back whole when one of its batches fails, and its files read again lose nothing', async () => {
  const url = await freshPgDatabase();
  const w = await watcher(url, 'grp');
  for (let step = 1; step <= 5; step++) {
    w.append(step);
    for (const p of w.paths) await w.ingestor.ingest(p, w.root);
  }
  w.append(6);
  // b's batch (the third of four) fails in the database: its file's offset may not move past where it is
  const b = w.store.files.byPath(w.paths[2]!)!;
  await pgRows(url, `ALTER TABLE files ADD CONSTRAINT rlwatch_test CHECK (id <> ${b.id} OR "offset" <= ${b.offset})`);
  const { reads, failed } = w.store.group(() => w.paths.map((p) => w.ingestor.ingest(p, w.root)));
  await Promise.all(reads);
  expect(failed?.message).toMatch(/did not commit: .*rlwatch_test/);
  expect(w.store.groupsRolledBack).toBe(1);
  await pgRows(url, 'ALTER TABLE files DROP CONSTRAINT rlwatch_test');
  // nothing of step 6 stayed, in any run
  expect(await pgRows(url, 'SELECT max(last_step)::int AS m FROM runs')).toEqual([{ m: 5 }]);
  for (const p of w.paths) await w.ingestor.ingest(p, w.root);
  const runs = await pgRows<{ name: string; last_step: number }>(
    url,
    'SELECT name, last_step::int FROM runs ORDER BY name',
  );
  expect(runs).toEqual(['a', 'b', 'c'].map((r) => ({ name: `grp/${r}`, last_step: 6 })));
}, 120_000);
