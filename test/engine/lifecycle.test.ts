import { describe, expect, it } from 'vitest';
import { MIN, T0, Trace, presetOnly, series } from './trace.ts';

/** mode_collapse: frac_zero_std > 0.8 for 3, back below 0.5 for 3. One record a minute. */
function collapse(values: number[]): Trace {
  const t = new Trace({ book: presetOnly('mode_collapse') });
  for (const v of values) t.feed(series('frac_zero_std', [v])).advance(MIN);
  return t;
}

const eventsOf = (t: Trace, id: number) =>
  t.store.alerts
    .events(id)
    .map((e) => ({ state: e.state, step: e.step, at: e.at, summary: JSON.parse(e.details).summary as string }));

describe('alert lifecycle', () => {
  it('pending → firing → resolved, each transition with its step and time', () => {
    const t = collapse([0.9, 0.9, 1.0, 0.7, 0.4, 0.4, 0.4]);
    const a = t.alert('mode_collapse');
    expect(a).toMatchObject({
      state: 'resolved',
      metric: 'frac_zero_std',
      severity: 'critical',
      started_step: 1,
      started_at: T0,
      fired_step: 3,
      fired_at: T0 + 2 * MIN,
      resolved_step: 7,
      resolved_at: T0 + 6 * MIN,
      summary: 'frac_zero_std 1 > 0.8 for 3 steps',
    });
    expect(eventsOf(t, a.id)).toEqual([
      { state: 'pending', step: 1, at: T0, summary: 'frac_zero_std 0.9 > 0.8 for 1 step' },
      { state: 'firing', step: 3, at: T0 + 2 * MIN, summary: 'frac_zero_std 1 > 0.8 for 3 steps' },
      { state: 'resolved', step: 7, at: T0 + 6 * MIN, summary: 'frac_zero_std 0.4: back past 0.5 for 3 steps' },
    ]);
  });

  it('a pending alert that clears before firing leaves no alert, no event and no notification', () => {
    const t = collapse([0.9, 0.9, 0.3]);
    expect(t.alerts()).toEqual([]);
    expect(t.store.db.prepare('SELECT count(*) FROM alert_events').pluck().get()).toBe(0);
    expect(t.outbox()).toEqual([]);
  });

  it('a pending alert cleared by a value between recover and the threshold is dropped too', () => {
    const t = collapse([0.9, 0.9, 0.7]);
    expect(t.alerts()).toEqual([]);
  });

  it('keeps one open incident per key while the condition holds', () => {
    const t = collapse([0.9, 0.9, 0.9, 0.95, 1.0, 1.0]);
    expect(t.alerts()).toHaveLength(1);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', fired_step: 3 });
    expect(eventsOf(t, t.alert('mode_collapse').id).map((e) => e.state)).toEqual(['pending', 'firing']);
  });

  it('a relapse after resolution is a new incident with its own steps', () => {
    const t = collapse([0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9]);
    expect(t.alerts()).toMatchObject([
      { state: 'resolved', started_step: 1, fired_step: 3, resolved_step: 6 },
      { state: 'firing', started_step: 7, fired_step: 9, resolved_step: null },
    ]);
    const [first, second] = t.alerts();
    expect(second!.id).not.toBe(first!.id);
    expect(eventsOf(t, second!.id).map((e) => `${e.state}@${e.step}`)).toEqual(['pending@7', 'firing@9']);
  });

  it('an alert with for: 1 is created firing, with no pending event', () => {
    const t = new Trace({ book: presetOnly('grad_explosion') }).feed(series('grad_norm', [15.786]));
    const a = t.alert('grad_explosion');
    expect(a).toMatchObject({ state: 'firing', started_step: 1, fired_step: 1 });
    expect(eventsOf(t, a.id).map((e) => `${e.state}@${e.step}`)).toEqual(['firing@1']);
  });

  it('keys alerts by run: the same rule on two runs gives two incidents', () => {
    const a = new Trace({ book: presetOnly('grad_explosion') });
    const runB = a.store.runs.ensure('r2', '/x/r2');
    const fileB = a.store.files.add(runB.id, '/x/r2/learning.log', 'learningLog');
    a.feed(series('grad_norm', [15]));
    a.store.commit(
      {
        runId: runB.id,
        fileId: fileB.id,
        metrics: [{ step: 1, values: new Map([['grad_norm', 20]]) }],
        examples: [],
        skips: new Map(),
        progress: { dev: 1, ino: 2, offset: 0, size: 0, mtimeMs: a.now, seq: 0, lines: 1, records: 1 },
      },
      2,
    );
    a.engine.evaluate(runB.id);
    expect(
      a.store.alerts
        .list({ all: true })
        .map((r) => `${r.run_id} ${r.rule} ${r.state}`)
        .sort(),
    ).toEqual([`${a.run.id} grad_explosion firing`, `${runB.id} grad_explosion firing`]);
  });
});
