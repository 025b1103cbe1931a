import { describe, expect, it } from 'vitest';
import { Trace, rulesOf, series } from './trace.ts';

const anomaly = (extra: Record<string, unknown> = {}) =>
  rulesOf({ id: 'spike', kind: 'anomaly', metric: 'x', window: 10, warmup: 5, z: 6, recoverFor: 3, ...extra });
const calm = [1, 1.1, 0.9, 1, 1.05, 0.95, 1];

describe('anomaly: robust z-score over a rolling window', () => {
  it('fires on a spike: median 1, MAD 0.05 (sd 0.074), 10 is z +121', () => {
    const t = new Trace({ book: anomaly() }).feed(series('x', [...calm, 10]));
    expect(t.alert('spike')).toMatchObject({
      state: 'firing',
      severity: 'warning',
      fired_step: 8,
      summary: 'x 10: robust z +121.4 against the median 1 of the last 10',
    });
  });

  it('cooldown: a second spike within recoverFor calm records is the same incident; then it resolves', () => {
    const t = new Trace({ book: anomaly() }).feed(series('x', [...calm, 10, 1, 1, 12]));
    expect(t.states()).toEqual(['spike firing']);
    t.feed(series('x', [1, 1]));
    expect(t.alert('spike').state).toBe('firing');
    t.feed(series('x', [1]));
    expect(t.alert('spike')).toMatchObject({ state: 'resolved', fired_step: 8, resolved_step: 14 });
  });

  it('warmup: nothing is judged before `warmup` records', () => {
    expect(new Trace({ book: anomaly() }).feed(series('x', [1, 1.1, 10, 1, 1])).alerts()).toEqual([]);
  });

  it('direction up ignores a dip; direction any catches it', () => {
    expect(new Trace({ book: anomaly() }).feed(series('x', [...calm, -5])).alerts()).toEqual([]);
    expect(
      new Trace({ book: anomaly({ direction: 'any' }) }).feed(series('x', [...calm, -5])).alert('spike'),
    ).toMatchObject({ fired_step: 8 });
  });

  it('a constant series (MAD 0) fires only past minDelta', () => {
    const flat = Array(8).fill(0);
    expect(new Trace({ book: anomaly({ minDelta: 0.1 }) }).feed(series('x', [...flat, 0.05])).alerts()).toEqual([]);
    expect(
      new Trace({ book: anomaly({ minDelta: 0.1 }) }).feed(series('x', [...flat, 0.5])).alert('spike').summary,
    ).toBe('x 0.5: robust z +∞ against the median 0 of the last 10');
  });

  it('record by record or in batches: the same incidents', () => {
    const trace = series('x', [...calm, 10, 1, 1, 12, 1, 1, 1, 1, 9]);
    const pick = (t: Trace) => t.alerts().map((a) => [a.state, a.fired_step, a.resolved_step]);
    const live = new Trace({ book: anomaly() }).feed(trace);
    expect(pick(live)).toEqual([
      ['resolved', 8, 14],
      ['firing', 16, null],
    ]);
    expect(pick(new Trace({ book: anomaly() }).batch(trace.slice(0, 9)).batch(trace.slice(9)))).toEqual(pick(live));
  });
});

describe('anomaly: a series that takes two values', () => {
  it('has MAD 0 when most values sit on the median: the next deviation is the scale, no false spike', () => {
    // 11 × 1 and 10 × 1.05: median 1, MAD 0; the first non-zero deviation 0.05 × 1.4826 = 0.074: 1.05 is
    // z +0.7, 5 is z +54
    const two = Array.from({ length: 21 }, (_, i) => (i % 2 ? 1.05 : 1));
    expect(new Trace({ book: anomaly({ window: 30 }) }).feed(series('x', [...two, 1.05])).alerts()).toEqual([]);
    expect(new Trace({ book: anomaly({ window: 30 }) }).feed(series('x', [...two, 5])).alert('spike')).toMatchObject({
      fired_step: 22,
    });
  });
});
