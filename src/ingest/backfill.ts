/**
 * `backfill`'s ingest: every file already under the roots read once, parsed in a worker thread while this one
 * writes and runs the rules, summed up at the end.
 */
import { statSync } from 'node:fs';
import { discoverFiles, readElsewhere } from './discover/discover.ts';
import { DatabaseError } from '../store/dbErrors.ts';
import { DatabaseFullError, type FileOutcome, type Ingestor } from './ingestor.ts';
import { ParseThread } from './threads/parseThread.ts';

export interface BackfillSummary {
  runs: string[];
  files: FileOutcome[];
  bytes: number;
  records: number;
  lines: number;
  skips: Record<string, number>;
}

export interface BackfillProgress {
  total: number;
  done: number;
}

/** Ingests everything already under `roots` once, file by file, and sums up what it found. Lines are parsed in a
 * worker thread (`thread`, closed at the end) while this one writes what was parsed before and runs the rules on it.
 * A caller that starts the thread early has its start-up overlap its own (opening the database, loading the rules). */
export async function backfill(
  ingestor: Ingestor,
  roots: readonly string[],
  opts: { depth: number; ignore?: readonly string[] },
  onProgress: (p: BackfillProgress) => void = () => {},
  thread: ParseThread = new ParseThread(),
): Promise<BackfillSummary> {
  const work = roots.flatMap((root) =>
    discoverFiles(root, opts.depth, opts.ignore)
      .filter((path) => !readElsewhere(path, roots))
      .map((path) => ({ root, path, size: sizeOf(path) })),
  );
  const total = work.reduce((n, w) => n + w.size, 0);
  const summary: BackfillSummary = { runs: [], files: [], bytes: 0, records: 0, lines: 0, skips: {} };
  const runs = new Set<string>();
  let done = 0;
  const add = (outcome: FileOutcome): void => {
    runs.add(outcome.run);
    summary.files.push(outcome);
    summary.bytes += outcome.bytes;
    summary.records += outcome.records;
    summary.lines += outcome.lines;
    for (const [reason, n] of Object.entries(outcome.skips)) summary.skips[reason] = (summary.skips[reason] ?? 0) + n;
  };
  ingestor.useParseThread(thread);
  try {
    for (const w of work) {
      let outcome: FileOutcome | null;
      try {
        outcome = await ingestor.ingest(w.path, w.root);
      } catch (err) {
        if (!(err instanceof DatabaseFullError)) throw err;
        add(err.outcome);
        throw new DatabaseError(
          'full',
          `the database's disk is full: this backfill stored ${summary.records.toLocaleString('en')} records ` +
            `(${(summary.bytes / 1e6).toFixed(1)} MB of ${(total / 1e6).toFixed(1)} MB of logs) before it filled; ` +
            'free some space and run the same backfill again: it goes on where this one stopped',
        );
      }
      done += w.size;
      onProgress({ total, done });
      if (outcome) add(outcome);
    }
  } finally {
    ingestor.useParseThread(null);
    await thread.close();
  }
  summary.runs = [...runs].sort();
  return summary;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
