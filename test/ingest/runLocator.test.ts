import { describe, expect, it } from 'vitest';
import { locateRun } from '../../src/ingest/runLocator.ts';

describe('locateRun', () => {
  it('names a run by its path below the root', () => {
    expect(locateRun('/r', '/r/exp1/seed0/learning.log')).toEqual({
      name: 'exp1/seed0',
      dir: '/r/exp1/seed0',
      relPath: 'learning.log',
    });
  });

  it('names a root that itself holds logs by its basename', () => {
    expect(locateRun('/data/grpo_runs', '/data/grpo_runs/learning.log').name).toBe('grpo_runs');
  });

  it('gives reward logs, checkpoints and rollout dumps to the run above them', () => {
    expect(locateRun('/r', '/r/a/reward_logs/completions.jsonl')).toMatchObject({
      name: 'a',
      relPath: 'reward_logs/completions.jsonl',
    });
    expect(locateRun('/r', '/r/a/checkpoint-500/trainer_state.json')).toMatchObject({
      name: 'a',
      relPath: 'checkpoint-500/trainer_state.json',
    });
    expect(locateRun('/r', '/r/a/rollout_data/34.jsonl').name).toBe('a');
  });
});
