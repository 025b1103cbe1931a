import { describe, expect, it } from 'vitest';
import type { Notification } from '../../src/engine/notification.ts';
import { DeliveryError, Dispatcher, type Target } from '../../src/notify/dispatcher.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { HOUR, MIN, Trace, presetOnly, times } from './trace.ts';

const spike = (targets = ['console']) =>
  new Trace({ book: presetOnly('grad_explosion'), repeatIntervalMs: HOUR, targets });
const brief = (n: Notification) => n.items.map((i) => `${i.kind} ${i.rule}@${i.step}`).join(', ');

/** A target that records what it was given, and throws while `failing` is set. */
function fakeTarget(name = 'console') {
  const target: Target & { failing: boolean; delivered: string[] } = {
    name,
    failing: false,
    delivered: [],
    deliver: async (n) => {
      if (target.failing) throw new Error(`${name} down`);
      target.delivered.push(brief(n));
    },
  };
  return target;
}

describe('restart', () => {
  it('a new Engine on the reopened store repeats no notification and re-evaluates no step', () => {
    const t = spike().feed([{ grad_norm: 15.786 }]);
    expect(t.said()).toEqual([['firing grad_explosion@1']]);
    t.restart();
    t.engine.evaluate(t.run.id);
    t.tick();
    t.feed([{ grad_norm: 12 }]);
    expect(t.alerts()).toHaveLength(1);
    expect(t.said()).toEqual([['firing grad_explosion@1']]);
  });

  it('the repeat interval runs on across the restart', () => {
    const t = spike().feed([{ grad_norm: 15.786 }]);
    t.advance(40 * MIN);
    t.restart();
    t.advance(19 * MIN).tick();
    expect(t.said()).toHaveLength(1);
    t.advance(MIN).tick();
    expect(t.said()).toEqual([['firing grad_explosion@1'], ['repeat grad_explosion@1']]);
  });

  it('rule state survives the restart: a streak and a recovery continue where they were', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(2, { frac_zero_std: 1 }));
    t.restart();
    t.feed([{ frac_zero_std: 1 }]);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', started_step: 1, fired_step: 3 });
    t.feed(times(2, { frac_zero_std: 0.1 }));
    t.restart();
    t.feed([{ frac_zero_std: 0.1 }]);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'resolved', resolved_step: 6 });
    expect(t.said()).toEqual([['firing mode_collapse@3'], ['resolved mode_collapse@6']]);
  });

  it('a Dispatcher delivers each outbox row once across the restart', async () => {
    const target = fakeTarget();
    const t = spike().feed([{ grad_norm: 15.786 }]);
    await new Dispatcher(new SqliteAsyncStore(t.store), [target]).kick();
    t.feed(times(5, { grad_norm: 0.1 })); // written, then the process stops before the next kick
    t.restart();
    const after = new Dispatcher(new SqliteAsyncStore(t.store), [target]);
    await after.kick();
    await after.kick();
    expect(target.delivered).toEqual(['firing grad_explosion@1', 'resolved grad_explosion@6']);
    expect(t.outbox().map((r) => r.done_at !== null)).toEqual([true, true]);
    expect(t.store.outbox.pending('console')).toEqual([]);
  });
});

describe('dispatcher', () => {
  it('a target that throws keeps the row pending, waits a growing backoff, then delivers in order', async () => {
    const target = fakeTarget();
    const errors: string[] = [];
    const t = spike();
    const d = () =>
      new Dispatcher(new SqliteAsyncStore(t.store), [target], {
        now: () => t.now,
        baseBackoffMs: 1000,
        onError: (name, err) => errors.push(`${name}: ${err.message}`),
      });
    target.failing = true;
    t.feed([{ grad_norm: 15.786 }]);
    const first = d();
    await first.kick();
    await first.stop();
    expect(t.outbox()).toMatchObject([
      { attempts: 1, last_error: 'console down', done_at: null, next_attempt_at: t.now + 1000 },
    ]);
    const early = d();
    await early.kick(); // within the backoff: not tried
    await early.stop();
    expect(t.outbox()[0]).toMatchObject({ attempts: 1 });
    t.feed(times(5, { grad_norm: 0.1 }));
    t.advance(1000);
    const second = d();
    await second.kick();
    await second.stop();
    // the drain stops at the first failure: the newer row is not tried ahead of the older one
    expect(t.outbox()).toMatchObject([
      { attempts: 2, done_at: null, next_attempt_at: t.now + 2000 },
      { attempts: 0, done_at: null },
    ]);
    expect(errors).toEqual(['console: console down', 'console: console down']);
    target.failing = false;
    t.restart();
    t.advance(2000);
    const third = d();
    await third.kick();
    await third.stop();
    expect(target.delivered).toEqual(['firing grad_explosion@1', 'resolved grad_explosion@6']);
    expect(t.outbox().map((r) => [r.attempts, r.done_at !== null])).toEqual([
      [2, true],
      [0, true],
    ]);
  });

  it('honours a Retry-After from the platform instead of the backoff', async () => {
    const t = spike();
    let calls = 0;
    const limited: Target = {
      name: 'console',
      deliver: async () => {
        calls++;
        if (calls === 1) throw new DeliveryError('rate limited', 7000);
      },
    };
    t.feed([{ grad_norm: 15.786 }]);
    const d = new Dispatcher(new SqliteAsyncStore(t.store), [limited], { now: () => t.now });
    await d.kick();
    expect(t.outbox()[0]).toMatchObject({ attempts: 1, next_attempt_at: t.now + 7000 });
    await d.stop();
  });

  it('a failing target does not hold back another target', async () => {
    const ok = fakeTarget('console');
    const down = fakeTarget('chat');
    down.failing = true;
    const t = spike(['console', 'chat']).feed([{ grad_norm: 15.786 }]);
    const d = new Dispatcher(new SqliteAsyncStore(t.store), [down, ok]);
    await d.kick();
    await d.stop();
    expect(ok.delivered).toEqual(['firing grad_explosion@1']);
    expect(t.store.outbox.pending('chat')).toHaveLength(1);
    expect(t.store.outbox.pending('console')).toEqual([]);
  });

  it('a row written during a drain is delivered by that drain', async () => {
    const t = spike();
    const delivered: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: Target = {
      name: 'console',
      deliver: async (n) => {
        if (delivered.length === 0) await gate;
        delivered.push(brief(n));
      },
    };
    const d = new Dispatcher(new SqliteAsyncStore(t.store), [slow]);
    t.feed([{ grad_norm: 15.786 }]);
    const first = d.kick();
    t.feed(times(5, { grad_norm: 0.1 }));
    const second = d.kick();
    release();
    await Promise.all([first, second]);
    expect(delivered).toEqual(['firing grad_explosion@1', 'resolved grad_explosion@6']);
  });
});
