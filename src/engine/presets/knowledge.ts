/**
 * What each rule of the preset means, what usually causes it and what to try: data kept next to the rule book,
 * read by the run report, the alert cards (the `hint`: one line) and the README table. Sources: the learning.log
 * metrics guide of an OCaml GRPO trainer, a GRPO training analysis (Qwen2.5-Coder-1.5B on OCaml problems, epoch
 * 0.28-0.29), the R1-Zero GRPO logging guide, the TRL GRPO/PPO docs, verl's best practices and rollout-correction
 * docs. Each text names its source in words a user reading a card understands. A test checks that every preset
 * rule has an entry.
 */
export interface RuleKnowledge {
  /** what the condition means for the run, in one sentence */
  meaning: string;
  causes: readonly string[];
  /** most useful first */
  actions: readonly string[];
  /** the one line a card shows after "try:" */
  hint: string;
  /** for a rule whose alert says which way the metric went (`details.direction`): what fits that way instead */
  byDirection?: Partial<Record<'up' | 'down' | 'flat', Pick<RuleKnowledge, 'causes' | 'actions' | 'hint'>>>;
}

const MODE_COLLAPSE: RuleKnowledge = {
  meaning:
    'many prompts get the same reward for every generation: GRPO learns from the differences within a group, so ' +
    'those prompts give no learning signal (a GRPO training analysis)',
  causes: [
    'sampling temperature too low for early GRPO training (a GRPO training analysis: 0.9 was too low)',
    'too few generations per prompt to see different outcomes',
    'the model converged on a few "safe" patterns that earn a mediocre reward',
  ],
  actions: [
    'raise the sampling temperature (a GRPO training analysis: 0.9 -> 1.1)',
    'more generations per prompt (a GRPO training analysis: num_generations 6 -> 8)',
  ],
  hint: 'raise the temperature (e.g. 0.9 -> 1.1) and the generations per prompt (e.g. 6 -> 8)',
};

const ENTROPY_LOW: RuleKnowledge = {
  meaning:
    'the policy is nearly deterministic: it stopped exploring, so groups collapse to one answer (the learning.log ' +
    'metrics guide)',
  causes: [
    'sampling temperature too low',
    'learning rate too high for the KL or entropy regularisation in use',
    'no KL penalty (beta 0) letting the policy sharpen unchecked',
  ],
  actions: [
    'raise the sampling temperature',
    'lower the learning rate, or add/raise the KL coefficient (TRL beta, verl kl_loss_coef)',
    'add an entropy bonus (verl entropy_coeff)',
  ],
  hint: 'raise the temperature; lower the learning rate or raise the KL coefficient',
};

const MILESTONE_REWARD: RuleKnowledge = {
  meaning:
    'the reward is behind the trajectory a GRPO training analysis expects of a run that is learning (> 0.20 by ' +
    'epoch 0.5)',
  causes: [
    'the learning rate is conservative (or still in warmup) and the reward climbs slowly',
    'completions cut off before they finish (check clipped_ratio / the end marker)',
    'the task is too hard for the base model: most generations score nothing',
  ],
  actions: [
    'raise the learning rate (a GRPO training analysis: 5e-6 -> 8e-6)',
    'raise the max completion length (a GRPO training analysis: 512 -> 600) if completions are cut off',
    'if nothing improves by epoch 1.0: curriculum (easier rewards first) or a stronger base model',
  ],
  hint: 'raise the learning rate (e.g. 5e-6 -> 8e-6); longer completions if they are cut off',
};

const MILESTONE_FRAC: RuleKnowledge = {
  ...MODE_COLLAPSE,
  meaning:
    'too many groups still have zero reward spread at the milestone (a GRPO training analysis: frac_zero_std < 0.10 ' +
    'by epoch 0.5)',
};

const STOP: RuleKnowledge = {
  meaning:
    'one of the stop criteria of a GRPO training analysis holds at epoch 1.0: more of the same training is unlikely ' +
    'to help',
  causes: ['the base model cannot solve the task yet', 'the reward gives no partial credit to learn from'],
  actions: [
    'stop and change the setup rather than train on',
    'curriculum: weight the easier reward components first (a GRPO training analysis, option A)',
    'check the base model on a few problems; consider a stronger one (a GRPO training analysis, option B)',
  ],
  hint: 'stop: change the setup (curriculum, stronger base model) before training on',
};

const TRUNCATION: RuleKnowledge = {
  meaning: 'many completions hit the max completion length and are cut off (verl: above 0.1 you truncate too much)',
  causes: ['max completion length too short for the task', 'the model learned to ramble (length grows without reward)'],
  actions: [
    'raise the max completion length (TRL max_completion_length, verl response_length)',
    'add a length penalty or an overlong penalty (DAPO overlong reward shaping)',
  ],
  hint: 'raise the max completion length, or add a length penalty',
};

/** Keyed by rule id (preset rules) and by the report's own findings (`reward_low`, `reward_cv`, ...). */
export const KNOWLEDGE: Readonly<Record<string, RuleKnowledge>> = {
  mode_collapse: MODE_COLLAPSE,
  entropy_collapse: ENTROPY_LOW,
  entropy_drop: {
    ...ENTROPY_LOW,
    meaning: 'entropy fell below a quarter of its early level: the policy stopped exploring',
  },
  grad_explosion: {
    meaning:
      'a gradient norm far above its usual range (> 10): one update can undo much of the training (the learning.log ' +
      'metrics guide)',
    causes: ['learning rate too high', 'a batch with extreme advantages or rewards', 'no or a loose gradient clipping'],
    actions: ['lower the learning rate', 'clip gradients (max_grad_norm 1.0)', 'check the reward scale for outliers'],
    hint: 'lower the learning rate; clip gradients (max_grad_norm 1.0)',
  },
  no_learning: {
    meaning: 'loss and gradient are both exactly zero: the optimiser receives nothing (the learning.log metrics guide)',
    causes: ['every group has one reward (frac_zero_std 1): no advantage', 'frozen parameters or a broken LoRA setup'],
    actions: [
      'raise the temperature and the generations per prompt so groups differ',
      'check that the trainable parameters are not frozen',
    ],
    hint: 'restore group diversity (temperature, generations); check trainable params',
  },
  runaway_completions: {
    meaning:
      'the reward is pinned at the runaway cap with no spread: completions hit max length without the END marker',
    causes: ['completions never reach the end marker', 'max completion length too short'],
    actions: ['raise the max completion length', 'reward the end marker / penalise rambling (length penalty)'],
    hint: 'raise the max completion length; reward finishing (end marker)',
  },
  reward_plateau: {
    meaning:
      'a low reward (< 0.3) that stopped moving: the model sits in a low-quality local optimum (the learning.log ' +
      'metrics guide)',
    causes: ['learning rate too low', 'too little exploration', 'the task is too hard for the model at this stage'],
    actions: [
      'raise the learning rate (a GRPO training analysis: 5e-6 -> 8e-6)',
      'raise the temperature for more exploration',
      'curriculum: easier reward components first (a GRPO training analysis, option A)',
    ],
    hint: 'raise the learning rate or the temperature; consider a curriculum',
  },
  reward_trend: {
    meaning:
      'the reward (or a component) moved by more than 10% between windows (the R1-Zero GRPO logging guide): a fall ' +
      'is a regression',
    causes: ['a fall: too high a learning rate, a policy drifting from the reference', 'a rise: the run is learning'],
    actions: ['on a fall: compare with the KL and the components; lower the learning rate if the KL rose too'],
    hint: 'a fall: check the KL and reward components; lower the learning rate if the KL rose',
    byDirection: {
      up: {
        causes: ['the run is learning'],
        actions: ['nothing to do; check that the KL and the completion length did not climb with it (reward hacking)'],
        hint: 'nothing to do: the run is learning (check that the KL and length did not climb with it)',
      },
      flat: {
        causes: ['learning rate too low', 'too little exploration'],
        actions: ['raise the learning rate', 'raise the temperature for more exploration'],
        hint: 'raise the learning rate or the temperature',
      },
    },
  },
  run_stalled: {
    meaning: 'no new step for much longer than the run usually takes: a crashed or hung job',
    causes: ['the job died (OOM, node failure)', 'a hung collective (NCCL) or data loader', 'a long evaluation'],
    actions: ['check the job (`rlwatch run logs`, the scheduler)', 'restart from the last checkpoint'],
    hint: 'check the job (rlwatch run logs); restart from the last checkpoint',
  },
  run_stuck_at_start: {
    meaning: 'the job printed its config but logged no step for half an hour',
    causes: ['model or dataset download/loading stuck', 'waiting for GPUs or a rendezvous'],
    actions: ['check the job output and the scheduler'],
    hint: 'check the job output and the scheduler',
  },
  'milestone_reward_epoch_0.5': MILESTONE_REWARD,
  'milestone_frac_zero_std_epoch_0.5': MILESTONE_FRAC,
  milestone_reward_epoch_1: {
    ...MILESTONE_REWARD,
    meaning: 'the reward is below 0.35 at epoch 1.0 (a GRPO training analysis)',
  },
  stop_reward_epoch_1: {
    ...STOP,
    meaning: 'the reward is still below 0.15 at epoch 1.0: a GRPO training analysis says stop',
  },
  stop_frac_zero_std_epoch_1: {
    ...STOP,
    meaning: 'frac_zero_std still above 0.30 at epoch 1.0: a GRPO training analysis says stop',
  },
  non_finite: {
    meaning: 'a NaN or infinite loss, gradient, reward, KL or entropy: the weights may already be corrupted',
    causes: ['learning rate too high', 'fp16 overflow', 'a reward function returning nan/inf'],
    actions: [
      'stop and restart from the last good checkpoint',
      'lower the learning rate; use bf16',
      'guard the reward function',
    ],
    hint: 'restart from the last good checkpoint; lower the LR; use bf16',
  },
  run_crashed: {
    meaning: 'the trainer raised an error and stopped',
    causes: ['out of memory', 'a bug or bad sample in the data', 'a node or NCCL failure'],
    actions: ['read the traceback on the card (`rlwatch run logs`)', 'fix and resume from the last checkpoint'],
    hint: 'read the traceback (rlwatch run logs); resume from the last checkpoint',
  },
  run_finished: {
    meaning: 'the trainer finished training',
    causes: [],
    actions: ['evaluate the final checkpoint'],
    hint: 'evaluate the final checkpoint',
  },
  run_restarted: {
    meaning: 'the job logs its steps again from an earlier step: it restarted from a checkpoint',
    causes: ['preempted or requeued by the scheduler', 'a crash resumed by hand or by a supervisor'],
    actions: [
      'check why the attempt before ended (rlwatch run logs)',
      'check that it resumed from the checkpoint meant',
    ],
    hint: 'check why the attempt before ended (rlwatch run logs)',
  },
  trainer_warning: {
    meaning: 'the trainer printed a warning that bears on the training',
    causes: ['a configuration the trainer considers risky'],
    actions: ['read the warning on the card and decide whether it applies'],
    hint: 'read the warning; check the setting it names',
  },
  truncation: TRUNCATION,
  truncation_no_signal: {
    ...TRUNCATION,
    meaning: 'nearly every completion is cut off and nearly every group has one reward: no learning signal left',
  },
  length_collapse: {
    meaning: 'completions became less than half as long as they were: the model may have found a short-answer shortcut',
    causes: ['a length penalty too strong', 'reward hacking by short answers', 'entropy collapse'],
    actions: ['check the generations', 'weaken the length penalty', 'check the reward components for a shortcut'],
    hint: 'check the generations; weaken the length penalty',
  },
  length_explosion: {
    meaning: 'completions grew to three times their early length: truncation and slow steps come next',
    causes: ['the reward favours longer answers', 'no length penalty'],
    actions: ['add a length penalty or overlong shaping', 'cap the max completion length'],
    hint: 'add a length penalty; cap the completion length',
  },
  kl_negative: {
    meaning: 'the mean KL went below -1 (TRL: "might be a precursor for failed training")',
    causes: ['sampling settings differ from the ones the KL assumes (temperature, top-k)', 'a too-high learning rate'],
    actions: ['use the same temperature for generation and the KL', 'lower the learning rate'],
    hint: 'match the generation and KL settings; lower the learning rate',
  },
  kl_out_of_range: {
    meaning: 'the KL to the reference is above 10: the policy has left the reference model (TRL docs)',
    causes: ['learning rate too high', 'KL coefficient too low', 'reward hacking'],
    actions: ['raise the KL coefficient (beta)', 'lower the learning rate', 'check the generations for reward hacking'],
    hint: 'raise the KL coefficient; lower the learning rate',
  },
  kl_blowup: {
    meaning: 'the KL rose tenfold over its early level: the policy is drifting fast',
    causes: ['learning rate too high', 'KL coefficient too low', 'reward hacking'],
    actions: ['raise the KL coefficient (beta)', 'lower the learning rate', 'check the generations for reward hacking'],
    hint: 'raise the KL coefficient; lower the learning rate',
  },
  ppo_kl_out_of_bounds: {
    meaning: 'one PPO update moved the policy ten times the usual target KL of 0.01',
    causes: ['learning rate too high', 'too many PPO epochs per batch', 'clip range too wide'],
    actions: ['lower the learning rate', 'fewer PPO epochs per batch', 'narrow the clip range'],
    hint: 'lower the LR; fewer PPO epochs per batch',
  },
  pg_clipfrac_spike: {
    meaning: 'a sudden jump in the share of tokens the PPO clip cut: an unusually large update',
    causes: ['a batch with extreme advantages', 'learning rate too high'],
    actions: ['lower the learning rate', 'check the batch rewards for outliers'],
    hint: 'lower the learning rate; check rewards for outliers',
  },
  value_loss_spike: {
    meaning: 'the critic loss jumped far above its usual level',
    causes: ['a reward scale change or outlier', 'critic learning rate too high'],
    actions: ['normalise or clip rewards', 'lower the critic learning rate'],
    hint: 'normalise/clip rewards; lower the critic LR',
  },
  rollout_is_ratio_low: {
    meaning: 'the rollout importance ratio is below 0.5: the rollout and training policies disagree (verl docs)',
    causes: ['a stale rollout policy (async, weight sync lag)', 'precision mismatch between rollout and training'],
    actions: ['check the weight sync between trainer and rollout engine', 'enable rollout correction (verl)'],
    hint: 'check the trainer -> rollout weight sync; enable rollout correction',
  },
  rollout_is_ratio_high: {
    meaning: 'the rollout importance ratio is above 2: the rollout and training policies disagree (verl docs)',
    causes: ['a stale rollout policy (async, weight sync lag)', 'precision mismatch between rollout and training'],
    actions: ['check the weight sync between trainer and rollout engine', 'enable rollout correction (verl)'],
    hint: 'check the trainer -> rollout weight sync; enable rollout correction',
  },
  rollout_low_ess: {
    meaning: 'the effective sample size of the rollout correction is below 0.3: few samples carry the update',
    causes: ['rollout and training policies far apart'],
    actions: ['reduce the off-policy lag', 'check rollout/training precision'],
    hint: 'reduce the off-policy lag; check precision',
  },
  reward_hacking: {
    meaning: 'one reward component rises while another falls: the model may be gaming the easier one',
    causes: ['a format or style reward easier to earn than correctness', 'components weighted out of balance'],
    actions: ['read the best generations', 'reweight or gate the easy component on correctness'],
    hint: 'read the best generations; reweight the easy reward component',
  },
  reward_saturated: {
    meaning: 'a reward component is at its maximum for every generation: it gives no signal any more',
    causes: ['the component is too easy'],
    actions: ['lower its weight or drop it', 'make it stricter'],
    hint: 'lower the weight of the saturated component',
  },
  zero_signal_too_easy: {
    meaning: 'most groups agree on a high reward: the prompts are too easy to learn from',
    causes: ['dataset too easy for the model'],
    actions: ['filter out prompts the model always solves', 'harder prompts (curriculum)'],
    hint: 'filter out solved prompts; harder data',
  },
  zero_signal_too_hard: {
    meaning: 'most groups agree on a reward near 0: the prompts are too hard to learn from',
    causes: ['dataset too hard for the model', 'the reward gives no partial credit'],
    actions: ['easier prompts first (curriculum)', 'partial credit in the reward', 'a stronger base model'],
    hint: 'easier prompts first; add partial credit to the reward',
  },
  slow_steps: {
    meaning: 'steps take three times their usual time',
    causes: ['a slow or failing node', 'completions growing longer', 'I/O or checkpointing'],
    actions: ['check the node and the completion length'],
    hint: 'check the node and the completion length',
  },
  // the report's own findings (expected ranges), not rules
  reward_low: MILESTONE_REWARD,
  reward_cv: {
    meaning:
      'the reward varies a lot relative to its mean (a GRPO training analysis: healthy CV < 0.30): an unstable ' +
      'learning signal',
    causes: ['output quality inconsistent: a few generations score, most do not', 'low mean reward early in training'],
    actions: ['more generations per prompt for a better advantage estimate', 'partial credit in the reward'],
    hint: 'more generations per prompt; partial credit in the reward',
  },
  entropy_range: {
    ...ENTROPY_LOW,
    meaning:
      'entropy outside 0.10-0.20 (a GRPO training analysis, for code): too low is no exploration, too high is ' +
      'random guessing',
  },
  grad_norm_range: {
    meaning:
      'gradient norm outside 0.01-0.5 (a GRPO training analysis): updates too small to learn or large enough to ' +
      'destabilise',
    causes: ['learning rate too low (small) or too high (large)', 'no gradient clipping'],
    actions: ['adjust the learning rate', 'clip gradients (max_grad_norm 1.0)'],
    hint: 'adjust the learning rate; clip gradients',
  },
};

/** What a rule (or a report finding) means; undefined for a rule a user added. */
export function knowledgeOf(id: string): RuleKnowledge | undefined {
  return KNOWLEDGE[id];
}

/** What fits one alert of a rule: a rise of the reward gets no advice for a fall. `details` is the alert's JSON. */
export function knowledgeOfAlert(rule: string, details: string): RuleKnowledge | undefined {
  const k = KNOWLEDGE[rule];
  if (!k?.byDirection) return k;
  const { direction } = JSON.parse(details) as { direction?: unknown };
  const way = direction === 'up' || direction === 'down' || direction === 'flat' ? k.byDirection[direction] : undefined;
  return way ? { ...k, ...way } : k;
}
