/**
 * Worst-case lines through every line format's parser: a long line must cost time linear in its length (a
 * backtracking regex over a 160 KB line froze the watcher for seconds). Each line is parsed by each format, best of 15
 * (the first parses pay V8's compilation, and the machine is shared: with 5, the 10,000-field JSON line, a 12-22 ms
 * parse that is mostly allocating its points, read 71-130 ms/MB on the same code; with 15, 71-80). The figure is
 * milliseconds per MB of line, the target at most 100 ms/MB for every line and format.
 * Run alone: `node --import tsx bench/worstCase.ts`.
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { FORMATS } from '../src/ingest/formats/index.ts';

export const WORST_TARGET_MS_PER_MB = 100;
const MB = 1e6;
const REPEAT = 15;

const fields = (n: number, field: (i: number) => string, sep: string): string =>
  Array.from({ length: n }, (_, i) => field(i)).join(sep);

/** The hostile lines: long runs without separators, many fields in each format's syntax, deep nesting. */
export function worstCaseLines(): Array<{ name: string; line: string }> {
  return [
    { name: '160 KB without separators', line: 'deadbeef'.repeat(20_000) },
    { name: '8 MB without separators', line: 'deadbeef'.repeat(1_000_000) },
    { name: '8 MB of name characters', line: 'a/b.c-d_'.repeat(1_000_000) },
    { name: '8 MB of spaces then x', line: `${' '.repeat(8_000_000)}x` },
    { name: '10,000 fields k=v', line: fields(10_000, (i) => `k${i}=${i}.5`, '  ') },
    { name: '10,000 fields JSON', line: `{${fields(10_000, (i) => `"k${i}": ${i}.5`, ', ')}}` },
    { name: '10,000 fields Python dict', line: `{${fields(10_000, (i) => `'k${i}': np.float64(${i}.5)`, ', ')}}` },
    { name: '10,000 fields verl', line: `step:1 - ${fields(10_000, (i) => `a/k${i}:${i}.5`, ' - ')}` },
    { name: 'deep JSON (100,000 levels)', line: `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}` },
    { name: 'deep JSON arrays (1,000,000)', line: `{"x":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}` },
    { name: 'unclosed np.float64( + 1 MB spaces', line: `{'loss': np.float64(${' '.repeat(MB)}x` },
    {
      name: 'np.float64( 1 MB of spaces )',
      line: `{'loss': np.float64(${' '.repeat(MB / 2)}a${' '.repeat(MB / 2)}b)c, 'x': 1}`,
    },
  ];
}

export interface WorstCaseRow {
  line: string;
  format: string;
  bytes: number;
  ms: number;
  msPerMB: number;
}

export interface WorstCaseResult {
  rows: WorstCaseRow[];
  worst: WorstCaseRow;
  pass: boolean;
}

export function runWorstCase(): WorstCaseResult {
  const rows: WorstCaseRow[] = [];
  for (const { name, line } of worstCaseLines()) {
    const bytes = Buffer.byteLength(line);
    for (const format of FORMATS) {
      if (format.kind !== 'lines') continue;
      const parse = format.open({ relPath: 'run.log' });
      const times: number[] = [];
      for (let i = 0; i < REPEAT; i++) {
        const t0 = performance.now();
        parse(line);
        times.push(performance.now() - t0);
      }
      const ms = Math.min(...times);
      rows.push({ line: name, format: format.id, bytes, ms, msPerMB: ms / (bytes / MB) });
    }
  }
  const worst = rows.reduce((a, b) => (b.msPerMB > a.msPerMB ? b : a));
  return { rows, worst, pass: worst.msPerMB <= WORST_TARGET_MS_PER_MB };
}

/** One row per line: its size, the slowest format on it, and that format's ms per MB. */
export function formatWorstCaseReport(r: WorstCaseResult): string {
  const out = [`worst-case lines through every line format (target <= ${WORST_TARGET_MS_PER_MB} ms/MB per line)`];
  const byLine = new Map<string, WorstCaseRow[]>();
  for (const row of r.rows) byLine.set(row.line, [...(byLine.get(row.line) ?? []), row]);
  for (const [line, rows] of byLine) {
    const slow = rows.reduce((a, b) => (b.msPerMB > a.msPerMB ? b : a));
    const total = rows.reduce((n, x) => n + x.ms, 0);
    out.push(
      `  ${line.padEnd(38)} ${(slow.bytes / MB).toFixed(2).padStart(6)} MB  all formats ${total.toFixed(1).padStart(7)} ms` +
        `  slowest ${slow.format.padEnd(14)} ${slow.msPerMB.toFixed(1).padStart(7)} ms/MB`,
    );
  }
  out.push(
    `  worst: ${r.worst.format} on ${r.worst.line}: ${r.worst.msPerMB.toFixed(1)} ms/MB  ${r.pass ? 'PASS' : 'FAIL'}`,
  );
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  process.stdout.write(`${formatWorstCaseReport(runWorstCase())}\n`);
