import { RuleSchema, type Rule } from '../rules.ts';

/** Reward given to completions that hit max length without the END marker (seed 000, "Runaway Completions"). */
export const RUNAWAY_REWARD_CAP = 0.05;

/**
 * The built-in GRPO preset. Each value cites the seed line it comes from (shared/seeds/):
 * 000 = learning.log metrics, 001 = training analysis (milestones, stop criteria), 002 = trend alerts.
 */
export const GRPO_PRESET: readonly Rule[] = [
  {
    // 000: "frac_reward_zero_std ... Values > 0.8: Strong sign of mode collapse"; "> 0.5: converging too strongly"
    id: 'mode_collapse', kind: 'threshold', severity: 'critical',
    metric: 'frac_zero_std', op: '>', value: 0.8, for: 3, recover: 0.5, recoverFor: 3,
  },
  {
    // 000: "Detect mode collapse: Watch for ... entropy < 0.04"; "Low entropy (<0.05): ... deterministic"
    id: 'entropy_collapse', kind: 'threshold', severity: 'warning',
    metric: 'entropy', op: '<', value: 0.04, for: 3, recover: 0.05, recoverFor: 3,
  },
  {
    // 000: "grad_norm ... Values > 10: Potential gradient explosion"; "Sudden grad_norm spike (15.786)".
    // One spike is news; spikes a few steps apart are one incident.
    id: 'grad_explosion', kind: 'threshold', severity: 'critical',
    metric: 'grad_norm', op: '>', value: 10, for: 1, recover: 10, recoverFor: 5,
  },
  {
    // 000, "Mode Collapse Warning": "loss=0.0000  grad=0.000 ... Zero loss and grad (no learning)"
    id: 'no_learning', kind: 'threshold', severity: 'critical',
    metric: 'loss', op: '==', value: 0, and: [{ metric: 'grad_norm', op: '==', value: 0 }], for: 3, recoverFor: 2,
  },
  {
    // 000, "Runaway Completions": "reward=0.050±0.000 ... Reward capped at 0.05 (RUNAWAY_REWARD_CAP)";
    // 004: "response_length/clip_ratio: Fraction of responses hitting max_response_length (truncated)"
    id: 'runaway_completions', kind: 'threshold', severity: 'critical',
    any: [
      [
        { metric: 'reward', op: '<=', value: RUNAWAY_REWARD_CAP },
        { metric: 'reward_std', op: '==', value: 0 },
      ],
      [{ metric: 'clipped_ratio', op: '>', value: 0.5 }],
    ],
    for: 3, recoverFor: 3,
  },
  {
    // 000: "reward ... Plateau at < 0.3: Model stuck in low-quality local optimum"
    id: 'reward_plateau', kind: 'trend', severity: 'warning',
    metrics: ['reward'], direction: 'flat', window: 30, change: 0.05, below: 0.3,
    // ours (issue 11): one plateau is one incident, however its noise wanders
    quietFor: 30,
  },
  {
    // 002: "Alert System: Warnings for significant reward changes (>10%)";
    // "Trend Alert Step 150: accuracy ↗️ +15.3% (0.654 → 0.754)". A rise is info, a fall a warning.
    id: 'reward_trend', kind: 'trend', severity: 'info',
    metrics: ['reward', 'rewards/*'], direction: 'any', window: 15, change: 0.1, minDelta: 0.02,
    rise: 'info', fall: 'warning',
    // ours (issue 11): a change beyond 5 standard errors of the difference of the window means (stationary
    // noise raises none in 100,000 steps, bench/noise.ts); one that returns within a window is the same incident
    sigmas: 6, quietFor: 15,
  },
  {
    // the product's promise: a crashed or hung job at 3 a.m. is noticed
    id: 'run_stalled', kind: 'stall', severity: 'warning', after: '15m',
  },
  {
    // 001, "At Epoch 0.5: Mean reward > 0.20"
    id: 'milestone_reward_epoch_0.5', kind: 'milestone', severity: 'warning',
    epoch: 0.5, metric: 'reward', op: '>', value: 0.2,
  },
  {
    // 001, "At Epoch 0.5: frac_zero_std < 0.10"
    id: 'milestone_frac_zero_std_epoch_0.5', kind: 'milestone', severity: 'warning',
    epoch: 0.5, metric: 'frac_zero_std', op: '<', value: 0.1,
  },
  {
    // 001, "At Epoch 1.0: Mean reward > 0.35"
    id: 'milestone_reward_epoch_1', kind: 'milestone', severity: 'warning',
    epoch: 1, metric: 'reward', op: '>', value: 0.35,
  },
  {
    // 001, "Stop if at Epoch 1.0: Mean reward still < 0.15"
    id: 'stop_reward_epoch_1', kind: 'milestone', severity: 'critical',
    epoch: 1, metric: 'reward', op: '>=', value: 0.15,
  },
  {
    // 001, "Stop if at Epoch 1.0: frac_zero_std still > 0.30"
    id: 'stop_frac_zero_std_epoch_1', kind: 'milestone', severity: 'critical',
    epoch: 1, metric: 'frac_zero_std', op: '<=', value: 0.3,
  },
].map((r) => RuleSchema.parse(r));
