/**
 * A threshold rule that escalates: mode_collapse's early warning (frac_zero_std > 0.5 for 5, with the reward below
 * 0.9) and its page (> 0.8 for 3) are one incident, whose severity rises and which is announced again at the step
 * it rose.
 */
import { describe, expect, it } from 'vitest';
import { MIN, Trace, type Values, presetOnly, times } from './trace.ts';

/** 20 records at 0.1 (the learning period), then `rising` records at 0.6, then `collapsed` at 0.9: reward 0.4. */
function collapse(rising: number, collapsed: number, after: Values[] = []): Trace {
  const t = new Trace({ book: presetOnly('mode_collapse') });
  const rows = [
    ...times(20, { frac_zero_std: 0.1, reward: 0.4 }),
    ...times(rising, { frac_zero_std: 0.6, reward: 0.4 }),
    ...times(collapsed, { frac_zero_std: 0.9, reward: 0.4 }),
    ...after.map((r) => ({ ...r, reward: 0.4 })),
  ];
  for (const r of rows) t.feed([r]).advance(MIN);
  return t;
}

describe('an escalating threshold rule', () => {
  it('warns at 0.5, then pages at 0.8 in the same incident, announced again where it rose', () => {
    // warning: records 21-25 past 0.5 (fires at 25); critical: records 31-33 past 0.8 (rises at 33)
    const t = collapse(10, 5);
    const all = t.alerts();
    expect(all).toHaveLength(1);
    const a = all[0]!;
    expect(a).toMatchObject({ rule: 'mode_collapse', state: 'firing', severity: 'critical', fired_step: 25 });
    expect(a.summary).toBe('frac_zero_std 0.9 > 0.8 for 3 steps; escalated from warning, firing since step 25');
    expect(JSON.parse(a.details).escalated).toEqual({ from: 'warning', step: 33, firedStep: 25 });
    const events = t.store.alerts.events(a.id).map((e) => `${e.state}@${e.step}`);
    expect(events).toEqual(['pending@21', 'firing@25', 'firing@33']);
    // two announcements of the one incident: the warning, then the page at the step it rose
    const items = t.outbox().flatMap((r) => r.notification.items);
    expect(items.map((i) => `${i.kind} ${i.severity} ${i.alertId}@${i.step}`)).toEqual([
      `firing warning ${a.id}@25`,
      `firing critical ${a.id}@33`,
    ]);
  });

  it('pages at once on a run that collapses with no warning first, and from the first records', () => {
    // no learning period for the critical line: a run that starts collapsed is paged at its third record
    const t = new Trace({ book: presetOnly('mode_collapse') }).feed(times(3, { frac_zero_std: 0.95, reward: 0.4 }));
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', severity: 'critical', fired_step: 3 });
    expect(t.outbox().flatMap((r) => r.notification.items.map((i) => `${i.kind} ${i.severity}`))).toEqual([
      'firing critical',
    ]);
  });

  it('stays critical while it hovers between the lines, and resolves below 0.5 for 3', () => {
    const t = collapse(10, 5, [...times(6, { frac_zero_std: 0.7 }), ...times(3, { frac_zero_std: 0.3 })]);
    const a = t.alert('mode_collapse');
    expect(a).toMatchObject({ state: 'resolved', severity: 'critical', resolved_step: 44 });
    const items = t.outbox().flatMap((r) => r.notification.items);
    expect(items.map((i) => `${i.kind} ${i.severity}@${i.step}`)).toEqual([
      'firing warning@25',
      'firing critical@33',
      'resolved critical@44',
    ]);
  });

  it('does not page on the early warning alone when the reward says the prompts are solved', () => {
    // reward 0.95: the groups agree because every answer is right (zero_signal_too_easy's case), below 0.8
    const t = new Trace({ book: presetOnly('mode_collapse') }).feed([
      ...times(20, { frac_zero_std: 0.1, reward: 0.5 }),
      ...times(20, { frac_zero_std: 0.7, reward: 0.95 }),
    ]);
    expect(t.alerts()).toEqual([]);
  });
});
