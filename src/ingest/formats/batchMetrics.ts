/** `batch_metrics.jsonl` of the OCaml GRPO trainer: `{"pass_at_1": 0.375, "pass_at_all": 0.5, "batch_size": 24}`. */
import type { LineFormat } from '../records.ts';
import { baseName, detectJsonl, jsonLines, metricFromObject } from './common.ts';

export const batchMetrics: LineFormat = {
  id: 'batchMetrics',
  kind: 'lines',
  detect: (file, head) => (baseName(file.relPath) === 'batch_metrics.jsonl' ? detectJsonl(head, () => true) : 'no'),
  open: () => jsonLines(metricFromObject),
  independentLines: true,
};
