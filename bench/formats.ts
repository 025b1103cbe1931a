/**
 * Parse throughput of the stdout readers on generated files, without SQLite: the generic key-value reader (minimind
 * and DeepSpeed-Chat lines), TRL dict lines behind tqdm bars, verl lines, and the R1-Zero GRPO logging guide's
 * callback blocks, each read by the console format as the tailer hands it lines. Plus the worst case: one 1 MB line
 * without a separator, which every reader must get through in linear time.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { callbackRun } from '../scripts/make-callback-sample.ts';
import { consoleLog } from '../src/ingest/formats/console/console.ts';
import { readKeyValueLine } from '../src/ingest/formats/console/keyValue.ts';
import { parseNumber } from '../src/ingest/metricNames.ts';
import { rng } from './generate.ts';

const MB = 1e6;

export interface FormatFigure {
  shape: string;
  bytes: number;
  lines: number;
  points: number;
  seconds: number;
  mbPerSec: number;
  pointsPerSec: number;
}

export interface FormatsResult {
  figures: FormatFigure[];
  /** ms to refuse one 1 MB line without separators */
  worstLineMs: { keyValue: number; console: number };
  seconds: number;
}

type LineMaker = (i: number, rand: () => number) => string;

const SHAPES: Array<[shape: string, make: LineMaker]> = [
  [
    'generic: minimind',
    (i, r) =>
      `Epoch:[1/1](${i}/1000000), Reward: ${(r() * 4 - 2).toFixed(4)}, KL_ref: ${(r() * 0.1).toFixed(4)}, Adv Std: 0.9256, ` +
      `Adv Mean: 0.0000, Actor Loss: ${(r() * 0.1).toFixed(4)}, Avg Response Len: ${(r() * 300).toFixed(2)}, Learning Rate: 0.00000030`,
  ],
  [
    'generic: DeepSpeed-Chat',
    (i, r) =>
      i % 2 === 0
        ? `epoch: 0|step: ${i}|ppo_ep: 1|act_loss: ${r()}|cri_loss: ${r()}|unsuper_loss: 0.0`
        : `average reward score: ${r() * 5}`,
  ],
  [
    'console: TRL dict behind tqdm',
    (i, r) =>
      ` 10%|█         | ${i}/1000000 [01:07<09:21, 12.48s/it]{'loss': '${r().toPrecision(4)}', 'grad_norm': '${r().toPrecision(4)}', ` +
      `'learning_rate': '9.583e-06', 'completions/mean_length': '257.3', 'rewards/accuracy_reward/mean': '${r().toPrecision(3)}', ` +
      `'reward': '${r().toPrecision(3)}', 'reward_std': '0.07071', 'frac_reward_zero_std': '0.8', 'entropy': '0.137', 'epoch': '0.1'}`,
  ],
  [
    'console: verl',
    (i, r) =>
      `\x1b[36m(TaskRunner pid=1)\x1b[0m step:${i} - actor/entropy:${r()} - actor/pg_loss:${r()} - actor/grad_norm:${r()} - ` +
      `critic/score/mean:${r()} - response_length/mean:${r() * 500} - timing_s/step:${r() * 60} - training/epoch:0`,
  ],
];

function writeShape(path: string, make: LineMaker, targetBytes: number): number {
  const rand = rng(7);
  const parts: string[] = [];
  let bytes = 0;
  for (let i = 1; bytes < targetBytes; i++) {
    const line = `${make(i, rand)}\n`;
    parts.push(line);
    bytes += Buffer.byteLength(line);
  }
  writeFileSync(path, parts.join(''));
  return bytes;
}

/** The faster of two passes: the first one also pays for V8 compiling the readers. */
function timeConsole(shape: string, path: string): FormatFigure {
  const a = timeOnce(shape, path);
  const b = timeOnce(shape, path);
  return a.seconds <= b.seconds ? a : b;
}

/** Reads `path` as the tailer would (split on \n, \r\n, \r) and parses every line with a fresh console reader. */
function timeOnce(shape: string, path: string): FormatFigure {
  const text = readFileSync(path, 'utf8');
  const bytes = Buffer.byteLength(text);
  const parse = consoleLog.open({ relPath: 'train.log' });
  const t0 = performance.now();
  const lines = text.split(/\r\n|\r|\n/);
  let points = 0;
  for (const line of lines) {
    const r = parse(line);
    if (r.kind === 'metric') points += r.record.values.size;
  }
  const seconds = (performance.now() - t0) / 1000;
  const mbPerSec = bytes / MB / seconds;
  return { shape, bytes, lines: lines.length, points, seconds, mbPerSec, pointsPerSec: points / seconds };
}

function worstLine(): FormatsResult['worstLineMs'] {
  const line = 'x'.repeat(1 << 20);
  const colon = `a: 1 ${'b'.repeat(1 << 20)}`;
  let t0 = performance.now();
  readKeyValueLine(line, parseNumber);
  readKeyValueLine(colon, parseNumber);
  const keyValue = (performance.now() - t0) / 2;
  const parse = consoleLog.open({ relPath: 'train.log' });
  t0 = performance.now();
  parse(line);
  parse(colon);
  return { keyValue, console: (performance.now() - t0) / 2 };
}

export function runFormatsBench(opts: { outDir: string; mbPerShape: number }): FormatsResult {
  const t0 = performance.now();
  const figures: FormatFigure[] = [];
  const path = join(opts.outDir, 'formats-bench.log');
  for (const [shape, make] of SHAPES) {
    writeShape(path, make, opts.mbPerShape * MB);
    figures.push(timeConsole(shape, path));
  }
  // the logging callback's blocks: the generated sample run, repeated to size
  const block = callbackRun().text;
  const copies = Math.max(1, Math.round((opts.mbPerShape * MB) / Buffer.byteLength(block)));
  writeFileSync(path, block.repeat(copies));
  figures.push(timeConsole('console: logging callback blocks', path));
  rmSync(path, { force: true });
  return { figures, worstLineMs: worstLine(), seconds: (performance.now() - t0) / 1000 };
}

export function formatFormatsReport(r: FormatsResult): string {
  const n = (v: number, d = 0): string =>
    v.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
  const rows = r.figures.map(
    (f) =>
      `  ${f.shape.padEnd(36)} ${n(f.bytes / MB, 1).padStart(6)} MB  ${n(f.mbPerSec, 1).padStart(7)} MB/s  ` +
      `${n(f.pointsPerSec).padStart(12)} points/s`,
  );
  const { keyValue, console } = r.worstLineMs;
  return [
    'stdout readers (parse only, no SQLite; the faster of 2 passes)',
    ...rows,
    `  1 MB line without separators: key-value reader ${n(keyValue, 1)} ms, console reader ${n(console, 1)} ms ` +
      '(target < 100 ms)',
  ].join('\n');
}
