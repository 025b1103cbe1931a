/**
 * Generations with their reward, `reward_logs/completions.jsonl` (or any `completions*.jsonl`): `{"problem_id": "p17",
 * "reward": 0.35, "base_reward": 0.5, "length": 895, "is_degenerate": false, "completion": "..."}`.
 */
import type { LineFormat } from '../records.ts';
import { baseName, detectJsonl, exampleLines, textOf, type ExampleFields } from './common.ts';

const FIELDS: ExampleFields = {
  completion: ['completion'],
  reward: ['reward', 'total_reward', 'score'],
  prompt: ['prompt'],
  id: ['problem_id'],
};

export const completions: LineFormat = {
  id: 'completions',
  kind: 'lines',
  detect: (file, head) =>
    /^completions.*\.jsonl$/.test(baseName(file.relPath))
      ? detectJsonl(head, (obj) => textOf(obj['completion']) !== undefined, true)
      : 'no',
  open: exampleLines(FIELDS),
  independentLines: true,
};
