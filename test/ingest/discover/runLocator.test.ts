import { describe, expect, it } from 'vitest';
import { CANDIDATE_FILE, locateRun } from '../../../src/ingest/discover/runLocator.ts';

describe('locateRun', () => {
  it('names a run by its path below the root', () => {
    expect(locateRun('/r', '/r/exp1/seed0/learning.log')).toEqual({
      name: 'exp1/seed0',
      dir: '/r/exp1/seed0',
      relPath: 'learning.log',
    });
  });

  it('puts a prefix (watch.prefix) before the name, and nothing else changes', () => {
    expect(locateRun('/r', '/r/exp1/seed0/reward_logs/completions.jsonl', 'gpu-a')).toEqual({
      name: 'gpu-a/exp1/seed0',
      dir: '/r/exp1/seed0',
      relPath: 'reward_logs/completions.jsonl',
    });
    const root = locateRun('/data/grpo_runs', '/data/grpo_runs/learning.log', 'site/gpu-a');
    expect(root.name).toBe('site/gpu-a/grpo_runs');
    expect(locateRun('/r', '/r/exp1/learning.log', '').name).toBe('exp1');
  });

  it('writes out the characters of a name that would not show as themselves; the path stays the real one', () => {
    // a zero-width space, a right-to-left override, an escape and a tab; accents and CJK show as themselves
    expect(locateRun('/r', '/r/prod-gr\u200bpo/a\u202egol/learning.log')).toEqual({
      name: 'prod-gr\\u{200b}po/a\\u{202e}gol',
      dir: '/r/prod-gr\u200bpo/a\u202egol',
      relPath: 'learning.log',
    });
    expect(locateRun('/r', '/r/x\x1b[2Jy\tz/learning.log').name).toBe('x\\u{1b}[2Jy\\u{9}z');
    expect(locateRun('/r', '/r/café-日本/learning.log').name).toBe('café-日本');
    expect(locateRun('/data/grpo\u2066', '/data/grpo\u2066/learning.log', 'gpu-a').name).toBe('gpu-a/grpo\\u{2066}');
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

describe('TensorBoard event files', () => {
  it("give the Trainer's runs/<date>_<host>/ event files to the output_dir above them", () => {
    expect(locateRun('/r', '/r/grpo-7b/runs/Nov22_15-35-13_gpu01/events.out.tfevents.1763825713.gpu01.42.0')).toEqual({
      name: 'grpo-7b',
      dir: '/r/grpo-7b',
      relPath: 'runs/Nov22_15-35-13_gpu01/events.out.tfevents.1763825713.gpu01.42.0',
    });
  });

  it('leave other files under a runs/ folder in their own directory', () => {
    expect(locateRun('/r', '/r/runs/exp1/learning.log').name).toBe('runs/exp1');
    expect(locateRun('/r', '/r/openrlhf/tb/events.out.tfevents.1.h.2.0').name).toBe('openrlhf/tb');
  });

  it('are candidates, as are stderr captures and completion tables', () => {
    for (const name of ['events.out.tfevents.1763825713.gpu01.42.0', 'job.err', 'completions_00040.parquet']) {
      expect(CANDIDATE_FILE.test(name)).toBe(true);
    }
    expect(CANDIDATE_FILE.test('train-00000-of-00001.parquet')).toBe(false);
    expect(CANDIDATE_FILE.test('model.safetensors')).toBe(false);
  });
});
