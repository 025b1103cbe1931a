import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import type { Log } from '../../src/lib/log.ts';
import { deliverCards } from '../../src/notify/delivery.ts';
import { DeliveryError, Dispatcher, IN_FLIGHT, type Target } from '../../src/notify/dispatcher.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

/** A real store with one run; `add` writes an outbox row whose one alert is named `label`. */
function fixture() {
  const store = Store.open(join(tempDir(), 'rlwatch.db'));
  const run = store.runs.ensure('grpo', '/runs/grpo');
  const add = (target: string, label: string): number => {
    const n: Notification = {
      run: 'grpo',
      items: [
        {
          alertId: 1,
          kind: 'firing',
          severity: 'critical',
          rule: label,
          metric: 'm',
          summary: label,
          step: 1,
          epoch: null,
          recent: [],
          examples: null,
        },
      ],
    };
    store.outbox.add(run.id, target, n, Date.now());
    return store.db.prepare('SELECT max(id) FROM outbox').pluck().get() as number;
  };
  const row = (id: number) =>
    store.db.prepare('SELECT attempts, done_at, dead_at, dead_reason, last_error FROM outbox WHERE id = ?').get(id) as {
      attempts: number;
      done_at: number | null;
      dead_at: number | null;
      dead_reason: string | null;
      last_error: string | null;
    };
  return { store, add, row };
}

const label = (n: Notification): string => n.items[0]!.rule;

/** A log that keeps its lines. */
function memoryLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(m), warn: (m) => lines.push(`warning: ${m}`) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Dispatcher: each target on its own', () => {
  it('one target down for a minute (its requests hanging until they time out) never delays another', async () => {
    vi.useFakeTimers();
    const { store, add } = fixture();
    const added = new Map<string, number>();
    const discordAt = new Map<string, number>();
    const slackGot: string[] = [];
    let slackDown = true;
    // Discord answers in 50 ms; Slack, while down, holds each request 10 s (its client timeout) and fails it
    const discord: Target = {
      name: 'discord:C1',
      deliver: async (n) => {
        await new Promise((r) => setTimeout(r, 50));
        discordAt.set(label(n), Date.now());
      },
    };
    const slack: Target = {
      name: 'slack:C1',
      deliver: async (n) => {
        if (slackDown) {
          await new Promise((r) => setTimeout(r, 10_000));
          throw new DeliveryError('Slack: connect ETIMEDOUT');
        }
        slackGot.push(label(n));
      },
    };
    const d = new Dispatcher(new SqliteAsyncStore(store), [slack, discord], {
      baseBackoffMs: 1000,
      maxBackoffMs: 8000,
    });
    for (let s = 0; s < 60; s++) {
      const a = `alert-${s}`;
      added.set(a, Date.now());
      add('slack:C1', a);
      add('discord:C1', a);
      void d.kick();
      await vi.advanceTimersByTimeAsync(1000);
    }
    // every Discord alert went out in its own 50 ms, in order, while Slack was down the whole minute
    expect([...discordAt.keys()]).toEqual([...added.keys()]);
    for (const [a, at] of discordAt) expect(at - added.get(a)!).toBe(50);
    expect(slackGot).toEqual([]);
    expect(store.outbox.pending('slack:C1', 100)).toHaveLength(60);
    slackDown = false;
    await vi.advanceTimersByTimeAsync(8000 + 10_000); // the longest wait: a timeout plus the capped backoff
    expect(slackGot).toEqual([...added.keys()]);
    expect(store.outbox.pending('slack:C1')).toEqual([]);
    await d.stop();
  });

  it('a permanent refusal sets the row aside after one attempt, logged once, and the next row still goes out', async () => {
    const { store, add, row } = fixture();
    const log = memoryLog();
    const tried: string[] = [];
    let refuse = true;
    const target: Target = {
      name: 'discord:C1',
      deliver: async (n) => {
        tried.push(label(n));
        if (refuse && label(n) === 'first') throw new DeliveryError('Discord 403: Missing Access', undefined, true);
      },
    };
    const first = add('discord:C1', 'first');
    const second = add('discord:C1', 'second');
    const d = new Dispatcher(new SqliteAsyncStore(store), [target], { log });
    await d.kick();
    expect(tried).toEqual(['first', 'second']);
    expect(row(first)).toMatchObject({ attempts: 1, done_at: null, dead_reason: 'Discord 403: Missing Access' });
    expect(row(first).dead_at).not.toBeNull();
    expect(row(second).done_at).not.toBeNull();
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toContain(`row #${first} (run grpo) set aside`);
    expect(log.lines[0]).toContain(`rlwatch outbox retry ${first}`);
    await d.kick(); // a set-aside row is not tried again by itself
    expect(tried).toEqual(['first', 'second']);
    // fixed (the bot was given access), re-queued: delivered on the next drain
    refuse = false;
    expect(store.outbox.requeue(first)).toBe(true);
    expect(store.outbox.requeue(first)).toBe(false); // no longer set aside
    await d.kick();
    expect(tried).toEqual(['first', 'second', 'first']);
    expect(row(first)).toMatchObject({ attempts: 1, dead_at: null });
    expect(row(first).done_at).not.toBeNull();
    await d.stop();
  });

  it('every failed attempt is counted, but a long outage is a few log lines, not one per retry', async () => {
    vi.useFakeTimers();
    const { store, add, row } = fixture();
    const log = memoryLog();
    let down = true;
    let errors = 0;
    const target: Target = {
      name: 'slack:C1',
      deliver: async () => {
        if (down) throw new DeliveryError('Slack: service_unavailable');
      },
    };
    const id = add('slack:C1', 'a');
    const d = new Dispatcher(new SqliteAsyncStore(store), [target], {
      baseBackoffMs: 100,
      maxBackoffMs: 1000,
      log,
      onError: () => errors++,
    });
    void d.kick();
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    const attempts = row(id).attempts;
    expect(attempts).toBeGreaterThan(250); // about one a second for five minutes
    expect(errors).toBe(attempts);
    // the first failure at once, then one line a minute
    expect(log.lines.length).toBeGreaterThanOrEqual(5);
    expect(log.lines.length).toBeLessThanOrEqual(7);
    expect(log.lines[0]).toBe(
      'warning: cannot notify slack:C1: Slack: service_unavailable; alerts wait in the outbox, next try in 1 s',
    );
    expect(log.lines[1]).toMatch(
      /^warning: cannot notify slack:C1: still failing \(\d+ attempts since the last note\)/,
    );
    down = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(row(id).done_at).not.toBeNull();
    expect(log.lines.at(-1)).toBe(`slack:C1: delivering again after ${attempts} failed attempts`);
    await d.stop();
  });

  it('a row a stopped process left waiting holds back the rows after it: a restart keeps the order', async () => {
    const { store, add, row } = fixture();
    const first = add('slack:C1', 'first');
    const second = add('slack:C1', 'second');
    store.outbox.failed(first, 'HTTP 502', Date.now() + 300); // the last process was told to wait 300 ms
    const seen: string[] = [];
    const target: Target = { name: 'slack:C1', deliver: async (n) => void seen.push(label(n)) };
    const d = new Dispatcher(new SqliteAsyncStore(store), [target]);
    await d.kick();
    expect(seen).toEqual([]);
    expect(row(second).done_at).toBeNull();
    await new Promise((r) => setTimeout(r, 350));
    await d.kick();
    expect(seen).toEqual(['first', 'second']);
    await d.stop();
  });

  it('wake() tries a target at once when its platform comes back, not after its backoff', async () => {
    const { store, add, row } = fixture();
    let up = false;
    const target: Target = {
      name: 'slack:C1',
      deliver: async () => {
        if (!up) throw new DeliveryError('not connected to Slack yet', 3_600_000);
      },
    };
    const id = add('slack:C1', 'a');
    const d = new Dispatcher(new SqliteAsyncStore(store), [target]);
    await d.kick();
    expect(row(id)).toMatchObject({ attempts: 1, done_at: null });
    up = true;
    await d.kick(); // still inside the hour it was told to wait
    expect(row(id).done_at).toBeNull();
    d.wake('slack:');
    await d.kick();
    expect(row(id).done_at).not.toBeNull();
    await d.stop();
  });

  it('a retry goes out when its timer runs, even if that is a little before the clock reaches the retry time', async () => {
    // Node counts a timer from when the event loop's turn began: on a busy process it runs a few ms "early"
    vi.useFakeTimers();
    const { store, add, row } = fixture();
    let clock = 1_800_000_000_000;
    const got: string[] = [];
    let failing = true;
    const target: Target = {
      name: 'webhook:default',
      deliver: async (n) => {
        if (failing) {
          failing = false;
          throw new DeliveryError('webhook default: HTTP 503');
        }
        got.push(label(n));
      },
    };
    const id = add('webhook:default', 'collapse');
    const d = new Dispatcher(new SqliteAsyncStore(store), [target], {
      baseBackoffMs: 200,
      maxBackoffMs: 200,
      now: () => clock,
    });
    await d.kick();
    expect(row(id)).toMatchObject({ attempts: 1, done_at: null });
    clock += 190;
    await vi.advanceTimersByTimeAsync(200); // the retry's timer runs; nothing else will wake the lane
    expect(got).toEqual(['collapse']);
    expect(row(id).done_at).not.toBeNull();
    await d.stop();
  });

  it('stop() lets go of a delivery in flight: the row stays pending even if the platform answers later', async () => {
    const { store, add, row } = fixture();
    let answer: () => void = () => {};
    let started = false;
    const target: Target = {
      name: 'slack:C1',
      deliver: () => {
        started = true;
        return new Promise<void>((r) => (answer = r));
      },
    };
    const id = add('slack:C1', 'a');
    const d = new Dispatcher(new SqliteAsyncStore(store), [target]);
    void d.kick();
    await vi.waitFor(() => expect(started).toBe(true));
    await d.stop(50); // returns although the delivery never finished
    answer();
    await new Promise((r) => setTimeout(r, 10));
    expect(row(id)).toMatchObject({ done_at: null, dead_at: null });
    expect(store.outbox.pending('slack:C1').map((r) => r.id)).toEqual([id]);
  });
});

describe('Dispatcher: runs at once, each in order', () => {
  /** A real store; `add` writes an outbox row of run `run` whose items are `items` (as the engine writes them). */
  function runs() {
    const store = Store.open(join(tempDir(), 'rlwatch.db'));
    const async = new SqliteAsyncStore(store);
    const add = (run: string, items: Array<Partial<NotificationItem>>): number => {
      const { id } = store.runs.ensure(run, `/runs/${run}`);
      const full = items.map((i) => ({
        alertId: 1,
        kind: 'firing' as const,
        severity: 'info',
        rule: 'r',
        metric: 'm',
        summary: run,
        step: 1,
        epoch: null,
        recent: [],
        examples: null,
        ...i,
      }));
      store.outbox.add(id, 'discord:C1', { run, items: full } satisfies Notification, Date.now());
      return store.db.prepare('SELECT max(id) FROM outbox').pluck().get() as number;
    };
    return { store, async, add };
  }

  it('a critical row queued behind many info rows of other runs is delivered first', async () => {
    const { store, async, add } = runs();
    for (let r = 0; r < 40; r++) add(`info-${r}`, [{ summary: `info-${r}` }]);
    add('paged', [{ severity: 'critical', summary: 'paged' }]);
    const order: string[] = [];
    const target: Target = { name: 'discord:C1', deliver: async (n) => void order.push(n.items[0]!.summary) };
    const d = new Dispatcher(async, [target]);
    await d.kick();
    expect(order[0]).toBe('paged');
    expect(order.slice(1)).toEqual(Array.from({ length: 40 }, (_, r) => `info-${r}`));
    expect(store.outbox.pending('discord:C1')).toEqual([]);
    await d.stop();
  });

  it('a warning card handed out critical goes without its chart, ahead of a critical row or beside a critical card', async () => {
    const { async, add } = runs();
    const chart = {
      points: [
        { step: 1, value: 1 },
        { step: 2, value: 2 },
      ],
      threshold: null,
    };
    add('paged', [{ severity: 'warning', summary: 'ahead', chart }]);
    add('paged', [{ severity: 'critical', summary: 'paged', chart }]);
    add('calm', [{ severity: 'warning', summary: 'alone', chart }]);
    add('mixed', [
      { severity: 'warning', summary: 'mixed', chart },
      { severity: 'critical', summary: 'mixed', chart },
    ]);
    const got = new Map<string, { charts: number; urgency: number }>();
    const target: Target = {
      name: 'discord:C1',
      deliver: async (n, _key, _run, urgency) => {
        got.set(n.items[0]!.summary, { charts: n.items.filter((i) => i.chart).length, urgency });
      },
    };
    const d = new Dispatcher(async, [target]);
    await d.kick();
    expect(Object.fromEntries(got)).toEqual({
      ahead: { charts: 0, urgency: 2 }, // handed out as urgent as the critical row behind it
      paged: { charts: 1, urgency: 2 },
      alone: { charts: 1, urgency: 1 },
      mixed: { charts: 1, urgency: 2 }, // its critical card's chart only
    });
    await d.stop();
  });

  it("delivers a few runs at once, and a run's card before its resolution, which edits it", async () => {
    const { store, async, add } = runs();
    const RUNS = 8;
    const alerts: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const run = store.runs.ensure(`run-${r}`, `/runs/run-${r}`);
      const change = { step: 1, at: Date.now(), severity: 'warning', summary: 's', details: {} };
      alerts.push((await async.alerts.create(run.id, 'reward_plateau', 'reward', 'firing', change)).id);
    }
    // every run's card, then every run's resolution: rows of one run far apart, and the later runs more urgent
    const severity = (r: number): string => (r < 4 ? 'warning' : 'critical');
    for (let r = 0; r < RUNS; r++) add(`run-${r}`, [{ alertId: alerts[r]!, severity: severity(r) }]);
    for (let r = 0; r < RUNS; r++) add(`run-${r}`, [{ alertId: alerts[r]!, kind: 'resolved', severity: severity(r) }]);
    const calls: Array<{ kind: 'post' | 'edit'; run: string }> = [];
    let inFlight = 0;
    let most = 0;
    const slow = async <T>(fn: () => T): Promise<T> => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return fn();
    };
    let posts = 0;
    const target: Target = {
      name: 'discord:C1',
      edits: true,
      deliver: (n, key, runId) =>
        deliverCards(
          async.chat,
          'discord:C1',
          n,
          { key, runId },
          {
            post: () => slow(() => (calls.push({ kind: 'post', run: n.run }), `m${++posts}`)),
            edit: () => slow(() => void calls.push({ kind: 'edit', run: n.run })),
          },
        ),
    };
    const d = new Dispatcher(async, [target]);
    await d.kick();
    // one card per run, then one edit of it; never a second card (a resolution before its card would post one)
    for (let r = 0; r < RUNS; r++) {
      expect(calls.filter((c) => c.run === `run-${r}`).map((c) => c.kind)).toEqual(['post', 'edit']);
    }
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
    // the critical runs' cards went out before the warnings'
    const firstPosts = calls.filter((c) => c.kind === 'post').map((c) => c.run);
    expect(new Set(firstPosts.slice(0, 4))).toEqual(new Set(['run-4', 'run-5', 'run-6', 'run-7']));
    expect(store.outbox.pending('discord:C1')).toEqual([]);
    await d.stop();
  });

  it("a delivered row's slot is claimed for in the statement that marks it delivered: no claim of its own", async () => {
    const { store, async, add } = runs();
    for (let i = 0; i < 10; i++) add('one', [{ summary: `one-${i}` }]);
    for (let r = 0; r < 3; r++) add(`run-${r}`, [{ summary: `run-${r}` }]);
    const statements = { claim: 0, done: 0, doneAndClaim: 0 };
    const outbox = new Proxy(async.outbox, {
      get(t, key: string) {
        const v = Reflect.get(t, key) as unknown;
        if (!(key in statements) || typeof v !== 'function') return v;
        return (...args: unknown[]) => (statements[key as keyof typeof statements]++, v.apply(t, args));
      },
    });
    const counted = new Proxy(async, { get: (t, key) => (key === 'outbox' ? outbox : Reflect.get(t, key)) });
    const order: string[] = [];
    const target: Target = { name: 'discord:C1', deliver: async (n) => void order.push(n.items[0]!.summary) };
    const d = new Dispatcher(counted, [target]);
    await d.kick();
    // run `one`'s rows in order, one at a time; every row delivered once
    expect(order.filter((x) => x.startsWith('one'))).toEqual(Array.from({ length: 10 }, (_, i) => `one-${i}`));
    expect(order).toHaveLength(13);
    expect(store.outbox.pending('discord:C1')).toEqual([]);
    // the first claim, then one statement per delivered row (each run's next row claimed with the one before)
    expect(statements).toEqual({ claim: 1, done: 0, doneAndClaim: 13 });
    await d.stop();
  });

  it('rows written while a slow delivery runs are claimed at once, not when it ends', async () => {
    const { async, add } = runs();
    add('slow', [{ summary: 'slow' }]);
    let answer!: () => void;
    const delivered: string[] = [];
    const target: Target = {
      name: 'discord:C1',
      deliver: async (n) => {
        const run = n.items[0]!.summary;
        if (run === 'slow') await new Promise<void>((r) => (answer = r));
        delivered.push(run);
      },
    };
    const d = new Dispatcher(async, [target]);
    const drained = d.kick();
    await vi.waitFor(() => expect(answer).toBeDefined());
    add('paged', [{ severity: 'critical', summary: 'paged' }]);
    void d.kick(); // what the outbox's NOTIFY does
    await vi.waitFor(() => expect(delivered).toEqual(['paged']));
    answer();
    await drained;
    expect(delivered).toEqual(['paged', 'slow']);
    await d.stop();
  });

  it('a critical row never waits behind warning cards: a slot beyond the IN_FLIGHT is kept for it', async () => {
    const { async, add } = runs();
    for (let r = 0; r < IN_FLIGHT + 2; r++) add(`warned-${r}`, [{ severity: 'warning', summary: `warned-${r}` }]);
    const answers: Array<() => void> = [];
    const started: string[] = [];
    const target: Target = {
      name: 'discord:C1',
      deliver: async (n) => {
        const run = n.items[0]!.summary;
        started.push(run);
        if (run.startsWith('warned')) await new Promise<void>((r) => answers.push(r)); // the platform is slow
      },
    };
    const d = new Dispatcher(async, [target]);
    const drained = d.kick();
    await vi.waitFor(() => expect(answers).toHaveLength(IN_FLIGHT));
    // the kept slot is for critical rows only: the other warnings wait for a warning's slot
    expect(started).toEqual(Array.from({ length: IN_FLIGHT }, (_, r) => `warned-${r}`));
    add('paged', [{ severity: 'critical', summary: 'paged' }]);
    void d.kick(); // what the outbox's NOTIFY does
    await vi.waitFor(() => expect(started).toContain('paged'));
    expect(answers).toHaveLength(IN_FLIGHT); // delivered while the four warnings still hang
    // a second critical row waits for a slot: the kept one, when the first is done
    add('paged-2', [{ severity: 'critical', summary: 'paged-2' }]);
    void d.kick();
    await vi.waitFor(() => expect(started).toContain('paged-2'));
    expect(answers).toHaveLength(IN_FLIGHT);
    for (let i = 0; i < IN_FLIGHT + 2; i++) {
      await vi.waitFor(() => expect(answers.length).toBeGreaterThan(i));
      answers[i]!();
    }
    await drained;
    expect(started.filter((r) => r.startsWith('warned'))).toHaveLength(IN_FLIGHT + 2);
    await d.stop();
  });

  it('a kick that says no critical row came does not look for one for the kept slot', async () => {
    const { async, add } = runs();
    for (let r = 0; r < IN_FLIGHT; r++) add(`warned-${r}`, [{ severity: 'warning', summary: `warned-${r}` }]);
    let claims = 0;
    const outbox = {
      ...async.outbox,
      claim: (...a: Parameters<typeof async.outbox.claim>) => (claims++, async.outbox.claim(...a)),
    };
    const counted = new Proxy(async, { get: (t, key) => (key === 'outbox' ? outbox : Reflect.get(t, key)) });
    const answers: Array<() => void> = [];
    const started: string[] = [];
    const target: Target = {
      name: 'discord:C1',
      deliver: async (n) => {
        started.push(n.items[0]!.summary);
        if (n.items[0]!.summary.startsWith('warned')) await new Promise<void>((r) => answers.push(r));
      },
    };
    const d = new Dispatcher(counted, [target]);
    const drained = d.kick();
    await vi.waitFor(() => expect(answers).toHaveLength(IN_FLIGHT));
    expect(claims).toBe(1);
    add('warned-late', [{ severity: 'warning', summary: 'warned-late' }]);
    void d.kick({ critical: false }); // PostgreSQL's announcement of a warning's row: every slot of its kind is busy
    await new Promise((r) => setTimeout(r, 50));
    expect(claims).toBe(1);
    add('paged', [{ severity: 'critical', summary: 'paged' }]);
    void d.kick({ critical: true });
    await vi.waitFor(() => expect(started).toContain('paged'));
    expect(claims).toBe(2);
    for (const answer of answers) answer();
    await vi.waitFor(() => expect(started).toContain('warned-late'));
    answers.at(-1)!();
    await drained;
    await d.stop();
  });

  it('a failure stops the lane: deliveries in flight finish, nothing more starts, no row stays leased', async () => {
    const { store, async, add } = runs();
    for (let r = 0; r < 12; r++) add(`run-${r}`, [{ summary: `run-${r}` }]);
    const started: string[] = [];
    const target: Target = {
      name: 'discord:C1',
      deliver: async (n) => {
        const run = n.items[0]!.summary;
        started.push(run);
        await new Promise((r) => setTimeout(r, run === 'run-1' ? 1 : 20));
        if (run === 'run-1') throw new DeliveryError('Discord 502: Bad Gateway');
      },
    };
    const d = new Dispatcher(async, [target], { baseBackoffMs: 60_000 });
    await d.kick();
    // the first claim started four runs; run-1 failed first, the three others finished, and no fifth began
    expect(started).toEqual(['run-0', 'run-1', 'run-2', 'run-3']);
    const rows = store.db
      .prepare('SELECT payload, done_at, attempts, claimed_until FROM outbox ORDER BY id')
      .all() as Array<{ payload: string; done_at: number | null; attempts: number; claimed_until: number | null }>;
    const runOf = (r: { payload: string }): string => (JSON.parse(r.payload) as Notification).run;
    expect(rows.filter((r) => r.done_at !== null).map(runOf)).toEqual(['run-0', 'run-2', 'run-3']);
    expect(rows.filter((r) => r.attempts > 0).map(runOf)).toEqual(['run-1']);
    expect(rows.filter((r) => r.done_at === null && r.claimed_until !== null)).toEqual([]);
    await d.stop();
  });
});
