/**
 * Milestones and stop rules in the reward's own scale: the numbers of a GRPO training analysis are written for a reward in [0, 1]; on
 * another scale they are read as fractions of the run's range, a miss of the preset's assumption is at most a
 * warning (critical only once the config sets the target), and a run whose prompts are all solved is no stop.
 * Series drawn from a seeded PRNG; the lines the test expects are computed here from the series.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { Trace } from './trace.ts';

type Row = Record<string, number>;

/** `n` records to epoch `n / perEpoch`, reward = course(t) + N(0, sd) (t = epoch) */
function run(seed: number, n: number, course: (epoch: number) => number, sd: number, extra: Row = {}): Row[] {
  const rand = mulberry32(seed);
  const g = () => Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
  return Array.from({ length: n }, (_, i) => {
    const epoch = (i + 1) / 100;
    return { epoch, reward: course(epoch) + sd * g(), ...extra };
  });
}

const milestones = (t: Trace) =>
  t.alerts().filter((a) => a.rule.startsWith('milestone_') || a.rule.startsWith('stop_'));
const named = (t: Trace) => milestones(t).map((a) => `${a.rule} ${a.severity}`);

/** what the rule sees at epoch 1.0 (record 100): the mean of the last 10 and the run's range up to there */
function atEpoch1(rows: readonly Row[]): { mean: number; lo: number; hi: number } {
  const upTo = rows.slice(0, 100).map((r) => r.reward!);
  const last = upTo.slice(-10);
  return { mean: last.reduce((s, v) => s + v, 0) / 10, lo: Math.min(...upTo), hi: Math.max(...upTo) };
}

describe('milestones on a reward in [-1, 0]', () => {
  const rising = run(1, 120, (e) => -0.8 + 0.6 * Math.min(1, e), 0.05);

  it('a healthy climb from -0.8 to -0.2 misses no milestone and gets no stop (0.15 of its range, not 0.15)', () => {
    const { mean, lo, hi } = atEpoch1(rising);
    expect(mean).toBeLessThan(0.15); // the analysis' number as written: a critical stop on a healthy run
    expect(mean).toBeGreaterThan(lo + 0.35 * (hi - lo)); // the highest of the fractions, milestone_reward_epoch_1
    const t = new Trace().feed(rising);
    expect(named(t)).toEqual([]);
    expect(t.alerts().filter((a) => a.severity === 'critical')).toEqual([]);
  });

  it('a run that climbs and falls back misses the stop line drawn in its range, as info (the preset assumes it)', () => {
    const fell = run(2, 120, (e) => (e < 0.7 ? -0.8 + 0.8 * e : Math.max(-0.9, -0.24 - 4.4 * (e - 0.7))), 0.03);
    const { mean, lo, hi } = atEpoch1(fell);
    const line = lo + 0.15 * (hi - lo);
    expect(mean).toBeLessThan(line);
    // the range is carried from record to record (live) or read in one batch: the same line
    for (const t of [new Trace().feed(fell), new Trace().batch(fell)]) {
      expect(t.alert('stop_reward_epoch_1')).toMatchObject({ severity: 'info', fired_step: 100 });
      expect(JSON.parse(t.alert('stop_reward_epoch_1').details)).toMatchObject({ target: expect.closeTo(line, 9) });
    }
  });

  it("once the config sets the stop rule's value, it is the user's target in the reward's units, and critical", () => {
    const book = RuleBook.build(GRPO_PRESET, [{ id: 'stop_reward_epoch_1', value: -0.5 }]);
    const t = new Trace({ book }).feed(rising);
    // the climb's mean at epoch 1 is about -0.2, over -0.5: met
    expect(named(t)).toEqual([]);
    const stuck = run(3, 120, () => -0.7, 0.05);
    const s = new Trace({ book }).feed(stuck);
    expect(s.alert('stop_reward_epoch_1')).toMatchObject({ severity: 'critical', fired_step: 100 });
    expect(s.alert('stop_reward_epoch_1').summary).toContain('expected >= -0.5 by epoch 1');
  });
});

describe('stop_frac_zero_std on a run whose prompts are too easy', () => {
  // converged: reward 0.93, 90% of the groups all correct (zero_signal_too_easy explains the zero std)
  const converged = run(4, 120, () => 0.93, 0.01, { frac_zero_std: 0.9, reward_std: 0.05 });

  it('is info naming zero_signal_too_easy, whether read record by record or in one batch', () => {
    const live = new Trace().feed(converged);
    const once = new Trace().batch(converged);
    for (const t of [live, once]) {
      expect(t.alert('zero_signal_too_easy')).toMatchObject({ severity: 'info', fired_step: 5 });
      expect(t.alert('stop_frac_zero_std_epoch_1')).toMatchObject({ severity: 'info', fired_step: 100 });
      expect(t.alert('stop_frac_zero_std_epoch_1').summary).toMatch(/; zero_signal_too_easy info since step 5$/);
    }
    expect(named(once)).toEqual(named(live));
  });

  it('(control: the same frac_zero_std at a reward of 0.5 is not too easy: the miss names mode_collapse instead)', () => {
    const t = new Trace().feed(converged.map((r) => ({ ...r, reward: r.reward! - 0.43 })));
    expect(t.alerts().filter((a) => a.rule === 'zero_signal_too_easy')).toEqual([]);
    expect(t.alert('stop_frac_zero_std_epoch_1')).toMatchObject({ severity: 'info', fired_step: 100 });
    expect(t.alert('stop_frac_zero_std_epoch_1').summary).toMatch(/; mode_collapse critical since step 3$/);
  });
});
