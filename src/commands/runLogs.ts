import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { basename, relative, sep } from 'node:path';
import { UserError } from '../errors.ts';
import { DEFAULT_LINES, MAX_LINES } from './registry.ts';
import { cleanLine } from '../ingest/formats/common.ts';
import { FORMATS } from '../ingest/formats/index.ts';
import type { FileRow } from '../store/files.ts';
import { resolveRun, type CommandContext, type Reply } from './reply.ts';

/** read from the end of the file: enough for MAX_LINES lines of ordinary length */
const TAIL_BYTES = 256 * 1024;
const LINE_CHARS = 1000;

const isTextLog = (f: FileRow): boolean => FORMATS.some((x) => x.id === f.format && x.kind === 'lines' && x.textLog === true);

/** The last `n` lines of a file, without ANSI colours or other control characters. */
function tail(path: string, n: number): string[] {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
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
  { store, seesRun }: CommandContext, args: { run?: string; lines?: number; file?: string },
): Promise<Reply> {
  const run = await resolveRun(store, args.run, seesRun);
  const n = Math.min(MAX_LINES, Math.max(1, args.lines ?? DEFAULT_LINES));
  const named = (f: FileRow): string => relative(run.path, f.path).split(sep).join('/');
  const logs = (await store.filesOfRun(run.id)).filter(isTextLog).sort((a, b) => (b.grew_at ?? 0) - (a.grew_at ?? 0));
  if (logs.length === 0) throw new UserError(`${run.name} has no console log (captured stdout such as *.log, *.out, nohup.out)`);
  const wanted = args.file;
  const file = wanted === undefined ? logs[0] : logs.find((f) => named(f) === wanted || basename(f.path) === wanted);
  if (!file) throw new UserError(`${run.name} has no console log named ${wanted}; it has ${logs.map(named).join(', ')}`);
  const rel = named(file);
  const others = logs.filter((f) => f !== file).map(named);
  let lines: string[];
  try {
    lines = tail(file.path, n);
  } catch (err) {
    throw new UserError(`cannot read ${run.name}'s ${rel}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
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
