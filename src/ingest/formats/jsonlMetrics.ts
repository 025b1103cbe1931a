/**
 * Any other `*.jsonl` metric log: TRL-style keys, verl's file logger `{"step": N, "data": {...}}`,
 * ms-swift `logging.jsonl` (quoted numbers, `"global_step/max_steps": "10/1000"`), flat `{step?, name: number}`.
 */
import type { LineFormat } from '../records.ts';
import { isCanonicalMetric } from '../metricNames.ts';
import { baseName, detectJsonl, isRecord, jsonLines, looksLikeExample, metricFromObject } from './common.ts';

/** Names the example formats own: if their content is not examples, it is not a metric log either. */
const EXAMPLE_FILE = /^completions.*\.jsonl$|_breakdown\.jsonl$/;

function hasJsonNumber(obj: Record<string, unknown>): boolean {
  return Object.values(obj).some((v) => typeof v === 'number' || (isRecord(v) && hasJsonNumber(v)));
}

function isMetricLog(obj: Record<string, unknown>): boolean {
  // a generations dump has a numeric reward too, and would pollute the `reward` series
  if (looksLikeExample(obj)) return false;
  const result = metricFromObject(obj);
  if (result.kind !== 'metric') return false;
  // quoted numbers alone do not make a metric log (dataset rows hold `"answer": "4"`); ms-swift quotes known names
  const { step, values } = result.record;
  return step !== undefined || [...values.keys()].some(isCanonicalMetric) || hasJsonNumber(obj);
}

export const jsonlMetrics: LineFormat = {
  id: 'jsonlMetrics',
  kind: 'lines',
  detect: (file, head) => {
    const name = baseName(file.relPath);
    if (!name.toLowerCase().endsWith('.jsonl') || EXAMPLE_FILE.test(name)) return 'no';
    return detectJsonl(head, isMetricLog);
  },
  open: () => jsonLines(metricFromObject),
  independentLines: true,
};
