/**
 * One page per cause (Alertmanager's inhibition): one NaN step in several metrics is one alert; a firing
 * truncation_no_signal holds back its symptoms (truncation, mode_collapse, zero_signal_too_hard) on the same run,
 * which are recorded and announced only if still firing once it resolves.
 */
import { describe, expect, it } from 'vitest';
import { RuleBook } from '../../src/engine/rules.ts';
import { Trace, presetOnly, times } from './trace.ts';

describe('non_finite: one incident per cause', () => {
  const calm = { loss: 0.03, grad_norm: 0.5, reward: 0.4 };
  const nan = { loss: NaN, grad_norm: NaN, reward: NaN };

  it('a NaN loss, grad_norm and reward at one step are one alert, naming each with its last finite value', () => {
    const rows = [...times(3, calm), nan, ...times(5, calm)];
    const live = new Trace({ book: presetOnly('non_finite') }).feed(rows);
    const batch = new Trace({ book: presetOnly('non_finite') }).batch(rows);
    for (const t of [live, batch]) {
      expect(t.alerts().map((a) => `${a.rule} ${a.metric} ${a.state} ${a.fired_step}..${a.resolved_step}`)).toEqual([
        'non_finite loss resolved 4..9',
      ]);
      expect(t.alert('non_finite').summary).toBe(
        'loss is nan at step 4 (last finite 0.03 at step 3); grad_norm is nan at step 4 (last finite 0.5 at step 3); ' +
          'reward is nan at step 4 (last finite 0.4 at step 3)',
      );
    }
    expect(live.said()).toEqual([['firing non_finite@4'], ['resolved non_finite@9']]);
  });

  it('a metric that goes NaN while the incident fires is the same incident; a NaN after it resolved is a new one', () => {
    const t = new Trace({ book: presetOnly('non_finite') }).feed([
      ...times(3, calm),
      { ...calm, loss: NaN },
      { ...calm, grad_norm: Infinity }, // step 5: still the first incident
      ...times(5, calm), // 6-10: resolved at 10
      { ...calm, reward: NaN }, // 11: a new incident
    ]);
    expect(
      t
        .alerts()
        .map((a) => `${a.metric} ${a.state} ${a.fired_step}..${a.resolved_step}`)
        .sort(),
    ).toEqual(['loss resolved 4..10', 'reward firing 11..null']);
  });
});

describe('truncation_no_signal inhibits its symptoms', () => {
  const book = () => presetOnly('truncation', 'truncation_no_signal', 'mode_collapse', 'zero_signal_too_hard');
  // every completion truncated, every group agreeing on a reward of 0 (a length runaway)
  const runaway = { clipped_ratio: 0.95, frac_zero_std: 1, reward: 0 };

  it('one page: the symptoms firing at the same records are recorded, not announced', () => {
    const t = new Trace({ book: book() }).feed(times(10, runaway));
    expect(t.states().sort()).toEqual([
      'mode_collapse firing',
      'truncation firing',
      'truncation_no_signal firing',
      'zero_signal_too_hard firing',
    ]);
    expect(t.said()).toEqual([['firing truncation_no_signal@3']]);
  });

  it('once the cause resolves, a symptom still firing is announced', () => {
    const t = new Trace({ book: book() }).feed(times(10, runaway));
    // the completions fit again (clip ratio 0.02) but every group still agrees: mode_collapse on its own
    t.feed(times(5, { clipped_ratio: 0.02, frac_zero_std: 1, reward: 0 }));
    expect(t.alert('truncation_no_signal').state).toBe('resolved');
    // announced with the cause's resolution: mode_collapse, and truncation, firing until its 5 records under 0.05
    expect(t.said().map((row) => row.sort())).toEqual([
      ['firing truncation_no_signal@3'],
      [
        'firing mode_collapse@3',
        'firing truncation@3',
        'firing zero_signal_too_hard@5',
        'resolved truncation_no_signal@13',
      ],
      ['resolved truncation@15'],
    ]);
  });

  it('(control: without the cause, the symptoms page as before)', () => {
    const t = new Trace({ book: book() }).feed(times(10, { clipped_ratio: 0.5, frac_zero_std: 1, reward: 0 }));
    expect(t.said().flat().sort()).toEqual([
      'firing mode_collapse@3',
      'firing truncation@3',
      'firing zero_signal_too_hard@5',
    ]);
  });
});

describe('the quiet period: a condition that clears and returns within it is the same incident', () => {
  const book = () => presetOnly('ppo_kl_out_of_bounds');
  const high = { ppo_kl: 0.2 };
  const low = { ppo_kl: 0.01 };

  it('ppo_kl that comes and goes every 10 records is one incident, not a page each time', () => {
    // 2 high (fires: for 2), 10 low (recovered after 3; 8 more quiet records, under the 20), 2 high, ...
    const rows = Array.from({ length: 5 }, () => [...times(2, high), ...times(10, low)]).flat();
    const t = new Trace({ book: book() }).feed(rows);
    expect(t.alerts().map((a) => `${a.state} ${a.fired_step}`)).toEqual(['firing 2']);
    expect(t.said()).toEqual([['firing ppo_kl_out_of_bounds@2']]);
    // then it stays away: the last high records are 49-50; recovered at the 3rd low one (53), which is the first
    // of the 20 recovered records in a row it takes to resolve: 53 + 19
    t.feed(times(22, low));
    expect(t.alert('ppo_kl_out_of_bounds')).toMatchObject({ state: 'resolved', resolved_step: 72 });
  });

  it('(control: with no quiet period, each return is a new incident)', () => {
    const noQuiet = RuleBook.build(book().all(), [{ id: 'ppo_kl_out_of_bounds', quietFor: 1 }]);
    const rows = Array.from({ length: 5 }, () => [...times(2, high), ...times(10, low)]).flat();
    expect(new Trace({ book: noQuiet }).feed(rows).alerts()).toHaveLength(5);
  });
});
