/** `run logs`: the tail of a run's console log, cleaned of control characters, read only inside the watched roots. */
import { closeSync, readSync } from 'node:fs';
import { basename, relative, sep } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { cleanLine } from '../ingest/formats/common.ts';
import { FORMATS } from '../ingest/formats/index.ts';
import { isUnder, openInsideRoots, OutsideRoots, ReplacedWhileOpened } from '../ingest/discover/insideRoots.ts';
import { visibleName } from '../ingest/discover/runLocator.ts';
import type { FileRow } from '../store/files.ts';
import { DEFAULT_LINES, MAX_LINES, resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/** read from the end of the file: enough for MAX_LINES lines of ordinary length */
const TAIL_BYTES = 256 * 1024;
const LINE_CHARS = 1000;

const TEXT_NAME = /\.(log|out|err|txt)$/i;
/** A console-like log: captured stdout/stderr (a `textLog` format), or any other file of lines named as a log is
 * (`learning.log`, whose format reads its metric lines but is a trainer's console all the same). */
const isTextLog = (f: FileRow): boolean =>
  FORMATS.some((x) => x.id === f.format && x.kind === 'lines' && (x.textLog === true || TEXT_NAME.test(f.path)));

/** The roots a run's files are read under (insideRoots.ts): the watched roots that hold its folder; where none is
 * known (the CLI on a database without a config, `start DIR`), the run's own folder. */
const rootsOf = (runPath: string, roots: readonly string[] = []): string[] => {
  const holding = roots.filter((r) => isUnder(runPath, r));
  return holding.length > 0 ? holding : [runPath];
};

/** The last `n` lines of a file, without ANSI colours or other control characters. */
function tail(path: string, n: number, roots: readonly string[]): string[] {
  const opened = openInsideRoots(path, roots);
  if (!opened) throw new UserError('not a regular file');
  const { fd } = opened;
  try {
    const { size } = opened.st;
    const start = Math.max(0, size - TAIL_BYTES);
    const buf = Buffer.alloc(size - start);
    const got = readSync(fd, buf, 0, buf.length, start);
    const lines = buf.toString('utf8', 0, got).split(/\r\n|\n|\r/);
    if (start > 0) lines.shift(); // the first is probably a part of a line
    if (lines[lines.length - 1] === '') lines.pop();
    return lines.slice(-n).map((l) => {
      const clean = cleanLine(l).replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '?');
      return clean.length > LINE_CHARS ? `${clean.slice(0, LINE_CHARS)}…` : clean;
    });
  } finally {
    closeSync(fd);
  }
}

/** `run logs [run] [--lines N] [--file F]`: the tail of the run's console log (by default the captured output that
 * grew last; a job whose stderr keeps growing with warnings needs `--file job.out` to see its stdout). Files are
 * named relative to the run's directory: no server path goes to chat. */
export async function runLogs(
  { store, seesRun, config }: CommandContext,
  args: { run?: string; lines?: number; file?: string },
): Promise<Reply> {
  const run = await resolveRun(store, args.run, seesRun);
  const n = Math.min(MAX_LINES, Math.max(1, args.lines ?? DEFAULT_LINES));
  // a file's name is shown as its run's is (runLocator.ts `visibleName`), and so asked for
  const named = (f: FileRow): string => visibleName(relative(run.path, f.path).split(sep).join('/'));
  const logs = (await store.files.ofRun(run.id)).filter(isTextLog).sort((a, b) => (b.grew_at ?? 0) - (a.grew_at ?? 0));
  if (logs.length === 0)
    throw new UserError(`${run.name} has no console log (captured stdout such as *.log, *.out, nohup.out)`);
  const wanted = args.file;
  const asked = (f: FileRow): boolean => named(f) === wanted || visibleName(basename(f.path)) === wanted;
  const file = wanted === undefined ? logs[0] : logs.find(asked);
  if (!file)
    throw new UserError(`${run.name} has no console log named ${wanted}; it has ${logs.map(named).join(', ')}`);
  const rel = named(file);
  const others = logs.filter((f) => f !== file).map(named);
  let lines: string[];
  try {
    lines = tail(file.path, n, rootsOf(run.path, config?.watch.roots));
  } catch (err) {
    // a link planted where the log was, leading out of the roots: refused, and nothing of where it leads is said
    if (err instanceof OutsideRoots) throw new UserError(`${run.name}'s ${rel} is not read: ${err.reason}`);
    const said = err instanceof UserError || err instanceof ReplacedWhileOpened;
    const why = said ? err.message : ((err as NodeJS.ErrnoException).code ?? 'error');
    throw new UserError(`cannot read ${run.name}'s ${rel}: ${why}`);
  }
  return {
    title: `${run.name}: the last ${lines.length} line${lines.length === 1 ? '' : 's'} of ${rel}`,
    fields: [],
    lines: [
      ...(lines.length === 0 ? ['(the file is empty)'] : []),
      ...(others.length > 0 ? [`Other console logs (file=NAME): ${others.join(', ')}`] : []),
    ],
    blocks: lines.length === 0 ? [] : [{ title: rel, code: lines.join('\n'), tail: true }],
    data: { run: run.name, file: rel, lines, others },
  };
}
