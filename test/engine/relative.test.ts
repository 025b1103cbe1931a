import { describe, expect, it } from 'vitest';
import { RuleError } from '../../src/engine/rules.ts';
import { Trace, rulesOf, series } from './trace.ts';

const relative = (extra: Record<string, unknown>) => rulesOf({ id: 'rel', kind: 'relative', metric: 'x', ...extra });

describe('relative: a metric against its own baseline', () => {
  const early = relative({
    baseline: 'early',
    warmup: 2,
    baselineWindow: 4,
    op: '<',
    factor: 0.25,
    for: 2,
    recover: 0.5,
    recoverFor: 2,
  });

  it('early: learns the median of the records after the warmup, then fires below factor × it for `for` records', () => {
    // steps 1-2 warmup (9, 9 are ignored); 3-6 learn: median(0.4, 0.5, 0.6, 0.2) = 0.45; bound 0.1125
    const t = new Trace({ book: early }).feed(series('x', [9, 9, 0.4, 0.5, 0.6, 0.2, 0.2, 0.1]));
    expect(t.alert('rel')).toMatchObject({ state: 'pending', started_step: 8 });
    t.feed(series('x', [0.1]));
    expect(t.alert('rel')).toMatchObject({
      state: 'firing',
      fired_step: 9,
      summary: 'x 0.1 < 0.25× its early median 0.45 (0.2222×) for 2 steps',
    });
  });

  it('hysteresis: firing until back past recover × baseline for recoverFor records', () => {
    const t = new Trace({ book: early }).feed(series('x', [9, 9, 0.4, 0.5, 0.6, 0.2, 0.1, 0.1]));
    // 0.2 = 0.44× (under 0.5×: not recovered), then 0.3 = 0.67× twice
    t.feed(series('x', [0.2, 0.3]));
    expect(t.alert('rel').state).toBe('firing');
    t.feed(series('x', [0.3]));
    expect(t.alert('rel')).toMatchObject({ state: 'resolved', fired_step: 8, resolved_step: 11 });
  });

  it('learning: nothing is judged before the baseline exists, however low the values', () => {
    const t = new Trace({ book: early }).feed(series('x', [0.001, 0.001, 0.001, 0.001, 0.001, 0.001]));
    expect(t.alerts()).toEqual([]);
  });

  it('max: completion length down 50% from its running max', () => {
    const t = new Trace({ book: relative({ baseline: 'max', op: '<', factor: 0.5 }) }).feed(
      series('x', [100, 200, 300, 160]),
    );
    expect(t.alerts()).toEqual([]);
    t.feed(series('x', [140]));
    expect(t.alert('rel')).toMatchObject({
      state: 'firing',
      fired_step: 5,
      summary: 'x 140 < 0.5× its running max 300 (0.4667×) for 1 step',
    });
  });

  it('rolling with smoothing: step time over 3x the median of the records before', () => {
    const book = relative({ baseline: 'rolling', baselineWindow: 5, smooth: 2, op: '>', factor: 3, for: 1 });
    // smooth 2: the value is the median of the last two records, so one slow record alone is not enough
    const t = new Trace({ book }).feed(series('x', [1, 1, 1, 1, 1, 1, 1, 1]));
    t.feed(series('x', [3.5]));
    expect(t.alerts()).toEqual([]); // median(1, 3.5) = 2.25
    t.feed(series('x', [4]));
    expect(t.alert('rel')).toMatchObject({
      fired_step: 10,
      summary: 'x 3.75 > 3× its recent median 1 (3.75×) for 1 step',
    });
  });

  it('a baseline of zero or below judges nothing', () => {
    const t = new Trace({ book: relative({ baseline: 'early', baselineWindow: 3, op: '>', factor: 3 }) });
    t.feed(series('x', [0, 0, 0, 5, 5]));
    expect(t.alerts()).toEqual([]);
  });

  it('minDelta: a tiny baseline does not fire on a tiny absolute change', () => {
    const book = relative({ baseline: 'early', baselineWindow: 3, op: '>', factor: 10, minDelta: 0.05 });
    expect(new Trace({ book }).feed(series('x', [0.001, 0.001, 0.001, 0.02])).alerts()).toEqual([]);
    expect(new Trace({ book }).feed(series('x', [0.001, 0.001, 0.001, 0.2])).alert('rel')).toMatchObject({
      fired_step: 4,
    });
  });

  it('record by record or in one batch: the same incidents', () => {
    const trace = series('x', [9, 9, 0.4, 0.5, 0.6, 0.2, 0.1, 0.1, 0.2, 0.3, 0.3, 0.1, 0.1]);
    const pick = (t: Trace) => t.alerts().map((a) => [a.state, a.fired_step, a.resolved_step]);
    const live = new Trace({ book: early }).feed(trace);
    expect(pick(live)).toEqual([
      ['resolved', 8, 11],
      ['firing', 13, null],
    ]);
    expect(pick(new Trace({ book: early }).batch(trace))).toEqual(pick(live));
    expect(pick(new Trace({ book: early }).batch(trace.slice(0, 5)).batch(trace.slice(5)))).toEqual(pick(live));
  });

  it('a rule without its factor is refused, naming the field', () => {
    expect(() => rulesOf({ id: 'r', kind: 'relative', metric: 'x', op: '<' })).toThrow(RuleError);
    expect(() => rulesOf({ id: 'r', kind: 'relative', metric: 'x', op: '<' })).toThrow(/^alerts\.rules\[0\]\.factor: /);
  });
});
