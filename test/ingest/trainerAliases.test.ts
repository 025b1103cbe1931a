import { describe, expect, it } from 'vitest';
import { canonicalName, isCanonicalMetric } from '../../src/ingest/metricNames.ts';

describe('verl, TRL and OpenRLHF names of the PPO, length and speed quantities', () => {
  it.each([
    ['actor/pg_clipfrac', 'pg_clipfrac'],
    ['actor/ppo_kl', 'ppo_kl'],
    ['critic/vf_loss', 'value_loss'],
    ['timing_s/step', 'step_time'],
    ['clip_ratio/region_mean', 'pg_clipfrac'],
    ['step_time', 'step_time'],
    ['train/policy_loss', 'loss'],
    ['train/actor_lr', 'lr'],
    ['train/entropy_loss', 'entropy'],
    ['train/ppo_clip_ratio', 'pg_clipfrac'],
    ['train/ppo_kl', 'ppo_kl'],
    ['train/critic_loss', 'value_loss'],
    ['train/response_length', 'completion_length'],
    ['train/kl', 'kl'],
    // verl's rollout-correction metrics keep their own names: the preset uses them as they are
    ['rollout_corr/rollout_is_mean', 'rollout_corr/rollout_is_mean'],
  ])('%s -> %s', (raw, name) => {
    expect(canonicalName(raw)).toBe(name);
  });

  it('the new names are canonical', () => {
    for (const m of ['pg_clipfrac', 'ppo_kl', 'value_loss', 'step_time']) expect(isCanonicalMetric(m)).toBe(true);
  });
});
