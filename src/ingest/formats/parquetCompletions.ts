/**
 * TRL's `completions/completions_<step>.parquet` (`log_completions`): one table per logging step with the columns
 * `step`, `prompt`, `completion`, one column per reward function and `advantage`. Each row is a generation of
 * that step; its reward is a total column when the table has one, else the sum of the reward-function columns
 * (TRL weights them equally unless `reward_weights` says otherwise), and those columns are its breakdown.
 */
import type { ExampleRecord, FileInfo, ParseResult, TableFormat } from '../records.ts';
import { bad, baseName, exampleKey, isRecord, shortHash, textOf, toStep } from './common.ts';

/** Columns that hold the total reward, when a writer adds one. */
const TOTAL = ['reward', 'total_reward', 'rewards'];
/** Numeric columns that are not rewards. */
const NOT_REWARD = new Set(['step', 'advantage', 'advantages', 'index', '__index_level_0__']);
const MAGIC = 'PAR1';

const stepOfName = (relPath: string): number | undefined => {
  const m = /_(\d+)\.parquet$/.exec(baseName(relPath));
  return m ? Number(m[1]) : undefined;
};

const numeric = (v: unknown): number | undefined =>
  typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : undefined;

function exampleOf(row: Record<string, unknown>, fileStep: number | undefined): ParseResult {
  const completion = textOf(row['completion']);
  if (completion === undefined) return bad('no completion text');
  const prompt = textOf(row['prompt']);
  const breakdown: Record<string, number> = {};
  let total: number | undefined;
  for (const [key, v] of Object.entries(row)) {
    const n = numeric(v);
    if (n === undefined || NOT_REWARD.has(key)) continue;
    if (TOTAL.includes(key)) total ??= n;
    else breakdown[key] = n;
  }
  const parts = Object.values(breakdown);
  const reward = total ?? (parts.length > 0 ? parts.reduce((a, b) => a + b, 0) : undefined);
  if (reward === undefined) return bad('no reward');
  const record: ExampleRecord = { key: exampleKey(shortHash(prompt ?? ''), completion), completion, reward, breakdown };
  const step = toStep(typeof row['step'] === 'bigint' ? Number(row['step']) : row['step']) ?? fileStep;
  if (step !== undefined) record.step = step;
  if (prompt !== undefined) record.prompt = prompt;
  return { kind: 'example', record };
}

async function read(bytes: Uint8Array, file: FileInfo): Promise<ParseResult[]> {
  const tail = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1', bytes.length - 4);
  // the footer (and its closing magic) is written last: without it the writer is not done yet
  if (bytes.length < 12 || tail !== MAGIC) return [bad('parquet file incomplete')];
  let rows: Array<Record<string, unknown>>;
  try {
    const table = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    // loaded on the first parquet file: a CLI command that never reads one does not pay for the reader
    const { parquetReadObjects } = await import('hyparquet');
    rows = await parquetReadObjects({ file: table });
  } catch {
    return [bad('unreadable parquet')];
  }
  const fileStep = stepOfName(file.relPath);
  return rows.map((row) => (isRecord(row) ? exampleOf(row, fileStep) : bad('not a row')));
}

export const parquetCompletions: TableFormat = {
  id: 'parquetCompletions',
  kind: 'table',
  detect: (file, head) => {
    if (!/^completions.*\.parquet$/.test(baseName(file.relPath))) return 'no';
    if (head.length < MAGIC.length) return 'later';
    return head.startsWith(MAGIC) ? 'yes' : 'no';
  },
  read,
};
