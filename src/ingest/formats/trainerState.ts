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
  return history.map((entry) => (isRecord(entry) ? metricFromObject(entry) : bad('not a JSON object')));
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
