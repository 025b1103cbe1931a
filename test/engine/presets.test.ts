import { describe, expect, it } from 'vitest';
import { GRPO_PRESET, RUNAWAY_REWARD_CAP } from '../../src/engine/presets/grpo.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { Trace, learningLogValues, presetOnly, times } from './trace.ts';

// the learning.log metrics guide of an OCaml GRPO trainer ("Interpreting Common Patterns"), verbatim
const HEALTHY = [
  '[Epoch 0.10]  loss=-0.0311  grad=0.028  lr=2.00e-06  reward=0.207±0.006  syntax_rew=0.207±0.012  entropy=0.055  frac_zero_std=0.75',
  '[Epoch 0.20]  loss=-0.0415  grad=0.035  lr=1.95e-06  reward=0.315±0.015  syntax_rew=0.315±0.018  entropy=0.068  frac_zero_std=0.50',
  '[Epoch 0.30]  loss=-0.0520  grad=0.042  lr=1.90e-06  reward=0.428±0.022  syntax_rew=0.428±0.025  entropy=0.074  frac_zero_std=0.25',
].map(learningLogValues);
const COLLAPSE = [
  '[Epoch 0.50]  loss=0.0000  grad=0.000  lr=1.85e-06  reward=0.210±0.000  syntax_rew=0.210±0.000  entropy=0.044  frac_zero_std=1.00',
  '[Epoch 0.51]  loss=0.0000  grad=0.000  lr=1.84e-06  reward=0.210±0.000  syntax_rew=0.210±0.000  entropy=0.044  frac_zero_std=1.00',
].map(learningLogValues);
const RUNAWAY = learningLogValues(
  '[Epoch 0.25]  loss=-0.0311  grad=0.028  lr=1.98e-06  reward=0.050±0.000  syntax_rew=0.050±0.000  entropy=0.055  frac_zero_std=1.00',
);
const SPIKE = [
  '[Epoch 0.35]  loss=0.0947  grad=15.786  lr=1.90e-06  reward=0.207±0.012  entropy=0.103  frac_zero_std=0.75',
  '[Epoch 0.36]  loss=-0.0312  grad=0.024  lr=1.89e-06  reward=0.207±0.006  entropy=0.080  frac_zero_std=0.75',
].map(learningLogValues);

const firing = (t: Trace) =>
  t
    .alerts()
    .filter((a) => a.state === 'firing')
    .map((a) => `${a.rule}@${a.fired_step}`)
    .sort();

describe("GRPO preset on the learning.log guide's patterns", () => {
  it('has the rule ids of the design', () => {
    expect(GRPO_PRESET.map((r) => r.id)).toEqual(
      expect.arrayContaining([
        'mode_collapse',
        'entropy_collapse',
        'grad_explosion',
        'no_learning',
        'runaway_completions',
        'reward_plateau',
        'reward_trend',
        'run_stalled',
        'run_stuck_at_start',
      ]),
    );
  });

  it('healthy training raises nothing', () => {
    const t = new Trace().feed(HEALTHY);
    expect(t.alerts()).toEqual([]);
  });

  it('mode collapse held for 3 records: mode_collapse and no_learning fire, and the frac_zero_std milestone at epoch 0.5', () => {
    const t = new Trace().feed([...HEALTHY, COLLAPSE[0]!, COLLAPSE[1]!, COLLAPSE[1]!]);
    expect(firing(t)).toEqual(['milestone_frac_zero_std_epoch_0.5@4', 'mode_collapse@6', 'no_learning@6']);
    expect(t.alert('mode_collapse')).toMatchObject({
      severity: 'critical',
      metric: 'frac_zero_std',
      started_step: 4,
      summary: 'frac_zero_std 1 > 0.8 for 3 steps',
    });
    expect(t.alert('no_learning')).toMatchObject({
      severity: 'critical',
      metric: 'loss',
      summary: 'loss 0 == 0 and grad_norm 0 == 0 for 3 steps',
    });
  });

  it('frac_zero_std 1.00 for 2 records only is still pending', () => {
    const t = new Trace().feed([...HEALTHY, ...COLLAPSE]);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'pending', started_step: 4 });
  });

  it('entropy_collapse holds off on a run that lives below 0.04 from its first 5 records (verl PPO at ~0.03)', () => {
    const t = new Trace().feed(times(40, { entropy: 0.03 }));
    expect(t.alerts()).toEqual([]);
  });

  it('entropy 0.03 for 3 records fires entropy_collapse; it resolves only once above 0.05 for 3 records', () => {
    const low = { ...HEALTHY[2]!, entropy: 0.03 };
    const t = new Trace().feed([...HEALTHY, low, low, low]);
    expect(firing(t)).toEqual(['entropy_collapse@6']);
    expect(t.alert('entropy_collapse')).toMatchObject({
      severity: 'warning',
      summary: 'entropy 0.03 < 0.04 for 3 steps',
    });
    t.feed(times(3, { ...low, entropy: 0.044 })); // no longer < 0.04, not yet back past 0.05
    expect(t.alert('entropy_collapse').state).toBe('firing');
    t.feed(times(3, { ...low, entropy: 0.06 }));
    expect(t.alert('entropy_collapse')).toMatchObject({ state: 'resolved', resolved_step: 12 });
  });

  it('grad 15.786 fires grad_explosion at once; it resolves after 5 normal records', () => {
    const t = new Trace().feed([...HEALTHY, SPIKE[0]!]);
    expect(firing(t)).toEqual(['grad_explosion@4']);
    expect(t.alert('grad_explosion')).toMatchObject({
      severity: 'critical',
      metric: 'grad_norm',
      // 10× the median of the records before (0.035) is under the floor: the line is the guide's 10
      summary: 'grad_norm 15.79 > 10 (451× its recent median) for 1 step',
    });
    t.feed(times(4, SPIKE[1]!));
    expect(t.alert('grad_explosion').state).toBe('firing');
    t.feed([SPIKE[1]!]);
    expect(t.alert('grad_explosion')).toMatchObject({ state: 'resolved', resolved_step: 9 });
  });

  it('an infinite grad_norm is one page, non_finite, not a second grad_explosion', () => {
    const t = new Trace().feed([...HEALTHY, { grad_norm: Infinity }]);
    expect(firing(t)).toEqual(['non_finite@4']);
  });

  it('no_learning needs loss and grad_norm both 0', () => {
    const t = new Trace().feed(times(5, { loss: 0, grad_norm: 0.3, reward: 0.3 }));
    t.feed(times(5, { loss: 0.01, grad_norm: 0, reward: 0.3 }));
    expect(t.alerts()).toEqual([]);
    t.feed(times(3, { loss: 0, grad_norm: 0, reward: 0.3 }));
    expect(firing(t)).toEqual(['no_learning@13']);
  });

  it('reward 0.050±0.000 held for 3 records fires runaway_completions on reward', () => {
    expect(RUNAWAY.reward).toBe(RUNAWAY_REWARD_CAP);
    const t = new Trace().feed([RUNAWAY, RUNAWAY, RUNAWAY]);
    expect(t.alert('runaway_completions')).toMatchObject({
      state: 'firing',
      metric: 'reward',
      severity: 'critical',
      fired_step: 3,
      summary: 'reward 0.05 == 0.05 and reward_std 0 == 0 for 3 steps',
    });
  });

  it('a low reward with spread is not runaway', () => {
    const t = new Trace().feed(times(3, { reward: 0.05, reward_std: 0.03 }));
    expect(t.alerts()).toEqual([]);
  });

  it('a reward of 0 with no spread is every answer wrong, not a runaway', () => {
    const t = new Trace().feed(times(3, { reward: 0, reward_std: 0 }));
    expect(t.alerts().map((a) => a.rule)).not.toContain('runaway_completions');
  });

  it('clipped_ratio 0.8 held for 3 records is truncation (a warning), not a critical runaway', () => {
    // a public verl PPO log (Qwen3-0.6B under Slurm) starts a healthy run at clip_ratio 0.79: no critical for that
    const t = new Trace().feed(times(3, { reward: 0.4, reward_std: 0.1, clipped_ratio: 0.8 }));
    expect(t.alerts().map((a) => `${a.rule} ${a.metric} ${a.severity} ${a.state} ${a.fired_step}`)).toEqual([
      'truncation clipped_ratio warning firing 3',
    ]);
  });

  it('the runaway signature and a high clip ratio are two incidents of two rules', () => {
    const t = new Trace().feed(times(3, { reward: 0.05, reward_std: 0, clipped_ratio: 0.9 }));
    expect(t.alerts().map((a) => `${a.rule} ${a.metric}`)).toEqual([
      'runaway_completions reward',
      'truncation clipped_ratio',
    ]);
  });

  it('reward ~0.2 flat for 64 records fires reward_plateau at the 64th (judged from the 60th, held 5)', () => {
    const flat = Array.from({ length: 64 }, (_, i) => ({ reward: i % 2 === 0 ? 0.199 : 0.201 }));
    const t = new Trace().feed(flat.slice(0, 63));
    expect(t.alerts().filter((a) => a.state === 'firing')).toEqual([]);
    t.feed(flat.slice(63));
    expect(t.alert('reward_plateau')).toMatchObject({ state: 'firing', severity: 'warning', fired_step: 64 });
    // a quiet reward: its pace read over the last 45 records
    expect(t.alert('reward_plateau').summary).toMatch(
      /^reward flat at 0\.2 \([+-]?0\.\d% over the last 45 steps\), below 0\.3: not there within 300 steps at that pace$/,
    );
  });

  it('a noisy climb at ~0.2 is no plateau: flat means flat beyond the noise of the two windows', () => {
    // +0.0015 a record (~+8% over a window) with a scatter of ±0.06: window means that differ by < 5% now and then
    let x = 5;
    const scatter = (): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return 0.06 * ((2 * x) / 2 ** 31 - 1);
    };
    const climb = Array.from({ length: 80 }, (_, i) => ({ reward: 0.15 + 0.0015 * i + scatter() }));
    expect(
      new Trace()
        .feed(climb)
        .alerts()
        .filter((a) => a.rule === 'reward_plateau'),
    ).toEqual([]);
  });

  it('a climbing reward that falls by 20% fires a reward_trend warning within 20 records: the break from its course', () => {
    // 120 records climbing 0.15 -> 0.45 with a scatter of ±0.08, then 40 at 80% of where it had got to
    let x = 11;
    const scatter = (): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return 0.08 * ((2 * x) / 2 ** 31 - 1);
    };
    const level = (i: number): number => (i < 120 ? 0.15 + 0.0025 * i : 0.8 * (0.15 + 0.0025 * 119));
    const rows = Array.from({ length: 160 }, (_, i) => ({ reward: level(i) + scatter() }));
    const t = new Trace({ book: presetOnly('reward_trend') }).feed(rows);
    const fall = t.alerts().find((a) => a.rule === 'reward_trend' && a.severity === 'warning');
    expect(fall?.fired_step).toBeGreaterThan(120);
    expect(fall?.fired_step).toBeLessThanOrEqual(140);
    expect(fall?.summary).toMatch(
      /^reward ↘ -\d+\.\d% \(0\.\d+ → 0\.\d+ over \d+-step windows; \d+\.\dσ off its course of 100 steps\)$/,
    );
    // the two 15-record windows alone miss it: the climb before the fall cancels most of it
    const windowsOnly = RuleBook.build(
      GRPO_PRESET.filter((r) => r.id === 'reward_trend'),
      [{ id: 'reward_trend', breakSigmas: 0 }],
    );
    const t2 = new Trace({ book: windowsOnly }).feed(rows);
    expect(t2.alerts().filter((a) => a.severity === 'warning')).toEqual([]);
  });

  it('one cause, one page: the milestones a run misses while mode_collapse is critical are info, naming it', () => {
    // 100 records to epoch 1.0, every group agreeing on a reward of 0 (trl-grpo-finance-poison's shape)
    const run = (frac: number) =>
      Array.from({ length: 100 }, (_, i) => ({
        epoch: (i + 1) / 100,
        reward: 0,
        reward_std: 0.01,
        frac_zero_std: frac,
      }));
    const milestones = (t: Trace) =>
      t
        .alerts()
        .filter((a) => a.rule.startsWith('milestone_') || a.rule.startsWith('stop_'))
        .map((a) => `${a.rule} ${a.severity}`);
    const paged = new Trace().feed(run(1));
    expect(paged.alert('mode_collapse')).toMatchObject({ severity: 'critical', fired_step: 3 });
    expect(milestones(paged)).toEqual([
      'milestone_reward_epoch_0.5 info',
      'milestone_frac_zero_std_epoch_0.5 info',
      'milestone_reward_epoch_1 info',
      'stop_reward_epoch_1 info',
      'stop_frac_zero_std_epoch_1 info',
    ]);
    expect(paged.alert('stop_reward_epoch_1').summary).toMatch(/; mode_collapse critical since step 3$/);
    // (control: half the groups agree, under mode_collapse's 0.8: the preset's milestones are assumptions about a
    // run nobody described, news for the report (info), naming no other alert
    const half = new Trace().feed(run(0.5));
    expect(milestones(half)).toEqual([
      'milestone_reward_epoch_0.5 info',
      'milestone_frac_zero_std_epoch_0.5 info',
      'milestone_reward_epoch_1 info',
      'stop_reward_epoch_1 info',
      'stop_frac_zero_std_epoch_1 info',
    ]);
    expect(half.alert('stop_reward_epoch_1').summary).not.toMatch(/since step/);
    // with the target set in the config the stop rule pages, and the second stop rule at epoch 1, the same
    // verdict, is info naming it: one page
    const set = RuleBook.build(GRPO_PRESET, [{ id: 'stop_reward_epoch_1', value: 0.15 }]);
    const targeted = new Trace({ book: set }).feed(run(0.5));
    expect(milestones(targeted).slice(3)).toEqual(['stop_reward_epoch_1 critical', 'stop_frac_zero_std_epoch_1 info']);
    expect(targeted.alert('stop_frac_zero_std_epoch_1').summary).toMatch(
      /; stop_reward_epoch_1 critical since step 100$/,
    );
  });

  it('a reward below zero is never "flat below 0.3": the plateau is judged on a positive level only', () => {
    const t = new Trace().feed(times(60, { reward: -1.5 }));
    expect(t.alerts()).toEqual([]);
  });

  it('a flat reward above 0.3 is not a plateau of concern', () => {
    const t = new Trace().feed(times(60, { reward: 0.6 }));
    expect(t.alerts()).toEqual([]);
  });

  it('the plateau resolves once the reward has moved again for 30 records (quietFor)', () => {
    const t = new Trace().feed(times(64, { reward: 0.2 }));
    expect(t.alert('reward_plateau').state).toBe('firing');
    // 30 records at 0.3: within a few its pace, read pessimistically, would reach 0.3 within 150 records, then the
    // reward is past it; 30 such records in a row (quietFor) end the plateau
    t.feed(times(30, { reward: 0.3 }));
    expect(t.alert('reward_plateau').state).toBe('firing');
    t.feed(times(10, { reward: 0.3 }));
    expect(t.alert('reward_plateau').state).toBe('resolved');
  });

  it('a verl-style run without frac_zero_std stays silent on the rules about it, whole epochs through', () => {
    const verl = Array.from({ length: 100 }, (_, i) => ({
      epoch: (i + 1) / 100,
      reward: 0.5,
      entropy: 0.3,
      grad_norm: 0.5,
      loss: -0.02,
      kl: 0.001,
      clipped_ratio: 0.01,
      completion_length: 300,
    }));
    const t = new Trace().feed(verl);
    expect(t.alerts()).toEqual([]);
    // the same run with frac_zero_std at 0.5 would have missed both frac_zero_std milestones
    const withFrac = new Trace().feed(verl.map((v) => ({ ...v, frac_zero_std: 0.5 })));
    expect(firing(withFrac)).toEqual(['milestone_frac_zero_std_epoch_0.5@50', 'stop_frac_zero_std_epoch_1@100']);
  });
});
