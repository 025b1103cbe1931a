/**
 * One suite, two stores: the async store contract (src/store/contract.ts) on SQLite (the adapter over the
 * synchronous Store) and on PostgreSQL (the test run's embedded server, a fresh database per test). Expected
 * values come from the batches written here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Batch, ClaimedRow, StoreContract } from '../../src/store/contract.ts';
import { COPY_MIN_POINTS } from '../../src/store/postgres/points.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

/** A database of one kind: `open` gives another handle on the same one (as a second process would). */
interface Kind {
  name: string;
  /** `now`: the store's clock (when steps arrived, attempts began) */
  fresh(): Promise<{ where: string; open: (now?: () => number) => Promise<StoreContract> }>;
}

const kinds: Kind[] = [
  {
    name: 'sqlite',
    fresh: async () => {
      const where = join(tempDir(), 'contract.db');
      return { where, open: async (now) => new SqliteAsyncStore(Store.open(where, { now })) };
    },
  },
  {
    name: 'postgres',
    fresh: async () => {
      const where = await freshPgDatabase();
      return { where, open: (now) => PgStore.open(where, { now }) };
    },
  },
];

const opened: StoreContract[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const s of opened.splice(0)) await s.close();
});

async function setUp(
  kind: Kind,
  now?: () => number,
): Promise<{ store: StoreContract; other: () => Promise<StoreContract>; where: string }> {
  const db = await kind.fresh();
  const open = async (): Promise<StoreContract> => {
    const s = await db.open(now);
    opened.push(s);
    return s;
  };
  return { store: await open(), other: open, where: db.where };
}

const progress = (offset: number, lines: number): Batch['progress'] => ({
  dev: 1,
  ino: 2,
  offset,
  size: offset,
  mtimeMs: 0,
  seq: 0,
  lines,
  records: lines,
});

/** Steps with their values, as lines of a log give them. */
type Rows = Array<[number, Record<string, number>]>;

function batch(runId: number, fileId: number, rows: Rows, offset: number): Batch {
  return {
    runId,
    fileId,
    metrics: rows.map(([step, v]) => ({ step, values: new Map(Object.entries(v)) })),
    examples: [],
    skips: new Map(),
    progress: progress(offset, rows.length),
  };
}

/** One metric line per step, in file order. */
const logged = (steps: number[]): Rows => steps.map((step) => [step, { loss: step / 10 }]);

async function runWithFile(store: StoreContract): Promise<{ runId: number; fileId: number }> {
  const run = await store.runs.ensure('exp/a', '/runs/exp/a');
  const file = await store.files.add(run.id, '/runs/exp/a/learning.log', 'learning.log');
  return { runId: run.id, fileId: file.id };
}

/** `n` runs, their ids in order. */
async function someRuns(store: StoreContract, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push((await store.runs.ensure(`exp/r${i}`, `/runs/exp/r${i}`)).id);
  return ids;
}

const change = (step: number, at: number, summary: string) => ({
  step,
  at,
  severity: 'critical',
  summary,
  details: { v: step },
});

/** A child process that takes the leader lock `bot` on `where`, says `held`, and waits to be killed. */
function leaderChild(kind: string, where: string): Promise<ChildProcess> {
  const src = join(import.meta.dirname, '../../src/store');
  const code =
    kind === 'sqlite'
      ? `const { Store } = await import(${JSON.stringify(join(src, 'sqlite/store.ts'))});
       const { SqliteAsyncStore } = await import(${JSON.stringify(join(src, 'sqlite/sqliteAsync.ts'))});
       const s = new SqliteAsyncStore(Store.open(${JSON.stringify(where)}));`
      : `const { PgStore } = await import(${JSON.stringify(join(src, 'postgres/pgStore.ts'))});
       const s = await PgStore.open(${JSON.stringify(where)});`;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `${code} const lead = await s.tryLead('bot'); process.stdout.write(lead ? 'held' : 'refused'); setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) =>
      d.toString() === 'held' ? resolve(child) : reject(new Error(d.toString())),
    );
    child.once('exit', (c) => reject(new Error(`leader child exited ${c}`)));
  });
}

describe.each(kinds)('the store contract on $name', (kind) => {
  it('stores a batch once per (run, metric, step): a step written again replaces its values', async () => {
    const { store } = await setUp(kind);
    const { runId, fileId } = await runWithFile(store);
    const rows1: Rows = [
      [1, { reward: 0.1, loss: 2 }],
      [2, { reward: 0.2 }],
      [3, { reward: 0.3 }],
    ];
    const first = await store.commit(batch(runId, fileId, rows1, 90), 3);
    expect(first).toMatchObject({ runId, minStep: 1, maxStep: 3, newSteps: 3 });
    // the same lines read again after a restart, with step 2 corrected, and a new step 4
    const rows2: Rows = [
      [2, { reward: 0.25 }],
      [3, { reward: 0.3 }],
      [4, { reward: 0.4 }],
    ];
    const again = await store.commit(batch(runId, fileId, rows2, 120), 3);
    expect(again.newSteps).toBe(1);
    const reward = (await store.points.series(runId, 'reward')).map((p) => [p.step, p.value]);
    expect(reward).toEqual([
      [1, 0.1],
      [2, 0.25],
      [3, 0.3],
      [4, 0.4],
    ]);
    expect(await store.points.steps(runId)).toEqual([1, 2, 3, 4]);
    expect(await store.points.metricsOf(runId)).toEqual(['loss', 'reward']);
    expect(await store.points.latest(runId)).toEqual([
      { metric: 'loss', step: 1, value: 2 },
      { metric: 'reward', step: 4, value: 0.4 },
    ]);
    expect(await store.runs.byId(runId)).toMatchObject({ first_step: 1, last_step: 4, records: 4, batches: 2 });
    expect(await store.files.byPath('/runs/exp/a/learning.log')).toMatchObject({ offset: 120, lines: 6 });
    expect(await store.points.after(runId, 'reward', 2)).toEqual([
      { step: 3, value: 0.3 },
      { step: 4, value: 0.4 },
    ]);
  });

  it('keeps NaN and ±Infinity as logged; a finite window skips them', async () => {
    const { store } = await setUp(kind);
    const { runId, fileId } = await runWithFile(store);
    const rows: Rows = [
      [1, { loss: 1 }],
      [2, { loss: NaN }],
      [3, { loss: Infinity }],
      [4, { loss: 4 }],
    ];
    await store.commit(batch(runId, fileId, rows, 40), 3);
    expect((await store.points.series(runId, 'loss')).map((p) => p.value)).toEqual([1, NaN, Infinity, 4]);
    expect(await store.points.upTo(runId, 'loss', 4, 2, true)).toEqual([
      { step: 1, value: 1 },
      { step: 4, value: 4 },
    ]);
    expect((await store.points.upTo(runId, 'loss', 3, 2)).map((p) => p.value)).toEqual([NaN, Infinity]);
  });

  it('a failed batch leaves neither its points nor its file offset', async () => {
    const { store } = await setUp(kind);
    const { runId, fileId } = await runWithFile(store);
    await store.commit(batch(runId, fileId, [[1, { reward: 0.1 }]], 30), 3);
    const bad = batch(runId, fileId, [[2, { reward: 0.2 }]], 60);
    // an event the schema refuses (its kind is checked), written after the points
    bad.events = [{ step: 2, kind: 'bogus' as 'error', title: 't', text: 'x' }];
    await expect(store.commit(bad, 3)).rejects.toThrow();
    expect((await store.points.series(runId, 'reward')).map((p) => p.step)).toEqual([1]);
    expect(await store.files.byPath('/runs/exp/a/learning.log')).toMatchObject({ offset: 30, lines: 1 });
    expect(await store.runs.byId(runId)).toMatchObject({ last_step: 1, records: 1 });
    // a metric first logged by the failed batch is no less a metric when it is logged again
    const again = batch(runId, fileId, [[2, { reward: 0.2, kl: 0.01 }]], 60);
    bad.metrics = again.metrics;
    await expect(store.commit(bad, 3)).rejects.toThrow();
    await store.commit(again, 3);
    expect(await store.points.metricsOf(runId)).toEqual(['kl', 'reward']);
    expect(await store.points.series(runId, 'kl')).toEqual([{ step: 2, epoch: null, value: 0.01 }]);
  });

  it('keeps the best and worst examples per step and the events of a batch', async () => {
    const { store } = await setUp(kind);
    const { runId, fileId } = await runWithFile(store);
    const b = batch(runId, fileId, [[5, { reward: 0.5 }]], 10);
    b.examples = [0.9, 0.1, 0.5, 0.7].map((reward, i) => ({
      step: 5,
      key: `k${i}`,
      completion: `c${i}`,
      reward,
      breakdown: { r: reward },
    }));
    b.events = [{ step: 5, kind: 'error', title: 'CUDA out of memory', text: 'OOM', fatal: true, context: ['a', 'b'] }];
    await store.commit(b, 1);
    expect((await store.examples.atOrBefore(runId, 9)).map((e) => [e.key, e.reward, e.breakdown])).toEqual([
      ['k0', 0.9, { r: 0.9 }],
      ['k1', 0.1, { r: 0.1 }],
    ]);
    const events = await store.events.after(runId, ['error'], 0);
    expect(events).toMatchObject([
      { runId, step: 5, kind: 'error', title: 'CUDA out of memory', fatal: true, context: ['a', 'b'] },
    ]);
  });

  it('opens, fires, acks and resolves an alert, with its history and the rule cursor', async () => {
    const { store } = await setUp(kind);
    const { runId } = await runWithFile(store);
    const a = await store.alerts.create(
      runId,
      'mode_collapse',
      'frac_zero_std',
      'pending',
      change(10, 1000, 'pending'),
    );
    expect(await store.alerts.open(runId, 'mode_collapse', 'frac_zero_std')).toMatchObject({
      id: a.id,
      state: 'pending',
    });
    await store.alerts.fire(a.id, change(12, 2000, 'fires'));
    await store.alerts.ack(a.id, { id: '<@U0ANA>', name: 'Ana Lima' }, 'looking', 2500);
    expect(await store.alerts.list({ runId })).toMatchObject([
      { id: a.id, state: 'firing', acked_by: '<@U0ANA>', acked_by_name: 'Ana Lima', fired_step: 12 },
    ]);
    await store.alerts.resolve(a.id, change(20, 3000, 'back to normal'));
    expect(await store.alerts.open(runId, 'mode_collapse', 'frac_zero_std')).toBeUndefined();
    const done = (await store.alerts.byId(a.id))!;
    expect(done).toMatchObject({ state: 'resolved', resolved_step: 20, resolved_at: 3000, ack_comment: 'looking' });
    expect(JSON.parse(done.details)).toEqual({ v: 12, resolved: { summary: 'back to normal', v: 20 } });
    const history = (await store.alerts.events(a.id)).map((e) => [e.state, e.step]);
    expect(history).toEqual([
      ['pending', 10],
      ['firing', 12],
      ['resolved', 20],
    ]);
    expect(await store.alerts.list({ runId })).toEqual([]);
    await store.alerts.saveCursor(runId, 'mode_collapse', 'frac_zero_std', 20, { streak: 2 });
    await store.alerts.saveCursor(runId, 'mode_collapse', 'frac_zero_std', 25, { streak: 0 });
    expect(await store.alerts.cursor(runId, 'mode_collapse', 'frac_zero_std')).toEqual({
      step: 25,
      state: { streak: 0 },
    });
  });

  it('a silence is active from its creation until its end, or until it is ended, whatever the clock reads between', async () => {
    const { store } = await setUp(kind);
    const s = await store.silences.add({
      run: 'exp/*',
      rule: null,
      severity: 'warning',
      starts_at: 100,
      ends_at: 200,
      author: '<@U0ANA>',
      reason: 'lr sweep',
    });
    const t = await store.silences.add({
      run: null,
      rule: 'kl_high',
      severity: null,
      starts_at: 100,
      ends_at: 120,
      author: '<@U0BO>',
      author_name: 'Bo',
      reason: '',
    });
    expect((await store.silences.active(110)).map((x) => [x.id, x.author_name])).toEqual([
      [s.id, '<@U0ANA>'],
      [t.id, 'Bo'],
    ]);
    expect((await store.silences.active(150)).map((x) => x.id)).toEqual([s.id]);
    // the clock stepped back behind the mutes' creation: they still hold
    expect((await store.silences.active(40)).map((x) => x.id)).toEqual([s.id, t.id]);
    expect(await store.silences.active(200)).toEqual([]);
    await store.silences.end(s.id, 160);
    expect(await store.silences.active(170)).toEqual([]);
  });

  it('a transaction that throws leaves none of its writes', async () => {
    const { store } = await setUp(kind);
    const { runId } = await runWithFile(store);
    await expect(
      store.transaction(async (tx) => {
        await tx.alerts.create(runId, 'grad_explosion', 'grad_norm', 'firing', change(3, 10, 'boom'));
        await tx.outbox.add(runId, 'console', { alert: 1 }, 10);
        throw new Error('evaluation failed');
      }),
    ).rejects.toThrow('evaluation failed');
    expect(await store.alerts.list({ all: true })).toEqual([]);
    expect(await store.outbox.open()).toEqual([]);
    await store.transaction(async (tx) => tx.outbox.add(runId, 'console', { alert: 2 }, 11));
    expect((await store.outbox.open()).map((r) => JSON.parse(r.payload))).toEqual([{ alert: 2 }]);
  });

  it("two claimers at once never get the same outbox row; each run's rows go one at a time, in order", async () => {
    const { store, other } = await setUp(kind);
    const second = await other();
    const runIds = await someRuns(store, 12);
    const N = 120;
    for (let i = 0; i < N; i++) await store.outbox.add(runIds[i % 12]!, 'discord:ops', { n: i }, i);
    const got: Array<{ owner: string; n: number }> = [];
    const drain = async (s: StoreContract, owner: 'a' | 'b'): Promise<void> => {
      for (;;) {
        const rows = await s.outbox.claim('discord:ops', { owner, now: 1000, leaseMs: 60_000, limit: 3 });
        if (rows.length === 0) return;
        for (const r of rows) {
          got.push({ owner, n: JSON.parse(r.payload).n as number });
          await s.outbox.done(r.id, 1001);
        }
      }
    };
    // many claims in flight at once, on both handles (PostgreSQL: 8 connections). A drain that finds every run's
    // oldest row leased stops; one of them is still draining then, until the end.
    await Promise.all([1, 2, 3, 4].flatMap(() => [drain(store, 'a'), drain(second, 'b')]));
    expect(got.map((g) => g.n).sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i));
    // a run's next row is handed out only once its row before is delivered: in order, whoever claimed it
    for (let r = 0; r < 12; r++) {
      const ofRun = got.map((g) => g.n).filter((n) => n % 12 === r);
      expect(ofRun).toEqual(Array.from({ length: N / 12 }, (_, k) => r + 12 * k));
    }
    expect(new Set(got.map((g) => g.owner)).size).toBe(2);
  });

  it('claimers that each claim with the delivery before never get the same row, and keep each run in order', async () => {
    const { store, other } = await setUp(kind);
    const second = await other();
    const runIds = await someRuns(store, 6);
    const N = 60;
    for (let i = 0; i < N; i++) await store.outbox.add(runIds[i % 6]!, 'discord:ops', { n: i }, i);
    const got: Array<{ owner: string; n: number }> = [];
    const drain = async (s: StoreContract, owner: string): Promise<void> => {
      const opts = { owner, now: 1000, leaseMs: 60_000, limit: 1 };
      let rows = await s.outbox.claim('discord:ops', opts);
      while (rows.length > 0) {
        got.push({ owner, n: JSON.parse(rows[0]!.payload).n as number });
        rows = await s.outbox.doneAndClaim(rows[0]!.id, 1001, 'discord:ops', opts);
      }
    };
    await Promise.all([1, 2, 3].flatMap((k) => [drain(store, `a${k}`), drain(second, `b${k}`)]));
    expect(got.map((g) => g.n).sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i));
    for (let r = 0; r < 6; r++) {
      expect(got.map((g) => g.n).filter((n) => n % 6 === r)).toEqual(
        Array.from({ length: N / 6 }, (_, k) => r + 6 * k),
      );
    }
    expect(await store.outbox.open()).toEqual([]);
  });

  it("hands out each run's oldest row, leased until delivered; a failed row holds back later rows", async () => {
    const { store, other } = await setUp(kind);
    const second = await other();
    const [r1, r2, r3] = await someRuns(store, 3);
    for (const [runId, n] of [
      [r1, 0],
      [r2, 1],
      [r1, 2],
      [r3, 3],
      [r2, 4],
    ] as const) {
      await store.outbox.add(runId!, 'discord:ops', { n }, n);
    }
    const claim = (s: StoreContract, now: number, limit?: number) =>
      s.outbox
        .claim('discord:ops', { owner: 'c', now, leaseMs: 60_000, limit })
        .then((rows) => rows.map((r) => JSON.parse(r.payload).n));
    const idOf = async (n: number): Promise<number> =>
      (await store.outbox.open()).find((r) => JSON.parse(r.payload).n === n)!.id;
    expect(await claim(store, 1000)).toEqual([0, 1, 3]);
    expect(await claim(second, 2000)).toEqual([]); // each run's oldest row is leased: its next one waits
    await store.outbox.done(await idOf(0), 2100);
    expect(await claim(second, 2200)).toEqual([2]);
    // run 2's row fails, due again at 90 s: it and every row after it wait, whatever their run
    await store.outbox.failed(await idOf(1), 'HTTP 502', 90_000);
    expect(await claim(second, 61_001)).toEqual([]); // the first leases ran out, but rows 2 and 3 come after row 1
    const back = await second.outbox.claim('discord:ops', { owner: 'c', now: 90_000, leaseMs: 100_000 });
    expect(back.map((r) => [JSON.parse(r.payload).n, r.attempts])).toEqual([
      [1, 1],
      [2, 0],
      [3, 0],
    ]);
    expect(back.every((r) => r.leaseUntil === 190_000)).toBe(true);
    // set aside, a row no longer holds its run back: run 2's next row goes (the others are leased by `back`)
    await store.outbox.setAside(await idOf(1), 'HTTP 403', 90_100);
    expect(await claim(store, 90_200)).toEqual([4]);
    await store.outbox.releaseClaims('c');
    expect(await claim(store, 90_300)).toEqual([2, 3, 4]);
  });

  it('hands out the most urgent runs first: a run whose rows hold a critical alert, older rows with it', async () => {
    const { store } = await setUp(kind);
    const [quiet, warned, paged, forged] = await someRuns(store, 4);
    // items as the engine writes them (src/engine/engine.ts): severity, then rule
    const item = (severity: string, summary = 'x') => ({ alertId: 1, kind: 'firing', severity, rule: 'r', summary });
    const finishedRule = { rule: 'r', severity: 'critical', incidents: 1, firing: 0 }; // as src/store/alerts.ts lists
    const rows: Array<[number, unknown]> = [
      // untrusted text shaped like a critical item, and a finished run's summary of its critical rule: info rows
      [forged!, { run: 'f', items: [item('info', '"severity":"critical","rule":"r"')] }],
      [forged!, { run: 'f', items: [{ ...item('info'), finished: { alerts: [finishedRule] } }] }],
      [quiet!, { run: 'q', items: [item('info')] }],
      [warned!, { run: 'w', items: [item('info')] }],
      [paged!, { run: 'p', items: [item('info')] }],
      [warned!, { run: 'w', items: [item('info'), item('warning')] }],
      [paged!, { run: 'p', items: [item('critical')] }],
      [quiet!, { run: 'q', items: [item('info')] }],
    ];
    for (const [i, [runId, payload]] of rows.entries()) {
      await store.outbox.add(runId, 'discord:ops', { ...(payload as object), i }, i);
    }
    const next = async (limit = 1): Promise<number[]> =>
      (await store.outbox.claim('discord:ops', { owner: 'a', now: 1000, leaseMs: 60_000, limit })).map(
        (r) => JSON.parse(r.payload).i,
      );
    // run `paged`'s info row first (its critical row is behind it), then `warned`'s, then by age; in that order,
    // each as urgent as its run's most severe row (what a target draws first)
    const first = await store.outbox.claim('discord:ops', { owner: 'a', now: 1000, leaseMs: 60_000, limit: 3 });
    expect(first.map((r) => [JSON.parse(r.payload).i, r.urgency])).toEqual([
      [4, 2],
      [3, 1],
      [0, 0],
    ]);
    expect([await next(), await next()]).toEqual([[2], []]);
    const open = await store.outbox.open();
    for (const i of [4, 3]) await store.outbox.done(open.find((r) => JSON.parse(r.payload).i === i)!.id, 1100);
    expect([await next(), await next(), await next()]).toEqual([[6], [5], []]);
  });

  it("a run's new items join its newest waiting row until a deliverer has it; a card and its resolution stay two", async () => {
    const { store } = await setUp(kind);
    const [a, b] = await someRuns(store, 2);
    const item = (alertId: number, severity = 'warning', kind = 'firing') => ({
      alertId,
      kind,
      severity,
      rule: `r${alertId}`,
      summary: 'untrusted ]} "x"',
      step: alertId,
    });
    const put = (runId: number, run: string, items: object[], at: number, more: object = {}) =>
      store.outbox.add(runId, 'discord:ops', { run, items, ...more }, at);
    const open = async () =>
      (await store.outbox.open()).map((r) => ({ run: r.run_id, at: r.created_at, n: JSON.parse(r.payload) }));
    await put(a!, 'a', [item(1)], 1);
    await put(b!, 'b', [item(10)], 2);
    await put(a!, 'a', [item(2, 'critical'), item(3)], 3); // joins a's row: the critical alert rides with it
    await put(b!, 'b', [item(10, 'warning', 'resolved')], 4); // the same alert: a row of its own, after its card
    expect(await open()).toEqual([
      { run: a, at: 1, n: { run: 'a', items: [item(1), item(2, 'critical'), item(3)] } },
      { run: b, at: 2, n: { run: 'b', items: [item(10)] } },
      { run: b, at: 4, n: { run: 'b', items: [item(10, 'warning', 'resolved')] } },
    ]);
    // written as one notification would be: its text is that notification's JSON
    expect((await store.outbox.open())[0]!.payload).toBe(
      JSON.stringify({ run: 'a', items: [item(1), item(2, 'critical'), item(3)] }),
    );
    const first = await store.outbox.claim('discord:ops', { owner: 'x', now: 10, leaseMs: 60_000, limit: 1 });
    expect(first.map((r) => [r.run_id, r.urgency])).toEqual([[a, 2]]);
    // handed out (even if given back), a row takes nothing more: what it holds may be posted in part already
    await store.outbox.releaseClaims('x');
    await put(a!, 'a', [item(4)], 11);
    // five items at most, as one chat message's cards; a report takes none, and nothing joins it
    await put(b!, 'b', [item(11), item(12), item(13)], 12);
    await put(b!, 'b', [item(14)], 13);
    await put(b!, 'b', [], 14, { report: { kind: 'digest', title: 't', lines: [] } });
    await put(b!, 'b', [item(15)], 15);
    expect((await open()).map((r) => [r.at, r.n.items.map((i: { alertId: number }) => i.alertId)])).toEqual([
      [1, [1, 2, 3]],
      [2, [10]],
      [4, [10, 11, 12, 13, 14]],
      [11, [4]],
      [14, []],
      [15, [15]],
    ]);
  });

  it('hands out `criticalExtra` rows beyond the limit only if critical, in a claim and with a delivery', async () => {
    const { store } = await setUp(kind);
    const [w1, w2, w3, c1, c2, c3] = await someRuns(store, 6);
    const item = (severity: string) => ({ alertId: 1, kind: 'firing', severity, rule: 'r', summary: 's' });
    for (const [runId, n, severity] of [
      [w1, 0, 'warning'],
      [w2, 1, 'warning'],
      [c1, 2, 'critical'],
      [w3, 3, 'info'],
      [c1, 4, 'info'],
    ] as const) {
      await store.outbox.add(runId!, 'discord:ops', { n, items: [item(severity)] }, n);
    }
    const nOf = (rows: ClaimedRow[]) => rows.map((r) => JSON.parse(r.payload).n as number);
    const opts = (now: number, limit: number, criticalExtra: number) => ({
      owner: 'a',
      now,
      leaseMs: 60_000,
      limit,
      criticalExtra,
    });
    // four warnings' slots full (limit 0): the kept slot takes run c1's critical row, and then nothing else
    const [critical] = await store.outbox.claim('discord:ops', opts(1000, 0, 1));
    expect(nOf([critical!])).toEqual([2]);
    expect(await store.outbox.claim('discord:ops', opts(1000, 0, 1))).toEqual([]);
    // a row beyond the limit that is not critical is left for a later claim
    expect(nOf(await store.outbox.claim('discord:ops', opts(1000, 1, 1)))).toEqual([0]);
    // two critical rows come: with a delivery, the freed slot and the kept one take both
    await store.outbox.add(c2!, 'discord:ops', { n: 5, items: [item('critical')] }, 5);
    await store.outbox.add(c3!, 'discord:ops', { n: 6, items: [item('critical')] }, 6);
    expect(nOf(await store.outbox.doneAndClaim(critical!.id, 1100, 'discord:ops', opts(1100, 1, 1)))).toEqual([5, 6]);
    // only the kept slot: run c1's next row is no longer critical, so warnings and infos stay
    expect(await store.outbox.claim('discord:ops', opts(1200, 0, 1))).toEqual([]);
    expect(nOf(await store.outbox.claim('discord:ops', opts(1200, 5, 0)))).toEqual([1, 3, 4]);
  });

  it('claimers keeping a slot for critical rows never get the same row, and keep each run in order', async () => {
    const { store, other } = await setUp(kind);
    const second = await other();
    const runIds = await someRuns(store, 8);
    const N = 64;
    const severity = (i: number): string => (i % 8 < 2 ? 'critical' : 'warning'); // runs 0 and 1 critical
    for (let i = 0; i < N; i++) {
      const items = [{ alertId: 1, kind: 'firing', severity: severity(i), rule: 'r', summary: 's' }];
      await store.outbox.add(runIds[i % 8]!, 'discord:ops', { n: i, items }, i);
    }
    const got: number[] = [];
    const drain = async (s: StoreContract, owner: string, limit: number): Promise<void> => {
      const opts = { owner, now: 1000, leaseMs: 60_000, limit, criticalExtra: 1 };
      let rows = await s.outbox.claim('discord:ops', opts);
      while (rows.length > 0) {
        got.push(...rows.map((r) => JSON.parse(r.payload).n as number));
        const [first, ...rest] = rows;
        for (const r of rest) await s.outbox.done(r.id, 1001);
        rows = await s.outbox.doneAndClaim(first!.id, 1001, 'discord:ops', opts);
      }
    };
    await Promise.all([0, 1, 2].flatMap((k) => [drain(store, `a${k}`, k), drain(second, `b${k}`, k)]));
    // a drain that finds nothing due stops while others still hold rows: what is left, once
    await drain(store, 'last', 8);
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i));
    for (let r = 0; r < 8; r++) {
      expect(got.filter((n) => n % 8 === r)).toEqual(Array.from({ length: N / 8 }, (_, k) => r + 8 * k));
    }
  });

  it("delivered and claimed in one: the run's next row, or a more urgent run's; never a row another holds", async () => {
    const { store, other } = await setUp(kind);
    const second = await other();
    const [r1, r2, r3] = await someRuns(store, 3);
    const item = (severity: string) => ({ alertId: 1, kind: 'firing', severity, rule: 'r', summary: 's' });
    for (const [runId, n, severity] of [
      [r1, 0, 'info'],
      [r2, 1, 'info'],
      [r1, 2, 'info'],
      [r3, 3, 'info'],
      [r3, 4, 'critical'],
      [r1, 5, 'info'],
    ] as const) {
      await store.outbox.add(runId!, 'discord:ops', { n, items: [item(severity)] }, n);
    }
    const nOf = (rows: ClaimedRow[]) => rows.map((r) => JSON.parse(r.payload).n as number);
    const opts = (owner: string, now: number, limit = 1) => ({ owner, now, leaseMs: 60_000, limit });
    // run 3 holds a critical row: its head first; then runs 1 and 2 by age
    const [head3, head1] = await store.outbox.claim('discord:ops', opts('a', 1000, 2));
    expect(nOf([head3!, head1!])).toEqual([3, 0]);
    // row 0 delivered: run 1's next row (2) is its head now, but run 3's critical row (4) is more urgent
    const next = await store.outbox.doneAndClaim(head1!.id, 1100, 'discord:ops', opts('a', 1100));
    expect(nOf(next)).toEqual([1]); // run 3's head (3) is leased: its critical row waits behind it; run 2 is older
    expect(next[0]!.leaseUntil).toBe(61_100);
    const afterThree = await store.outbox.doneAndClaim(head3!.id, 1200, 'discord:ops', opts('a', 1200));
    expect(nOf(afterThree)).toEqual([4]); // run 3's critical row, before run 1's row 2
    // another claimer gets what is left, never a leased head's run
    expect(nOf(await second.outbox.claim('discord:ops', opts('b', 1300, 5)))).toEqual([2]);
    expect(nOf(await second.outbox.doneAndClaim(next[0]!.id, 1400, 'discord:ops', opts('b', 1400, 5)))).toEqual([]);
    const open = (await store.outbox.open()).map((r) => JSON.parse(r.payload).n as number);
    expect(open).toEqual([2, 4, 5]); // 0, 1 and 3 delivered
    // a row waiting for its retry holds back the rows after it, as in a claim
    await store.outbox.failed(afterThree[0]!.id, 'HTTP 502', 90_000);
    const [row2] = (await store.outbox.open()).filter((r) => JSON.parse(r.payload).n === 2);
    expect(await store.outbox.doneAndClaim(row2!.id, 1500, 'discord:ops', opts('a', 1500, 5))).toEqual([]);
    expect(nOf(await store.outbox.claim('discord:ops', opts('a', 90_000, 5)))).toEqual([4, 5]); // its time came
  });

  it('records each chat message once, found by delivery, by ref and by alert', async () => {
    const { store } = await setUp(kind);
    const { runId } = await runWithFile(store);
    const a = await store.alerts.create(runId, 'r', 'm', 'firing', change(1, 1, 's'));
    const m = { runId, alertIds: [a.id], payload: { title: 'x' }, delivery: '7:0' };
    await store.chat.record('discord:ops', '1234', m, 50);
    await store.chat.record('discord:ops', '1234', m, 60); // a retry after a crash before the outbox row was done
    expect(await store.chat.byDelivery('discord:ops', '7:0')).toMatchObject({
      ref: '1234',
      run_id: runId,
      posted_at: 50,
    });
    expect((await store.chat.byRef('discord:ops', '1234'))!.alert_ids).toBe(JSON.stringify([a.id]));
    expect((await store.chat.ofAlert(a.id, 'discord:ops')).map((x) => x.ref)).toEqual(['1234']);
    expect(await store.chat.ofAlert(a.id, 'slack:ops')).toEqual([]);
  });

  it('answers what commands and reports read: names, columns, epochs, generations, meta and config', async () => {
    const { store } = await setUp(kind);
    const { runId, fileId } = await runWithFile(store);
    const b = batch(
      runId,
      fileId,
      [
        [1, { reward: 0.1, epoch: 0.5 }],
        [2, { reward: NaN }],
        [3, { reward: 0.3, epoch: 1 }],
      ],
      30,
    );
    b.examples = [
      [1, 0.9],
      [1, 0.2],
      [3, 0.6],
      [3, 0.1],
    ].map(([step, reward], i) => ({
      step: step!,
      key: `k${i}`,
      completion: `c${i}`,
      reward: reward!,
      breakdown: { r: reward! },
    }));
    b.events = [
      {
        step: 1,
        kind: 'meta',
        title: 'start',
        text: '',
        values: { total_steps: 100, max_steps: 90 },
        config: { model: 'qwen' },
      },
      { step: 3, kind: 'meta', title: 'later', text: '', values: { total_steps: 120 }, config: { lr: '1e-6' } },
    ];
    await store.commit(b, 2);
    const other = await store.runs.ensure('exp/b', '/runs/exp/b');
    const f2 = await store.files.add(other.id, '/runs/exp/b/learning.log', 'learning.log');
    await store.commit(batch(other.id, f2.id, [[1, { kl: 0.01 }]], 10), 2);

    expect(await store.points.allNames()).toEqual(['epoch', 'kl', 'reward']);
    const cols = await store.points.columns(runId, 'reward');
    const upTo = (a: Float64Array) => [...a.subarray(0, cols.length)]; // SQLite's arrays have room to grow
    expect([cols.length, upTo(cols.steps), upTo(cols.values)]).toEqual([3, [1, 2, 3], [0.1, NaN, 0.3]]);
    expect((await store.points.columns(runId, 'nothing')).length).toBe(0);
    expect(await store.points.digest(runId, 'reward', 2)).toMatchObject({
      length: 2,
      firstStep: 2,
      lastStep: 3,
      min: 0.3,
      max: 0.3,
      tail: { steps: [2, 3], values: [NaN, 0.3] },
      overview: [NaN, 0.3],
      chart: [{ step: 3, value: 0.3 }],
    });
    expect(await store.points.epochsAt(runId, [3, 2, 1])).toEqual([1, null, 0.5]);
    expect((await store.examples.between(runId, 1, 3)).map((e) => [e.step, e.key])).toEqual([
      [1, 'k0'],
      [1, 'k1'],
      [3, 'k2'],
      [3, 'k3'],
    ]);
    expect((await store.examples.between(runId, 2, 3)).map((e) => e.key)).toEqual(['k2', 'k3']);
    expect((await store.examples.extremes(runId, 1, 3, 'best', 2)).map((e) => [e.key, e.breakdown])).toEqual([
      ['k0', { r: 0.9 }],
      ['k2', { r: 0.6 }],
    ]);
    expect((await store.examples.extremes(runId, 1, 3, 'worst', 1)).map((e) => e.key)).toEqual(['k3']);
    expect(await store.events.meta(runId)).toEqual({ total_steps: 120, max_steps: 90 });
    expect(await store.events.config(runId)).toEqual({ model: 'qwen', lr: '1e-6' });
    // never restarted: one attempt, from its first step to its last
    expect((await store.attempts.list(runId)).map((a) => [a.attempt, a.resumed_step, a.last_step])).toEqual([
      [1, 1, 3],
    ]);
    expect(await store.attempts.replaying(runId, 3)).toBeNull();
  });

  it('a job restarted from a checkpoint, written as two batches: a second attempt, and the pace of new steps', async () => {
    let t = 1000;
    const { store } = await setUp(kind, () => t);
    const { runId, fileId } = await runWithFile(store);
    await store.commit(batch(runId, fileId, logged([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), 100), 2);
    t = 2000; // the job died at step 10 and resumed from its checkpoint at step 4
    await store.commit(batch(runId, fileId, logged([4, 5, 6, 7]), 140), 2);
    expect(await store.attempts.list(runId)).toEqual([
      { run_id: runId, attempt: 1, resumed_step: 1, at: 1000, last_step: 10, rewound: 1 },
      { run_id: runId, attempt: 2, resumed_step: 4, at: 2000, last_step: 7, rewound: 0 },
    ]);
    // steps 1..10 were new, then 4..7 took attempt 2 on from step 3
    expect(await store.arrivals.recent(runId)).toEqual([
      { at: 1000, steps: 10 },
      { at: 2000, steps: 4 },
    ]);
    expect(await store.files.byPath('/runs/exp/a/learning.log')).toMatchObject({ last_step: 7, attempt: 2 });
    expect(await store.attempts.replaying(runId, 10)).toBe(7);
    await store.attempts.markRewound(runId, 2);
    expect((await store.attempts.list(runId)).map((a) => a.rewound)).toEqual([1, 1]);
    // a document read again whole repeats its steps: no restart, no arrival
    const doc = await store.files.add(runId, '/runs/exp/a/trainer_state.json', 'trainerState');
    await store.commit({ ...batch(runId, doc.id, logged([1, 2, 3]), 50), rewrite: true }, 2);
    expect((await store.attempts.list(runId)).length).toBe(2);
    expect((await store.arrivals.recent(runId)).length).toBe(2);
  });

  it('restarts inside one batch, a lagging file of another format, new files after quiet ones', async () => {
    let t = 1000;
    const { store } = await setUp(kind, () => t);
    const { runId, fileId } = await runWithFile(store);
    // a backfill of both attempts at once: 1..6, then again from 3 to 5
    await store.commit(batch(runId, fileId, logged([1, 2, 3, 4, 5, 6, 3, 4, 5]), 90), 2);
    const brief = async () =>
      (await store.attempts.list(runId)).map((a) => [a.attempt, a.resumed_step, a.at, a.last_step]);
    expect(await brief()).toEqual([
      [1, 1, 1000, 6],
      [2, 3, 1000, 5],
    ]);
    // batch_metrics.jsonl logs steps 1..3 later: behind, in another format, no restart and nothing new
    t = 5000;
    const jsonl = await store.files.add(runId, '/runs/exp/a/batch_metrics.jsonl', 'batchMetrics');
    await store.commit(batch(runId, jsonl.id, logged([1, 2, 3]), 30), 2);
    expect(await brief()).toEqual([
      [1, 1, 1000, 6],
      [2, 3, 1000, 5],
    ]);
    // a second learning.log from step 2, over a minute after the first one last grew: attempt 3
    t = 62_000;
    const second = await store.files.add(runId, '/runs/exp/a/learning-2.log', 'learning.log');
    await store.commit(batch(runId, second.id, logged([2, 3]), 20), 2);
    expect(await brief()).toEqual([
      [1, 1, 1000, 6],
      [2, 3, 1000, 5],
      [3, 2, 62_000, 3],
    ]);
    // that job's own batch_metrics-2.jsonl, 8 s later (its sibling quiet too): the same attempt
    t = 70_000;
    const jsonl2 = await store.files.add(runId, '/runs/exp/a/batch_metrics-2.jsonl', 'batchMetrics');
    await store.commit(batch(runId, jsonl2.id, logged([2, 3, 4]), 30), 2);
    expect(await brief()).toEqual([
      [1, 1, 1000, 6],
      [2, 3, 1000, 5],
      [3, 2, 62_000, 4],
    ]);
    expect(await store.files.byPath('/runs/exp/a/batch_metrics-2.jsonl')).toMatchObject({ last_step: 4, attempt: 3 });
    expect(await store.arrivals.recent(runId)).toEqual([
      { at: 1000, steps: 6 + 3 },
      { at: 62_000, steps: 2 },
      { at: 70_000, steps: 1 },
    ]);
  });

  it('keeps the newest 400 arrivals of a run', async () => {
    let t = 0;
    const { store } = await setUp(kind, () => t);
    const { runId, fileId } = await runWithFile(store);
    for (let step = 1; step <= 403; step++) {
      t = step * 1000;
      await store.commit(batch(runId, fileId, logged([step]), step * 10), 2);
    }
    const kept = await store.arrivals.recent(runId);
    expect([kept.length, kept[0], kept.at(-1)]).toEqual([400, { at: 4000, steps: 1 }, { at: 403_000, steps: 1 }]);
  });

  it('mutes by id and run out, the messages of every target showing an alert, report marks', async () => {
    const { store } = await setUp(kind);
    const { runId, fileId } = await runWithFile(store);
    const s = await store.silences.add({
      run: null,
      rule: null,
      severity: null,
      starts_at: 100,
      ends_at: 200,
      author: 'ana',
      reason: 'sweep',
    });
    expect(await store.silences.byId(s.id)).toMatchObject({ id: s.id, ends_at: 200, ended_at: null, reason: 'sweep' });
    expect(await store.silences.byId(s.id + 1)).toBeUndefined();
    expect(await store.silences.expired(199)).toEqual([]);
    expect((await store.silences.expired(200)).map((x) => x.id)).toEqual([s.id]);
    await store.silences.end(s.id, 200);
    expect(await store.silences.expired(300)).toEqual([]);

    const a = await store.alerts.create(runId, 'r', 'm', 'firing', change(1, 1, 's'));
    await store.chat.record('discord:ops', 'd1', { runId, alertIds: [a.id], payload: { v: 1 }, delivery: '1/0' }, 10);
    await store.chat.record('slack:C1', 's1', { runId, alertIds: [a.id], payload: { v: 1 }, delivery: '2/0' }, 11);
    const showing = await store.chat.showing(a.id);
    expect(showing.map((m) => [m.target, m.ref])).toEqual([
      ['slack:C1', 's1'],
      ['discord:ops', 'd1'],
    ]);
    await store.chat.setPayload(showing[1]!.id, { v: 2 });
    expect(JSON.parse((await store.chat.byRef('discord:ops', 'd1'))!.payload)).toEqual({ v: 2 });

    expect(await store.reports.mark(runId, 'epoch:0.5', 50)).toBe(true);
    expect(await store.reports.mark(runId, 'epoch:0.5', 60)).toBe(false);
    expect(await store.reports.mark(0, 'digest:2026-11-22', 60)).toBe(true);
    // steps arrive at the store's clock: one batch now, the step it reached is the one logged by then
    await store.commit(
      batch(
        runId,
        fileId,
        [
          [1, { reward: 0.1 }],
          [2, { reward: 0.2 }],
        ],
        20,
      ),
      2,
    );
    expect(await store.reports.stepAt(runId, Date.now() + 60_000)).toBe(2);
    expect(await store.reports.stepAt(runId, 0)).toBeNull();
    expect(await store.unread.list()).toEqual([]);
  });

  it('a failed row holds its target back until it is back (clearWait); released leases are claimed at once', async () => {
    const { store, other } = await setUp(kind);
    const second = await other();
    const runIds = await someRuns(store, 4);
    for (let i = 0; i < 4; i++) await store.outbox.add(runIds[i]!, 'discord:ops', { n: i }, i);
    await store.outbox.add(runIds[0]!, 'slack:C1', { n: 9 }, 9);
    const claim = (s: StoreContract, owner: string, target = 'discord:ops') =>
      s.outbox
        .claim(target, { owner, now: 1000, leaseMs: 60_000 })
        .then((rows) => rows.map((r) => JSON.parse(r.payload).n));
    const [first] = await store.outbox.claim('discord:ops', {
      owner: 'a/discord',
      now: 1000,
      leaseMs: 60_000,
      limit: 1,
    });
    await store.outbox.failed(first!.id, 'HTTP 502', 500_000);
    expect(await claim(second, 'b/discord')).toEqual([]); // behind the failed row, in order
    expect(await claim(store, 'a/slack', 'slack:C1')).toEqual([9]); // another target goes on
    // Discord is back: the failed row and those after it may go now
    await second.outbox.clearWait('discord:ops');
    expect(await claim(second, 'b/discord')).toEqual([0, 1, 2, 3]);
    // that lane gives its claims back (it stops): another process claims them now, not when the lease ends
    await second.outbox.releaseClaims('b/discord');
    expect(await claim(store, 'a/discord')).toEqual([0, 1, 2, 3]);
    expect(await claim(second, 'b/slack', 'slack:C1')).toEqual([]); // a/slack still holds its lease
  });

  it('the leader lock is held by one; released, or its holder killed, it is taken over', async () => {
    const { store, other, where } = await setUp(kind);
    const second = await other();
    const lead = await store.tryLead('bot');
    expect(lead).not.toBeNull();
    expect(await second.tryLead('bot')).toBeNull();
    const digest = await second.tryLead('digest'); // another lock name is another lock
    expect(digest).not.toBeNull();
    await digest!.release();
    await lead!.release();
    const taken = await second.tryLead('bot');
    expect(taken).not.toBeNull();
    await taken!.release();

    const child = await leaderChild(kind.name, where);
    expect(await store.tryLead('bot')).toBeNull();
    child.kill('SIGKILL');
    let after = null;
    for (let i = 0; i < 100 && after === null; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await store.tryLead('bot');
    }
    expect(after).not.toBeNull();
    await after!.release();
  });
});

describe('PostgreSQL points', () => {
  it('a COPY that meets a point another connection is writing falls back to the upsert: the batch lands whole', async () => {
    const { store, where } = await setUp(kinds[1]!);
    const { runId, fileId } = await runWithFile(store);
    await store.commit(batch(runId, fileId, [[1, { reward: 0.1 }]], 10), 3);
    const other = await freshClient(where);
    await other.query('BEGIN');
    await other.query(
      `INSERT INTO points (run_id, metric_id, step, value) SELECT $1, id, 5, 0.5 FROM metrics WHERE name = 'reward'`,
      [runId],
    );
    // step 5 is not visible yet, so the batch (enough points for COPY) takes COPY, which waits for the other
    // transaction on the key
    const rows: Rows = [
      [4, { reward: 0.4 }],
      [5, { reward: 0.9 }],
    ];
    for (let step = 6; rows.length < COPY_MIN_POINTS; step++) rows.push([step, { reward: step / 100 }]);
    const committing = store.commit(batch(runId, fileId, rows, 30), 3);
    await new Promise((r) => setTimeout(r, 300));
    await other.query('COMMIT');
    await other.end();
    expect(await committing).toMatchObject({ minStep: 4, maxStep: COPY_MIN_POINTS + 3, newSteps: COPY_MIN_POINTS });
    const series = (await store.points.series(runId, 'reward')).map((p) => [p.step, p.value]);
    expect(series.slice(0, 4)).toEqual([
      [1, 0.1],
      [4, 0.4],
      [5, 0.9],
      [6, 0.06],
    ]);
    expect(series).toHaveLength(COPY_MIN_POINTS + 1);
    expect(await store.files.byPath('/runs/exp/a/learning.log')).toMatchObject({ offset: 30 });
  });
});

describe('the PostgreSQL leader lock', () => {
  it('tells its holder when the session holding it is ended by the server', async () => {
    const { store, where } = await setUp(kinds[1]!);
    const lead = (await store.tryLead('bot'))!;
    const lost = new Promise<string>((resolve) => lead.onLost(() => resolve('lost')));
    const admin = await PgStore.open(where);
    opened.push(admin);
    // what a server restart or an administrator does to the session
    const killer = await freshClient(where);
    await killer.query(
      `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()`,
    );
    await killer.end();
    expect(await lost).toBe('lost');
    expect(await admin.tryLead('bot')).not.toBeNull();
  });
});

async function freshClient(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}
