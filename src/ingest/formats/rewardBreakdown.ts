/**
 * Per-component rewards, `reward_logs/<reward>_breakdown.jsonl`: `{"problem_id": "p17", "total_reward": 0.35,
 * "type_check": 0.2, "compile": 0.1, "tests": 0.0, ..., "preview": "<first 200 chars of the completion>"}`.
 * The key is computed from `preview`, so the line merges with its completions.jsonl line.
 */
import type { LineFormat } from '../records.ts';
import { baseName, detectJsonl, exampleLines, textOf, type ExampleFields } from './common.ts';

const FIELDS: ExampleFields = {
  completion: ['preview', 'completion'],
  reward: ['total_reward', 'reward'],
  prompt: ['prompt'],
  id: ['problem_id'],
};

export const rewardBreakdown: LineFormat = {
  id: 'rewardBreakdown',
  kind: 'lines',
  detect: (file, head) =>
    baseName(file.relPath).endsWith('_breakdown.jsonl')
      ? detectJsonl(head, (obj) => FIELDS.completion.some((k) => textOf(obj[k]) !== undefined), true)
      : 'no',
  open: exampleLines(FIELDS),
  independentLines: true,
};
