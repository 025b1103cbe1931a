/**
 * `files`, and the unread summary `backfill` and `start` print: which log files rlwatch reads per run, with what
 * format and how far, and which lines or files it could not read and why.
 */
import { existsSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { FORMATS } from '../ingest/formats/index.ts';
import type { RunRow, StoreContract } from '../store/contract.ts';
import { resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

export interface ReadFile {
  /** relative to the run directory: a chat reply never shows the server's absolute paths */
  path: string;
  format: string;
  offset: number;
  size: number;
  lines: number;
  records: number;
  skipped: number;
  /** lines that parsed as nothing, by reason, most frequent first, with the last such line (cut; untrusted text) */
  skips: Array<{ reason: string; count: number; example: string }>;
}

export interface RunFiles {
  run: string;
  files: ReadFile[];
  /** files that look like logs but that no format claims (yet), with why */
  unread: Array<{ path: string; reason: string; size: number }>;
}

const relPath = (dir: string, path: string): string => relative(dir, path).split(sep).join('/');

/** Captured stdout is claimed by its name, before its content is known: one that has shown no metric line
 * yet is read, but not understood, and is said so like a file no format claims. */
const STDOUT_FORMATS: ReadonlySet<string> = new Set(
  FORMATS.filter((f) => f.kind === 'lines' && f.textLog).map((f) => f.id),
);
const noMetrics = (f: Pick<ReadFile, 'format' | 'lines' | 'records'>): boolean =>
  STDOUT_FORMATS.has(f.format) && f.records === 0 && f.lines > 0;
const noMetricsText = (f: Pick<ReadFile, 'lines'>): string => `no metric line in ${plural(f.lines, 'line')} read`;

/** What rlwatch reads of each run (or of `run`), and what it could not. */
export async function runFiles(
  store: StoreContract,
  run?: string,
  seesRun: (run: string) => boolean = () => true,
): Promise<RunFiles[]> {
  const unread = (await store.unread.list(run)).filter((u) => existsSync(u.path) && seesRun(u.run));
  const names = new Set(unread.map((u) => u.run));
  let runs: RunRow[];
  if (run === undefined) runs = (await store.runs.list()).filter((r) => seesRun(r.name));
  else if (names.has(run) && !(await store.runs.byName(run)))
    runs = []; // only unread files: no run row, still named
  else runs = [await resolveRun(store, run, seesRun)];
  for (const r of runs) names.add(r.name);
  const out: RunFiles[] = [];
  for (const name of [...names].sort()) {
    const row = runs.find((r) => r.name === name);
    const files: ReadFile[] = [];
    for (const f of row ? await store.files.ofRun(row.id) : []) {
      files.push({
        path: relPath(row!.path, f.path),
        format: f.format,
        offset: f.offset,
        size: f.size,
        lines: f.lines,
        records: f.records,
        skipped: f.skipped,
        skips: f.skipped > 0 ? skipsOf(await store.files.skipsOf(f.id)) : [],
      });
    }
    out.push({
      run: name,
      files,
      unread: unread.filter((u) => u.run === name).map((u) => ({ path: u.rel_path, reason: u.reason, size: u.size })),
    });
  }
  return out;
}

const plural = (n: number, word: string): string => `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
/** what an example line is cut to in a one-line summary */
const EXAMPLE_CHARS = 80;
const skipsOf = (rows: ReadonlyArray<{ reason: string; count: number; sample: string }>): ReadFile['skips'] =>
  rows.map(({ reason, count, sample }) => ({ reason, count, example: sample }));
const exampleText = (example: string): string =>
  example === ''
    ? ''
    : `, e.g. ${JSON.stringify(example.length > EXAMPLE_CHARS ? `${example.slice(0, EXAMPLE_CHARS)}…` : example)}`;
/** `3 lines skipped (2 × dict line not read (cut off or nested), e.g. "{'loss': 0.1, 'gr"; 1 × ...)`: the count
 * before the reason, so that it is never read as a line number */
const skipText = (f: Pick<ReadFile, 'skipped' | 'skips'>): string =>
  `${plural(f.skipped, 'line')} skipped (${f.skips.map((s) => `${s.count} × ${s.reason}${exampleText(s.example)}`).join('; ')})`;

/** `files [run]`: each run's files with format, offset, records and skipped lines, and the files not read. */
export async function files({ store, seesRun }: CommandContext, args: { run?: string }): Promise<Reply> {
  const report = await runFiles(store, args.run, seesRun);
  const read = report.reduce((n, r) => n + r.files.length, 0);
  const unread = report.reduce((n, r) => n + r.unread.length, 0);
  return {
    title:
      `${plural(read, 'file')} read in ${plural(report.length, 'run')}` + (unread > 0 ? `, ${unread} not read` : ''),
    fields: [],
    lines: report.map(
      (r) =>
        `${r.run}: ${plural(r.files.length, 'file')}, ${plural(
          r.files.reduce((n, f) => n + f.records, 0),
          'record',
        )}` +
        `, ${plural(
          r.files.reduce((n, f) => n + f.skipped, 0),
          'line',
        )} skipped, ${r.unread.length} not read`,
    ),
    // file names are untrusted text: a code block keeps them inert in chat
    blocks: report.map((r) => ({
      title: r.run,
      code:
        [
          ...r.files.map(
            (f) =>
              `${f.path}  ${f.format}  offset ${f.offset.toLocaleString('en')}/${f.size.toLocaleString('en')}` +
              `  ${plural(f.records, 'record')}` +
              (f.skipped > 0 ? `  ${skipText(f)}` : '') +
              (noMetrics(f) ? `  ${noMetricsText(f)}` : ''),
          ),
          ...r.unread.map((u) => `${u.path}  not read: ${u.reason}`),
        ].join('\n') || '(no files)',
    })),
    data: report,
  };
}

/**
 * What `backfill` and `start` say about the runs under `roots`: every file that looks like a log but is not
 * read, and every file with lines that parsed as nothing (how many, and why). Empty when all was read. Past
 * `limit` lines (a folder of text data files) the rest is counted and left to `rlwatch files`. A watcher on
 * PostgreSQL passes its `scope`: another host's run may sit at the same path, and its files are not this host's.
 */
export async function unreadSummary(
  store: StoreContract,
  roots: readonly string[],
  opts: { limit?: number; scope?: string } = {},
): Promise<string[]> {
  const { limit = 20, scope } = opts;
  const under = (path: string): boolean => roots.some((root) => path === root || path.startsWith(root + sep));
  const ours = (row: { scope?: string }): boolean => scope === undefined || (row.scope ?? '') === scope;
  const out: string[] = [];
  for (const u of await store.unread.list()) {
    // an empty file has said nothing yet (a run just starting): `rlwatch files` lists it, a warning would be noise
    if (u.size > 0 && ours(u) && under(u.path) && existsSync(u.path)) {
      out.push(`not read: ${u.run}/${u.rel_path} (${u.reason})`);
    }
  }
  for (const run of await store.runs.list()) {
    if (!ours(run)) continue;
    for (const f of await store.files.ofRun(run.id)) {
      if (!under(f.path)) continue;
      if (noMetrics(f)) out.push(`not understood: ${run.name}/${relPath(run.path, f.path)} (${noMetricsText(f)})`);
      if (f.skipped === 0) continue;
      const skips = skipsOf(await store.files.skipsOf(f.id));
      out.push(`unparsed lines: ${run.name}/${relPath(run.path, f.path)}: ${skipText({ skipped: f.skipped, skips })}`);
    }
  }
  if (out.length <= limit) return out;
  return [...out.slice(0, limit), `... and ${out.length - limit} more: rlwatch files lists them all`];
}
