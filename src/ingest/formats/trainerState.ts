/**
 * Hugging Face Trainer's `trainer_state.json` (also one per `checkpoint-N/`), rewritten whole on every save:
 * one metric record per `log_history` entry, keyed by its `step`.
 */
import type { DocumentFormat, ParseResult } from '../records.ts';
import { PARSER_ERROR, bad, baseName, cleanLine, isRecord, metricFromObject, parseJson } from './common.ts';

function parse(text: string): ParseResult[] {
  // Trainer may be mid-write: the pipeline re-reads the file on its next change
  const parsed = parseJson(cleanLine(text));
  if (parsed === undefined) return [bad('invalid JSON')];
  const history = isRecord(parsed.value) ? parsed.value['log_history'] : undefined;
  if (!Array.isArray(history)) return [bad('no log_history')];
  const results = history.map((entry) => (isRecord(entry) ? metricFromObject(entry) : bad('not a JSON object')));
  const facts = stateFacts(parsed.value as Record<string, unknown>);
  if (facts) results.push(facts);
  return results;
}

/** Where the Trainer stands: `global_step` of `max_steps` (finished when they meet), for the run's events. */
const FACT_KEYS = ['max_steps', 'global_step', 'logging_steps', 'num_train_epochs'] as const;

function stateFacts(state: Record<string, unknown>): ParseResult | undefined {
  const values: Record<string, number> = {};
  for (const key of FACT_KEYS) {
    const v = state[key];
    if (typeof v === 'number' && Number.isFinite(v)) values[key] = v;
  }
  if (Object.keys(values).length === 0) return undefined;
  return { kind: 'event', record: { kind: 'meta', title: 'trainer state', text: 'trainer_state.json', values } };
}

export const trainerState: DocumentFormat = {
  id: 'trainerState',
  kind: 'document',
  detect: (file, head) => {
    if (baseName(file.relPath) !== 'trainer_state.json') return 'no';
    const start = cleanLine(head).trimStart();
    if (start.length === 0) return 'later';
    return start.startsWith('{') ? 'yes' : 'no';
  },
  parse: (text) => {
    try {
      return parse(text);
    } catch {
      return [bad(PARSER_ERROR)];
    }
  },
};
