/** The log formats rlwatch reads, in detection order, and the detection entry point. */
import type { FileInfo, Format } from '../records.ts';
import { batchMetrics } from './batchMetrics.ts';
import { completions } from './completions.ts';
import { consoleLog } from './console/console.ts';
import { jsonlMetrics } from './jsonlMetrics.ts';
import { learningLog } from './learningLog.ts';
import { parquetCompletions } from './parquetCompletions.ts';
import { rewardBreakdown } from './rewardBreakdown.ts';
import { tfEvents } from './tfevents/tfEvents.ts';
import { trainerState } from './trainerState.ts';
import { verlRollout } from './verlRollout.ts';

/** Specific names before catch-alls: `completions.jsonl` is not `jsonlMetrics`, `learning.log` is not `console`. */
export const FORMATS: readonly Format[] = [
  learningLog,
  batchMetrics,
  completions,
  rewardBreakdown,
  verlRollout,
  trainerState,
  tfEvents,
  parquetCompletions,
  jsonlMetrics,
  consoleLog,
];

/**
 * The first format that does not answer `no` decides: `later` from an earlier format holds the file back
 * rather than letting a catch-all further down claim it. null: not a log file rlwatch reads.
 */
export function detectFormat(file: FileInfo, head: string): { format: Format } | 'later' | null {
  for (const format of FORMATS) {
    let answer: 'yes' | 'no' | 'later';
    try {
      answer = format.detect(file, head);
    } catch {
      answer = 'no';
    }
    if (answer === 'yes') return { format };
    if (answer === 'later') return 'later';
  }
  return null;
}
