/**
 * verl's `rollout_data_dir/<step>.jsonl`: `{"input": "...", "output": "...", "gts": ..., "score": 1.0, "step": 34,
 * ...reward_extra_infos such as "acc"}`. The lines carry no problem id: the prompt hash stands in.
 */
import type { LineFormat } from '../records.ts';
import { baseName, detectJsonl, exampleLines, type ExampleFields } from './common.ts';

const FIELDS: ExampleFields = {
  completion: ['output'],
  reward: ['score', 'reward'],
  prompt: ['input'],
  id: ['uid', 'problem_id'],
  idFromPrompt: true,
};

export const verlRollout: LineFormat = {
  id: 'verlRollout',
  kind: 'lines',
  detect: (file, head) =>
    /^\d+\.jsonl$/.test(baseName(file.relPath))
      ? detectJsonl(head, (obj) => typeof obj['output'] === 'string', true)
      : 'no',
  open: exampleLines(FIELDS),
  independentLines: true,
};
