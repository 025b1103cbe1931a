import { describe, expect, it } from 'vitest';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { MIN_GAP_MS, medianStepInterval } from '../../src/engine/stall.ts';
import { MIN, T0, Trace, presetOnly, times } from './trace.ts';

const SEC = 1000;
const preset = (id: string, patch: Record<string, unknown> = {}) =>
  RuleBook.build(
    GRPO_PRESET.filter((r) => r.id === id),
    [{ id, ...patch }],
  );

/** A live run: one record every `stepMs` on rlwatch's clock. */
function paced(t: Trace, n: number, stepMs: number): Trace {
  for (let i = 0; i < n; i++) t.advance(stepMs).feed([{ reward: 0.3 }]);
  return t;
}

/** Ticks every 10 s (as `start` does) for `ms`; returns the ms after which the rule fired, or null. */
function watch(t: Trace, rule: string, ms: number): number | null {
  const from = t.now;
  for (let waited = 10 * SEC; waited <= ms; waited += 10 * SEC) {
    t.now = from + waited;
    t.tick();
    if (t.alerts().some((a) => a.rule === rule && a.state === 'firing')) return waited;
  }
  return null;
}

describe('stall with a fixed limit (run_stalled, after: 15m, no pace known)', () => {
  const stall = (opts: { now?: number; sessionStart?: number } = {}) =>
    new Trace({ book: preset('run_stalled', { after: '15m' }), ...opts });

  it('fires on tick when no line was read for more than 15 minutes', () => {
    const t = stall();
    t.feed(times(3, { reward: 0.3 }));
    t.advance(15 * MIN).tick();
    expect(t.alerts()).toEqual([]); // 15m is not more than 15m
    t.advance(MIN).tick();
    expect(t.alert('run_stalled')).toMatchObject({
      state: 'firing',
      metric: 'activity',
      severity: 'warning',
      fired_step: 3,
      summary: 'no new record for 16m (last at step 3, 03:00:00 UTC): crashed or hung?',
    });
  });

  it('says the silence as it was: 38 s under a 30 s limit is "38s"', () => {
    const t = new Trace({ book: preset('run_stalled', { after: '30s' }) });
    t.feed(times(3, { reward: 0.3 }));
    t.advance(38 * SEC).tick();
    expect(t.alert('run_stalled').summary).toBe(
      'no new record for 38s (last at step 3, 03:00:00 UTC): crashed or hung?',
    );
  });

  it('fires for a run last read (live, by the process before) shortly before this session started', () => {
    const t = stall({ now: T0 - 10 * MIN });
    t.feed(times(3, { reward: 0.3 })).tick();
    t.advance(10 * MIN).restart(); // this session starts at T0
    t.advance(6 * MIN + 1).tick();
    expect(t.alert('run_stalled')).toMatchObject({ state: 'firing', fired_step: 3 });
  });

  it("keeps a live run's live_at within 30 s of its last growth, without writing it on every batch", () => {
    const t = stall();
    let marks = 0;
    const markLive = t.store.runs.markLive.bind(t.store.runs);
    t.store.runs.markLive = (runId) => void (marks++, markLive(runId));
    const liveAt = () => t.store.runs.byId(t.run.id)!.live_at;
    t.feed([{ reward: 0.3 }]);
    expect([marks, liveAt()]).toEqual([1, t.now]);
    const first = t.now;
    for (let i = 0; i < 9; i++) t.advance(3 * SEC).feed([{ reward: 0.3 }]); // 27 s of batches: live_at stands
    expect([marks, liveAt()]).toEqual([1, first]);
    t.advance(3 * SEC).feed([{ reward: 0.3 }]); // 30 s behind: written again
    expect([marks, liveAt()]).toEqual([2, t.now]);
  });

  it('ignores a run idle since well before this session started', () => {
    const t = stall({ now: T0 - 20 * MIN });
    t.feed(times(3, { reward: 0.3 })).tick();
    t.advance(20 * MIN).restart();
    t.advance(2 * 3_600_000).tick();
    expect(t.alerts()).toEqual([]);
  });

  it('ignores a run that logged train_runtime: it finished', () => {
    const t = stall();
    t.feed([...times(3, { reward: 0.3 }), { train_runtime: 5000 }]);
    t.advance(60 * MIN).tick();
    expect(t.alerts()).toEqual([]);
  });

  it('resolves on the tick after new lines were read', () => {
    const t = stall();
    t.feed(times(3, { reward: 0.3 }));
    t.advance(16 * MIN).tick();
    t.advance(MIN).tick();
    expect(t.alert('run_stalled').state).toBe('firing');
    t.feed([{ reward: 0.31 }]);
    t.tick();
    expect(t.alert('run_stalled')).toMatchObject({ state: 'resolved', fired_step: 3, resolved_step: 4 });
    expect(JSON.parse(t.alert('run_stalled').details).resolved.summary).toBe('records are arriving again');
  });

  it('is not evaluated by evaluate(): only tick() looks at the clock', () => {
    const t = stall();
    t.commit(times(3, { reward: 0.3 }));
    t.advance(60 * MIN);
    t.engine.evaluate(t.run.id);
    expect(t.alerts()).toEqual([]);
  });
});

describe("stall on rlwatch's own clock, never the file's mtime", () => {
  it('a file whose mtime is 5 s behind raises nothing while lines keep arriving', () => {
    const t = new Trace({ book: preset('run_stalled', { after: '15m' }) });
    for (let i = 0; i < 40; i++) {
      t.advance(30 * SEC).commit([{ reward: 0.3 }], { mtimeMs: t.now - 5 * SEC });
      t.engine.evaluate(t.run.id);
      t.tick();
    }
    expect(t.alerts()).toEqual([]);
  });

  it('a file whose mtime is a day ahead still fires once rlwatch reads nothing more', () => {
    const t = new Trace({ book: preset('run_stalled', { after: '15m' }) });
    t.commit([{ reward: 0.3 }], { mtimeMs: T0 + 24 * 60 * MIN });
    t.engine.evaluate(t.run.id);
    t.advance(16 * MIN).tick();
    expect(t.alert('run_stalled').state).toBe('firing');
  });

  it('a run read only while catching up at start-up (history) never stalls', () => {
    const t = new Trace({ book: presetOnly('run_stalled') });
    t.restart(() => t.feed(times(50, { reward: 0.3 }), false));
    t.advance(3 * 3_600_000).tick();
    expect(t.alerts()).toEqual([]);
  });
});

describe('stall fitted to the run (preset run_stalled: max(10m, 5 × median step interval))', () => {
  it('median interval: gaps under 10 s (a catch-up, a backfill) and too few reads say nothing', () => {
    const burst = Array.from({ length: 100 }, (_, i) => ({ at: T0 + i, steps: 1000 }));
    expect(medianStepInterval(burst, 50)).toBeNull();
    const live = Array.from({ length: 8 }, (_, i) => ({ at: T0 + i * 180 * SEC, steps: 1 }));
    expect(medianStepInterval(live, 50)).toBe(180 * SEC);
    expect(medianStepInterval(live.slice(0, 5), 50)).toBeNull(); // 4 intervals
    // two steps in one read 40 s after the one before: 20 s a step; one slow read does not move the median
    const mixed = [0, 40, 80, 120, 160, 200, 2000].map((s) => ({ at: T0 + s * SEC, steps: 2 }));
    expect(medianStepInterval(mixed, 50)).toBe(20 * SEC);
    expect(MIN_GAP_MS).toBe(10 * SEC);
  });

  it('a run with 20 s steps that hangs is caught at the 10-minute floor', () => {
    const t = paced(new Trace({ book: presetOnly('run_stalled') }), 60, 20 * SEC);
    expect(watch(t, 'run_stalled', 30 * MIN)).toBe(10 * MIN + 10 * SEC);
  });

  it('with a lower floor, 20 s steps are caught after 5 × 20 s', () => {
    const t = paced(new Trace({ book: preset('run_stalled', { after: '1m' }) }), 60, 20 * SEC);
    expect(watch(t, 'run_stalled', 30 * MIN)).toBe(110 * SEC);
    expect(t.alert('run_stalled').summary).toBe(
      `no new record for 1m (last at step 60, 03:20:00 UTC, a step every ~20s): crashed or hung?`,
    );
  });

  it('a run with 3-minute steps is not paged at 10 or 14 minutes, and is at 15', () => {
    const t = paced(new Trace({ book: presetOnly('run_stalled') }), 30, 3 * MIN);
    expect(watch(t, 'run_stalled', 60 * MIN)).toBe(15 * MIN + 10 * SEC);
    expect(JSON.parse(t.alert('run_stalled').details)).toMatchObject({ limitMs: 15 * MIN, stepIntervalMs: 3 * MIN });
  });

  it('a 20-minute evaluation of a 3-minute-step run that prints progress is not a hang', () => {
    const t = paced(new Trace({ book: presetOnly('run_stalled') }), 30, 3 * MIN);
    for (let i = 0; i < 20; i++) {
      t.advance(MIN).lines(1); // eval progress bar
      t.tick();
    }
    paced(t, 10, 3 * MIN);
    expect(t.alerts()).toEqual([]);
  });

  it('a pace learned while live is not thrown off by a catch-up burst after a restart of rlwatch', () => {
    const t = paced(new Trace({ book: presetOnly('run_stalled') }), 30, 3 * MIN);
    t.restart();
    t.advance(3 * MIN).commit(times(200, { reward: 0.3 })); // read at once by the new process
    t.engine.evaluate(t.run.id);
    expect(watch(t, 'run_stalled', 60 * MIN)).toBe(15 * MIN + 10 * SEC);
  });
});

describe('stuck at start (preset run_stuck_at_start: lines but no step for 30m)', () => {
  it('fires when a run printed lines but logged no step for more than 30 minutes; resolves at its first step', () => {
    const t = new Trace({ book: presetOnly('run_stuck_at_start') });
    t.lines(40);
    t.advance(10 * MIN)
      .lines(3)
      .tick();
    t.advance(20 * MIN).tick();
    expect(t.alerts()).toEqual([]); // 30m is not more than 30m
    t.advance(MIN).tick();
    expect(t.alert('run_stuck_at_start')).toMatchObject({
      state: 'firing',
      metric: 'activity',
      summary: 'no step 31m after its first lines (03:00:00 UTC): stuck at start?',
    });
    t.feed([{ reward: 0.1 }]);
    t.tick();
    expect(t.alert('run_stuck_at_start')).toMatchObject({ state: 'resolved', resolved_step: 1 });
    expect(t.said()).toEqual([['firing run_stuck_at_start@0'], ['resolved run_stuck_at_start@1']]);
  });

  it('a run that logs steps, and one whose lines were only there at start-up, are never stuck', () => {
    const t = new Trace({ book: presetOnly('run_stuck_at_start') });
    t.lines(5).feed([{ reward: 0.1 }]);
    t.advance(2 * 3_600_000).tick();
    expect(t.alerts()).toEqual([]);
    const old = new Trace({ book: presetOnly('run_stuck_at_start'), run: 'old' });
    old.restart(() => old.lines(5));
    old.advance(2 * 3_600_000).tick();
    expect(old.alerts()).toEqual([]);
  });
});
