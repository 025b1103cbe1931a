/**
 * The GRPO preset: the rules rlwatch runs by default, on the canonical metric names, each citing where its number
 * comes from.
 */
import { RuleSchema, type Rule } from '../rules.ts';

/**
 * Reward given to completions that hit max length without the END marker (the learning.log metrics guide of an
 * OCaml GRPO trainer, "Runaway Completions").
 */
export const RUNAWAY_REWARD_CAP = 0.05;

/**
 * Preset v2: rules that hold on any model and trainer, on the canonical names TRL, verl and OpenRLHF logs map
 * onto (src/ingest/metricNames.ts). Baselines come from the run itself (`relative`, `anomaly`); each rule cites
 * where its number comes from: a document, or "ours".
 */
const PRESET_V2: readonly Record<string, unknown>[] = [
  {
    // ours: entropy below 25% of its early median (verl runs live at ~0.2, Qwen3's entropy rises: a fixed
    // line does not transfer); `entropy_collapse` (the learning.log guide's 0.04) stays as the floor
    id: 'entropy_drop',
    kind: 'relative',
    severity: 'warning',
    metric: 'entropy',
    baseline: 'early',
    warmup: 5,
    baselineWindow: 20,
    smooth: 3,
    op: '<',
    factor: 0.25,
    for: 3,
    recover: 0.4,
    recoverFor: 5,
    // ours: one collapse, one page: whichever of the two entropy rules fires first holds the other back
    inhibits: ['entropy_collapse'],
  },
  {
    // verl best practices: "values above 0.1 often mean you are truncating too much" (response_length/clip_ratio)
    id: 'truncation',
    kind: 'threshold',
    severity: 'warning',
    metric: 'clipped_ratio',
    op: '>',
    value: 0.1,
    for: 3,
    recover: 0.05,
    recoverFor: 5,
    // ours: completions cut at the limit score less and grow longer: the reward's fall and the length's rise are
    // its symptoms
    inhibits: ['length_explosion', 'reward_trend'],
  },
  {
    // ours: nearly every completion truncated while nearly every group has one reward (no signal left)
    id: 'truncation_no_signal',
    kind: 'threshold',
    severity: 'critical',
    metric: 'clipped_ratio',
    op: '>=',
    value: 0.9,
    and: [{ metric: 'frac_zero_std', op: '>=', value: 0.9 }],
    for: 3,
    recoverFor: 3,
    // ours: one cause, one page: the truncation, the agreeing groups and the zero reward are its symptoms
    inhibits: ['truncation', 'mode_collapse', 'zero_signal_too_hard'],
  },
  {
    // ours: completion length down 50% from its running max (the running max of a 5-record median)
    id: 'length_collapse',
    kind: 'relative',
    severity: 'warning',
    metric: 'completion_length',
    baseline: 'max',
    warmup: 5,
    smooth: 5,
    op: '<',
    factor: 0.5,
    // ours: beyond 4 standard errors too (a small batch's mean length swings 60-500 with no trend: minimind)
    sigmas: 4,
    for: 3,
    recover: 0.7,
    recoverFor: 5,
  },
  {
    // ours: completions three times as long as the run's early median (a length blow-up before truncation)
    id: 'length_explosion',
    kind: 'relative',
    severity: 'warning',
    metric: 'completion_length',
    baseline: 'early',
    warmup: 5,
    baselineWindow: 20,
    smooth: 3,
    op: '>',
    factor: 3,
    sigmas: 4,
    for: 3,
    recover: 2,
    recoverFor: 5,
    inhibits: ['truncation', 'reward_trend'],
  },
  {
    // TRL PPOTrainer warns "KL divergence is starting to become negative ... might be a precursor for failed
    // training" when the mean KL is below -1
    id: 'kl_negative',
    kind: 'threshold',
    severity: 'warning',
    metric: 'kl',
    op: '<',
    value: -1,
    for: 2,
    recover: -0.5,
    recoverFor: 3,
  },
  {
    // TRL docs (PPO): the KL should stay positive and within about 10; above 10 the policy has left the reference
    id: 'kl_out_of_range',
    kind: 'threshold',
    severity: 'warning',
    metric: 'kl',
    op: '>',
    value: 10,
    for: 2,
    recover: 5,
    recoverFor: 3,
  },
  {
    // ours: KL against its own course, not its start (the policy starts as the reference: KL ~0 there by
    // construction, so "10× the early median" was "rose by 0.05"): 4× the median of 20 records 100 records
    // before (a KL that grows ×100 over 250 steps is never 4× its last 20 records), none of them from the first 50
    // (a real PPO LoRA run's KL rose 0.005 → 0.03 over its first 35 steps, healthy), and by at least 0.02 (a real
    // GRPO run's 5e-5 → 0.01 is nothing). kl_out_of_range is the absolute band
    id: 'kl_blowup',
    kind: 'relative',
    severity: 'warning',
    metric: 'kl',
    baseline: 'rolling',
    warmup: 50,
    baselineWindow: 20,
    lag: 100,
    smooth: 3,
    op: '>',
    factor: 4,
    minDelta: 0.02,
    for: 3,
    recover: 2,
    recoverFor: 5,
  },
  {
    // ours: the approximate KL of one PPO update (verl actor/ppo_kl, OpenRLHF ppo_kl) beyond 0.1, ten times
    // the usual target_kl of 0.01 (OpenAI Spinning Up PPO)
    id: 'ppo_kl_out_of_bounds',
    kind: 'threshold',
    severity: 'warning',
    metric: 'ppo_kl',
    op: '>',
    value: 0.1,
    for: 2,
    recover: 0.05,
    recoverFor: 3,
    // ours: an update KL that comes and goes is one incident while it returns within 20 records (it flapped)
    quietFor: 20,
  },
  {
    // ours: pg_clipfrac anomalies (robust z over 50 records; a jump of at least 0.05 of the tokens)
    id: 'pg_clipfrac_spike',
    kind: 'anomaly',
    severity: 'warning',
    metric: 'pg_clipfrac',
    window: 50,
    warmup: 20,
    z: 6,
    minDelta: 0.05,
    recoverFor: 10,
  },
  {
    // ours: value loss spikes (verl critic/vf_loss, OpenRLHF critic_loss): robust z over 50 records
    id: 'value_loss_spike',
    kind: 'anomaly',
    severity: 'warning',
    metric: 'value_loss',
    window: 50,
    warmup: 20,
    z: 8,
    recoverFor: 10,
  },
  {
    // verl docs (rollout correction): rollout_is_mean should be ~1.0; warn below 0.5 or above 2.0 (two rules:
    // the alternatives of one rule are keyed by their metric, which is the same here)
    id: 'rollout_is_ratio_low',
    kind: 'threshold',
    severity: 'warning',
    metric: 'rollout_corr/rollout_is_mean',
    op: '<',
    value: 0.5,
    for: 2,
    recoverFor: 3,
  },
  {
    id: 'rollout_is_ratio_high',
    kind: 'threshold',
    severity: 'warning',
    metric: 'rollout_corr/rollout_is_mean',
    op: '>',
    value: 2,
    for: 2,
    recoverFor: 3,
  },
  {
    // verl docs (rollout correction): rollout_is_eff_sample_size should stay above 0.3
    id: 'rollout_low_ess',
    kind: 'threshold',
    severity: 'warning',
    metric: 'rollout_corr/rollout_is_eff_sample_size',
    op: '<',
    value: 0.3,
    for: 2,
    recover: 0.35,
    recoverFor: 3,
  },
  {
    // ours (an open-r1 report: format reward 0.48 -> 0.86 while accuracy 0.16 -> 0.06): one reward
    // component rising while another falls over the same 15-record windows, each by 0.05 and beyond its noise
    id: 'reward_hacking',
    kind: 'divergence',
    severity: 'warning',
    metrics: ['rewards/*'],
    window: 15,
    minDelta: 0.05,
    sigmas: 5,
    quietFor: 15,
    // ours: and over 60-record windows (format 0.17 → 0.62 while accuracy 0.38 → 0.10 over 200 steps moves two
    // 15-record windows by 0.02-0.03)
    longWindow: 60,
    // ours: the fall of the component paid for and the rise of the total are its symptoms
    inhibits: ['reward_trend', 'reward_plateau'],
  },
  {
    // ours: a component saturated at its max with zero std (no signal): every completion gets the
    // component's best score; with reward_hacking, the other half of the reward-hacking signature
    id: 'reward_saturated',
    kind: 'saturation',
    severity: 'warning',
    metrics: ['rewards/*'],
    for: 3,
    recoverFor: 3,
  },
  {
    // ours: zero-signal groups split by the reward: most groups agree and the reward is near its top
    // (all correct: the prompts are too easy) or near 0 (all wrong: too hard); on a 0..1 reward; info only
    id: 'zero_signal_too_easy',
    kind: 'threshold',
    severity: 'info',
    metric: 'frac_zero_std',
    op: '>=',
    value: 0.75,
    and: [{ metric: 'reward', op: '>=', value: 0.9 }],
    for: 5,
    recoverFor: 5,
  },
  {
    id: 'zero_signal_too_hard',
    kind: 'threshold',
    severity: 'info',
    metric: 'frac_zero_std',
    op: '>=',
    value: 0.75,
    and: [
      { metric: 'reward', op: '<=', value: 0.1 },
      { metric: 'reward', op: '>=', value: 0 },
    ],
    for: 5,
    recoverFor: 5,
  },
  {
    // ours: step time over 3x its median (slow node, length blow-up): against the median of the 50 before
    id: 'slow_steps',
    kind: 'relative',
    severity: 'warning',
    metric: 'step_time',
    baseline: 'rolling',
    baselineWindow: 50,
    smooth: 3,
    op: '>',
    factor: 3,
    for: 2,
    recover: 2,
    recoverFor: 5,
  },
];

/**
 * The milestones of a GRPO training analysis (Qwen2.5-Coder-1.5B on OCaml problems) are written for a reward in
 * [0, 1] and for runs nobody told rlwatch about: on a reward on another scale they are read as fractions of the run's
 * range, and a miss is at most a warning until the config sets the value (then it is the user's target, critical for
 * the stop rules). frac_zero_std is in [0, 1] always; a run whose prompts are all solved (zero_signal_too_easy) keeps
 * it high and is no stop.
 */
const ASSUMED = { scale: 'unit', assumed: true } as const;

/**
 * The built-in GRPO preset. Each value cites the line it comes from: "learning.log guide" is the learning.log
 * metrics guide of an OCaml GRPO trainer, "training analysis" the GRPO training analysis above (milestones, stop
 * criteria), "logging guide" the R1-Zero GRPO logging guide's ComprehensiveLoggingCallback (trend alerts).
 */
export const GRPO_PRESET: readonly Rule[] = [
  {
    // learning.log guide: "frac_reward_zero_std ... > 0.5: converging too strongly" (the early warning, for 5
    // records); "Values > 0.8: Strong sign of mode collapse" (the same incident escalates to a critical page, for 3).
    // Ours: one incident, so that the page continues the warning rather than being a second alert of one cause. The
    // warning is judged on runs whose first 20 records sat below 0.5 (a run that starts on prompts it cannot tell
    // apart is not converging) and with the reward below 0.9 (above, the groups agree because every answer is right:
    // zero_signal_too_easy); the critical line on frac_zero_std alone, from the first record. Resolves below 0.5 for 3
    id: 'mode_collapse',
    kind: 'threshold',
    severity: 'warning',
    metric: 'frac_zero_std',
    op: '>',
    value: 0.5,
    and: [{ metric: 'reward', op: '<', value: 0.9 }],
    for: 5,
    escalate: { value: 0.8, for: 3, severity: 'critical' },
    recover: 0.5,
    recoverFor: 3,
    learn: 20,
    // ours: the entropy, the reward, the zero-std milestones and a zero loss and grad (no advantage left) follow
    // the collapse: one page
    inhibits: ['entropy_*', 'reward_*', 'milestone_*', 'stop_*', 'no_learning'],
  },
  {
    // learning.log guide: "Detect mode collapse: Watch for ... entropy < 0.04"; "Low entropy (<0.05): ...
    // deterministic"
    id: 'entropy_collapse',
    kind: 'threshold',
    severity: 'warning',
    metric: 'entropy',
    op: '<',
    value: 0.04,
    for: 3,
    recover: 0.05,
    recoverFor: 3,
    // ours: the floor holds for runs whose first 5 records sat above it; a model that lives at
    // 0.02-0.04 (a public verl PPO GSM8K log, Qwen-class models) is judged by entropy_drop
    learn: 5,
  },
  {
    // learning.log guide: "grad_norm ... Values > 10: Potential gradient explosion"; "Sudden grad_norm spike
    // (15.786)": 10 is the floor. Ours: and 10× the median of the 50 records before (a large model lives at 2.5,
    // a public TRL GRPO log (hotpotqa agent) at 0.4-224 with a median of 21), beyond 4 robust σ of their logs
    // (that run's one 1,927 is 2.5σ: its norms span three decades). `cap`: set it to page on any norm above a line.
    // One spike is news; spikes a few steps apart are one incident.
    id: 'grad_explosion',
    kind: 'relative',
    severity: 'critical',
    metric: 'grad_norm',
    baseline: 'rolling',
    baselineWindow: 50,
    op: '>',
    factor: 10,
    floor: 10,
    logSigmas: 4,
    for: 1,
    // ours: calm again once back under 3× the median it spiked from, for 5 records (an update that kept the norms
    // at 3-8× for 30 steps after a 50× spike is still exploding, though under the floor of 10)
    recover: 3,
    recoverFor: 5,
    // ours: what an exploding update does to the reward, the KL, the entropy and the losses is its symptom
    inhibits: [
      'reward_*',
      'kl_*',
      'entropy_*',
      'length_*',
      'pg_clipfrac_spike',
      'value_loss_spike',
      'ppo_kl_out_of_bounds',
    ],
  },
  {
    // learning.log guide, "Mode Collapse Warning": "loss=0.0000  grad=0.000 ... Zero loss and grad (no learning)"
    id: 'no_learning',
    kind: 'threshold',
    severity: 'critical',
    metric: 'loss',
    op: '==',
    value: 0,
    and: [{ metric: 'grad_norm', op: '==', value: 0 }],
    for: 3,
    recoverFor: 2,
  },
  {
    // learning.log guide, "Runaway Completions": "reward=0.050±0.000 ... Reward capped at 0.05 (RUNAWAY_REWARD_CAP)":
    // the reward pinned at the cap with no spread. Not a reward of 0 with no spread (every answer wrong:
    // zero_signal_too_hard), and not a high clip ratio alone: verl runs start healthy at 0.79 (real logs), which
    // `truncation` (warning) and `truncation_no_signal` (critical, with frac_zero_std near 1) judge.
    id: 'runaway_completions',
    kind: 'threshold',
    severity: 'critical',
    metric: 'reward',
    op: '==',
    value: RUNAWAY_REWARD_CAP,
    and: [{ metric: 'reward_std', op: '==', value: 0 }],
    for: 3,
    recoverFor: 3,
  },
  {
    // learning.log guide: "reward ... Plateau at < 0.3: Model stuck in low-quality local optimum"
    id: 'reward_plateau',
    kind: 'trend',
    severity: 'warning',
    // ours: stuck below 0.3 by the distance to it: not moving by 10% of its level (read within 10% over 45 or 60
    // records where it is quiet, under 10% over 120 where it is noisy) and not on course to reach 0.3 within 300
    // records at its pace read 2 standard errors up, held for 5 (a steady climb of +25% in 60 steps at 0.1 under a
    // batch of 256 is no plateau; a 5% change between 30-record windows called it one); one plateau is one incident
    metrics: ['reward'],
    direction: 'flat',
    window: 30,
    change: 0.1,
    below: 0.3,
    quietFor: 30,
    for: 5,
  },
  {
    // logging guide: "Alert System: Warnings for significant reward changes (>10%)";
    // "Trend Alert Step 150: accuracy ↗️ +15.3% (0.654 → 0.754)". A rise is info, a fall a warning.
    id: 'reward_trend',
    kind: 'trend',
    severity: 'info',
    metrics: ['reward', 'rewards/*'],
    direction: 'any',
    window: 15,
    change: 0.1,
    minDelta: 0.02,
    rise: 'info',
    fall: 'warning',
    // ours: a change beyond 5 standard errors of the difference of the window means (stationary
    // noise raises none in 100,000 steps, bench/noise.ts); one that returns within a window is the same incident
    sigmas: 6,
    quietFor: 15,
    // ours: held for 5 records (a third of a window): a noisy PPO reward (a public DeepSpeed-Chat PPO log)
    // brushes 6 standard errors for a record or four in a dip that passes
    for: 5,
    // ours: a fall from the course the reward was on (a climb that turns into a 20% drop): the last
    // 5-20 records against the line of the 100 before them, beyond 6 standard errors (docs/alerts.md: trend, break)
    breakSigmas: 6,
    breakFit: 100,
    // ours: a slow decline (25% over 300 steps moves two adjacent windows by 1%): the last 30 records' mean
    // against the best 60-record mean of the 300 before, beyond 5.8 standard errors of their difference (read as
    // AR(1), or from the window means themselves if they spread wider; about 1.5 of it is the best one's own bias),
    // a quarter more per decade of records past 1,000 (6.2 at 50,000: more looks, wider strays of noise). At 6, 7 of
    // 12 seeded declines under AR(1) φ 0.8 were told within 60 steps of their 10% point, at 5.8 8; at 5.5 a healthy
    // 50,000-step run was paged
    declineSigmas: 5.8,
    declineWindow: 30,
    declineHorizon: 300,
    // ours: the first 100 records are the warm-up (the learning rate ramps; a reward with an AR(1) φ of 0.9 fell
    // 42% in its first 100 records of a healthy run)
    warmup: 100,
  },
  {
    // the product's promise: a crashed or hung job at 3 a.m. is noticed; fitted to the run's pace (a 20 s step
    // is caught in 10 min, a 3-min step not paged before 15 min: a long evaluation is not a hang)
    id: 'run_stalled',
    kind: 'stall',
    severity: 'warning',
    after: '10m',
    factor: 5,
    window: 50,
  },
  {
    // a job that printed its config and started loading, then logged no step for half an hour
    id: 'run_stuck_at_start',
    kind: 'stall',
    phase: 'start',
    severity: 'warning',
    after: '30m',
  },
  {
    // training analysis, "At Epoch 0.5: Mean reward > 0.20"
    id: 'milestone_reward_epoch_0.5',
    kind: 'milestone',
    severity: 'warning',
    epoch: 0.5,
    metric: 'reward',
    op: '>',
    value: 0.2,
    ...ASSUMED,
  },
  {
    // training analysis, "At Epoch 0.5: frac_zero_std < 0.10"
    id: 'milestone_frac_zero_std_epoch_0.5',
    kind: 'milestone',
    severity: 'warning',
    epoch: 0.5,
    metric: 'frac_zero_std',
    op: '<',
    value: 0.1,
    ...ASSUMED,
    explainedBy: ['zero_signal_too_easy'],
  },
  {
    // training analysis, "At Epoch 1.0: Mean reward > 0.35"
    id: 'milestone_reward_epoch_1',
    kind: 'milestone',
    severity: 'warning',
    epoch: 1,
    metric: 'reward',
    op: '>',
    value: 0.35,
    ...ASSUMED,
  },
  {
    // training analysis, "Stop if at Epoch 1.0: Mean reward still < 0.15"
    id: 'stop_reward_epoch_1',
    kind: 'milestone',
    severity: 'critical',
    epoch: 1,
    metric: 'reward',
    op: '>=',
    value: 0.15,
    ...ASSUMED,
  },
  {
    // training analysis, "Stop if at Epoch 1.0: frac_zero_std still > 0.30"
    id: 'stop_frac_zero_std_epoch_1',
    kind: 'milestone',
    severity: 'critical',
    epoch: 1,
    metric: 'frac_zero_std',
    op: '<=',
    value: 0.3,
    ...ASSUMED,
    explainedBy: ['zero_signal_too_easy'],
  },
  // what people who train with RL ask for most: "stop me when the loss is NaN", "tell me when it
  // crashes or finishes" (TRL, verl, open-r1, ms-swift threads; W&B's own alert example is a NaN loss)
  // ours: a NaN leaves every later number meaningless: it holds back the run's other alerts
  { id: 'non_finite', kind: 'non_finite', severity: 'critical', recoverFor: 5, inhibits: ['*'] },
  { id: 'run_crashed', kind: 'crash', severity: 'critical', grace: '2m' },
  { id: 'run_finished', kind: 'finished', severity: 'info' },
  // ours: a job restarted from a checkpoint (preempted, requeued) is news, not a problem
  { id: 'run_restarted', kind: 'restart', severity: 'info' },
  { id: 'trainer_warning', kind: 'trainer_warning', severity: 'warning', quietSteps: 20 },
  ...PRESET_V2,
].map((r) => RuleSchema.parse(r));
