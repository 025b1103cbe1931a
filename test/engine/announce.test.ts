import { describe, expect, it } from 'vitest';
import { RuleBook } from '../../src/engine/rules.ts';
import { HOUR, MIN, Trace, presetOnly, times } from './trace.ts';

const BAD = { frac_zero_std: 1, entropy: 0.03, grad_norm: 15.786 };
const GOOD = { frac_zero_std: 0.1, entropy: 0.08, grad_norm: 0.05 };
/** mode_collapse (critical, for 3), entropy_collapse (warning, for 3, judged from the first record: the
 * preset's learns over 5), grad_explosion (critical, for 1); without their inhibitions (an entropy collapse is a
 * symptom of both: test/engine/onePage.test.ts), as three independent alerts */
const burstBook = RuleBook.build(presetOnly('mode_collapse', 'entropy_collapse', 'grad_explosion').all(), [
  { id: 'entropy_collapse', learn: 0 },
  { id: 'mode_collapse', inhibits: [] },
  { id: 'grad_explosion', inhibits: [] },
]);
const burst = (opts: { run?: string; targets?: string[] } = {}) =>
  new Trace({ book: burstBook, repeatIntervalMs: HOUR, ...opts });
const spike = () => new Trace({ book: presetOnly('grad_explosion'), repeatIntervalMs: HOUR });

describe('announcing alert changes', () => {
  it('a burst of alerts of one run in one evaluation is ONE outbox row with several items', () => {
    const t = burst().batch(times(3, BAD));
    expect(t.said()).toEqual([['firing mode_collapse@3', 'firing entropy_collapse@3', 'firing grad_explosion@1']]);
    const [row] = t.outbox();
    expect(row!.notification.run).toBe('r1');
    expect(row!.notification.items.map((i) => [i.severity, i.metric, i.alertId])).toEqual([
      ['critical', 'frac_zero_std', t.alert('mode_collapse').id],
      ['warning', 'entropy', t.alert('entropy_collapse').id],
      ['critical', 'grad_norm', t.alert('grad_explosion').id],
    ]);
  });

  it('evaluated record by record, each evaluation says only what changed', () => {
    const t = burst().feed(times(4, BAD));
    expect(t.wrote()).toEqual([['firing grad_explosion@1'], ['firing mode_collapse@3', 'firing entropy_collapse@3']]);
    // nothing delivered the first row meanwhile: the second evaluation's items joined it, one message
    expect(t.said()).toEqual([t.wrote().flat()]);
  });

  it('writes one row per target', () => {
    const t = burst({ targets: ['console', 'chat'] }).batch(times(3, BAD));
    expect(t.said('console')).toEqual(t.said('chat'));
    expect(t.said('chat')).toHaveLength(1);
  });

  it('an item carries the recent values of its metric and the epoch at its step', () => {
    const t = spike().feed([
      { grad_norm: 1, epoch: 0.1 },
      { grad_norm: 1, epoch: 0.2 },
      { grad_norm: 15.786, epoch: 0.3 },
    ]);
    expect(t.outbox()[0]!.notification.items[0]).toMatchObject({
      kind: 'firing',
      step: 3,
      epoch: 0.3,
      recent: [1, 1, 15.786],
      // the line is 10× the median of the records before (1), the floor of 10 too
      summary: 'grad_norm 15.79 > 10× its recent median 1 (15.79×) for 1 step',
      examples: null,
    });
  });

  it('a resolution follows an announced firing, with the resolution summary', () => {
    const t = spike().feed([...times(3, { grad_norm: 0.024 }), { grad_norm: 15.786 }]);
    t.feed(times(5, { grad_norm: 0.024 }));
    expect(t.said()).toEqual([['firing grad_explosion@4'], ['resolved grad_explosion@9']]);
    // the line to fire at was the floor (10× the median 0.024 is under it); calm is back under 3× the median
    expect(t.outbox()[1]!.notification.items[0]!.summary).toBe('grad_norm 0.024: back to 1× its recent median');
  });

  it('live, an incident that fires and resolves within one batch is announced as both', () => {
    const t = spike().batch([{ grad_norm: 15.786 }, ...times(5, { grad_norm: 0.024 })]);
    expect(t.said()).toEqual([['firing grad_explosion@1', 'resolved grad_explosion@6']]);
  });

  it('a backfill records such an incident but never announces it', () => {
    const t = spike().batch([{ grad_norm: 15.786 }, ...times(5, { grad_norm: 0.024 })], false);
    t.tick();
    expect(t.alert('grad_explosion').state).toBe('resolved');
    expect(t.said()).toEqual([]);
  });

  it('repeats only after repeatIntervalMs while firing', () => {
    const t = spike().feed([{ grad_norm: 15.786 }]);
    t.advance(59 * MIN).tick();
    t.feed([{ grad_norm: 12 }]); // still firing: no news
    expect(t.said()).toEqual([['firing grad_explosion@1']]);
    t.advance(MIN).tick();
    expect(t.said()).toEqual([['firing grad_explosion@1'], ['repeat grad_explosion@1']]);
    t.advance(HOUR - 1).tick();
    expect(t.said()).toHaveLength(2);
    t.advance(1).tick();
    expect(t.said()).toHaveLength(3);
    expect(t.said()[2]).toEqual(['repeat grad_explosion@1']);
  });

  it('ack stops repeats, but the resolution is still announced', () => {
    const t = spike().feed([{ grad_norm: 15.786 }]);
    const id = t.alert('grad_explosion').id;
    t.advance(10 * MIN);
    t.store.alerts.ack(id, { id: 'ana', name: 'Ana' }, 'looking', t.now);
    expect(t.store.alerts.byId(id)).toMatchObject({ acked_by: 'ana', ack_comment: 'looking', acked_at: t.now });
    t.advance(3 * HOUR).tick();
    expect(t.said()).toEqual([['firing grad_explosion@1']]);
    t.feed(times(5, { grad_norm: 0.1 }));
    expect(t.said()).toEqual([['firing grad_explosion@1'], ['resolved grad_explosion@6']]);
  });

  it('a mute records the alert but announces nothing', () => {
    const t = burst();
    t.store.silences.add({
      run: 'r*',
      rule: null,
      severity: null,
      starts_at: t.now,
      ends_at: t.now + HOUR,
      author: 'bo',
      reason: 'x',
    });
    t.batch(times(3, BAD));
    expect(t.states()).toEqual(['mode_collapse firing', 'entropy_collapse firing', 'grad_explosion firing']);
    expect(t.outbox()).toEqual([]);
    t.advance(30 * MIN).tick();
    expect(t.outbox()).toEqual([]);
  });

  it('mute matchers: rule, severity and run glob each narrow what is held back', () => {
    const mutedBy = (m: { run?: string; rule?: string; severity?: string }) => {
      const t = burst();
      t.store.silences.add({
        run: m.run ?? null,
        rule: m.rule ?? null,
        severity: m.severity ?? null,
        starts_at: t.now,
        ends_at: t.now + HOUR,
        author: 'bo',
        reason: '',
      });
      return t.batch(times(3, BAD)).said().flat();
    };
    expect(mutedBy({ rule: 'grad_explosion' })).toEqual(['firing mode_collapse@3', 'firing entropy_collapse@3']);
    expect(mutedBy({ severity: 'critical' })).toEqual(['firing entropy_collapse@3']);
    expect(mutedBy({ run: 'other-*' })).toHaveLength(3);
    expect(mutedBy({ run: 'r?', severity: 'warning' })).toEqual(['firing mode_collapse@3', 'firing grad_explosion@1']);
  });

  it('a mute holds a critical back when the clock has stepped back behind its creation', () => {
    const t = spike();
    t.store.silences.add({
      run: null,
      rule: null,
      severity: null,
      starts_at: t.now,
      ends_at: t.now + HOUR,
      author: 'bo',
      reason: '',
    });
    t.advance(-HOUR).feed([{ grad_norm: 15.786 }]);
    expect(t.alert('grad_explosion').state).toBe('firing');
    expect(t.outbox()).toEqual([]);
  });

  it('when the mute expires, what is still firing is announced on the next tick', () => {
    const t = burst();
    t.store.silences.add({
      run: 'r*',
      rule: null,
      severity: null,
      starts_at: t.now,
      ends_at: t.now + HOUR,
      author: 'bo',
      reason: 'x',
    });
    t.batch(times(3, BAD));
    t.feed(times(5, { ...BAD, grad_norm: 0.1 })); // grad_explosion resolves while muted
    expect(t.alert('grad_explosion').state).toBe('resolved');
    t.advance(HOUR - 1).tick();
    expect(t.outbox()).toEqual([]);
    t.advance(1).tick();
    expect(t.said()).toEqual([['firing mode_collapse@3', 'firing entropy_collapse@3']]);
  });

  it('unmute (silences.end) announces what is still firing on the next tick', () => {
    const t = burst();
    const s = t.store.silences.add({
      run: 'r*',
      rule: null,
      severity: null,
      starts_at: t.now,
      ends_at: t.now + 24 * HOUR,
      author: 'bo',
      reason: 'x',
    });
    t.batch(times(3, BAD));
    t.advance(5 * MIN);
    t.store.silences.end(s.id, t.now);
    t.tick();
    expect(t.said()).toEqual([['firing mode_collapse@3', 'firing entropy_collapse@3', 'firing grad_explosion@1']]);
  });

  it('a mute holds back repeats of an announced alert, but not its resolution', () => {
    const t = spike().feed([{ grad_norm: 15.786 }]);
    t.store.silences.add({
      run: null,
      rule: 'grad_explosion',
      severity: null,
      starts_at: t.now,
      ends_at: t.now + 24 * HOUR,
      author: 'bo',
      reason: '',
    });
    t.advance(3 * HOUR).tick();
    expect(t.said()).toEqual([['firing grad_explosion@1']]);
    t.feed(times(5, { grad_norm: 0.1 }));
    expect(t.said()).toEqual([['firing grad_explosion@1'], ['resolved grad_explosion@6']]);
  });

  it('backfill (announce = false) announces nothing; the next tick announces only what is still firing', () => {
    const t = burst();
    t.feed([BAD, BAD, BAD, ...times(5, { ...BAD, grad_norm: 0.1 })], false);
    expect(t.states()).toEqual(['mode_collapse firing', 'entropy_collapse firing', 'grad_explosion resolved']);
    expect(t.outbox()).toEqual([]);
    t.tick();
    expect(t.said()).toEqual([['firing mode_collapse@3', 'firing entropy_collapse@3']]);
    t.tick();
    expect(t.said()).toHaveLength(1);
  });

  it('backfill then live: a live evaluation also announces what backfill left firing, once', () => {
    const t = burst();
    t.batch(times(3, BAD), false);
    t.feed([GOOD]);
    expect(t.said()).toEqual([['firing mode_collapse@3', 'firing entropy_collapse@3', 'firing grad_explosion@1']]);
  });

  it('an announce with nothing to say writes nothing', () => {
    const t = burst().feed(times(5, GOOD));
    expect(t.engine.announce(t.run.id)).toBe(0);
    expect(t.tick()).toBe(0);
    expect(t.outbox()).toEqual([]);
  });
});
