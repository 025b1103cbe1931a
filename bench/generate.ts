/** Synthetic training logs for the benchmark, written in a streaming way (never one big string). */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

import { mulberry32 as rng } from '../scripts/rng.ts';

/** The bench's seeded random numbers. */
export { rng };

/** Python's `%.2e`: `3.58e-06`, not JavaScript's `3.58e-6`. */
function pyExp(v: number): string {
  const [mant, exp] = v.toExponential(2).split('e') as [string, string];
  const sign = exp.startsWith('-') ? '-' : '+';
  const digits = exp.replace(/^[+-]/, '').padStart(2, '0');
  return `${mant}e${sign}${digits}`;
}

/** Writes strings through a ~1 MB buffer of text. */
class TextSink {
  private readonly fd: number;
  private parts: string[] = [];
  private size = 0;
  bytes = 0;

  constructor(path: string, flags = 'w') {
    mkdirSync(dirname(path), { recursive: true });
    this.fd = openSync(path, flags);
  }

  write(s: string): void {
    this.parts.push(s);
    this.size += s.length;
    if (this.size >= 1 << 20) this.flush();
  }

  flush(): void {
    if (this.parts.length === 0) return;
    this.bytes += writeSync(this.fd, this.parts.join(''));
    this.parts = [];
    this.size = 0;
  }

  close(): void {
    this.flush();
    closeSync(this.fd);
  }
}

/** Makes the `i`-th (1-based) line of a learning.log of `total` lines, with values that drift like a run. */
export function learningLogLine(i: number, total: number, rand: () => number): string {
  const t = i / total;
  const noise = () => rand() * 2 - 1;
  const epoch = 3 * t;
  const loss = 0.05 * noise() + 0.01 * Math.sin(i / 37);
  const grad = Math.exp(-2.5 + 0.8 * noise());
  const lr = 5e-6 * (t < 0.02 ? t / 0.02 : 0.5 * (1 + Math.cos(Math.PI * t))) + 1e-9;
  const reward = Math.min(1, Math.max(0, 0.1 + 0.6 * t + 0.05 * noise()));
  const rewardStd = 0.02 + 0.08 * rand();
  const syntax = Math.min(1, Math.max(0, reward + 0.01 * noise()));
  const syntaxStd = rewardStd + 0.005 * rand();
  const entropy = 0.05 + 0.15 * (1 - t) * rand();
  const fracZero = Math.floor(rand() * 5) / 8;
  return (
    `[Epoch ${epoch.toFixed(2)}]  loss=${loss.toFixed(4)}  grad=${grad.toFixed(4)}  lr=${pyExp(lr)}  ` +
    `reward=${reward.toFixed(3)}±${rewardStd.toFixed(3)}  syntax_rew=${syntax.toFixed(3)}±${syntaxStd.toFixed(3)}  ` +
    `entropy=${entropy.toFixed(3)}  frac_zero_std=${fracZero.toFixed(2)}\n`
  );
}

export const LEARNING_LOG_BANNER =
  '================================================================================\n' +
  'GRPO Learning Metrics Log\n' +
  '================================================================================\n';

/** Writes a learning.log of `lines` data lines (after the trainer's banner). Returns its size in bytes. */
export function writeLearningLog(path: string, lines: number, seed = 1): number {
  const rand = rng(seed);
  const sink = new TextSink(path);
  sink.write(LEARNING_LOG_BANNER);
  for (let i = 1; i <= lines; i++) sink.write(learningLogLine(i, lines, rand));
  sink.close();
  return sink.bytes;
}

const CODE_WORDS = (
  'let rec fold_left f acc = function | [] -> acc | x :: xs -> fold_left f (f acc x) xs in ' +
  'match List.assoc_opt key table with Some v -> v | None -> failwith "missing key" ' +
  'let () = Printf.printf "%d\\n" (List.length xs) ' +
  'module StringMap = Map.Make (String) type t = { name : string; mutable count : int } ' +
  'let solve n = if n <= 1 then 1 else n * solve (n - 1) (* factorial, not tail recursive *) ' +
  'Array.iteri (fun i v -> a.(i) <- v + 1) arr; Buffer.add_string buf s; Hashtbl.replace h k v ' +
  'let parse s = String.split_on_char \' \' s |> List.filter (fun w -> w <> "") |> List.map int_of_string ' +
  '<think> The problem asks for the sum of the even numbers, so I filter then fold. </think> ```ocaml '
).split(' ');

/** A pseudo-OCaml completion of about `chars` characters, with newlines (escaped by JSON). */
function completionText(chars: number, rand: () => number): string {
  const parts: string[] = [];
  let n = 0;
  while (n < chars) {
    const w = CODE_WORDS[Math.floor(rand() * CODE_WORDS.length)] ?? 'x';
    const s = rand() < 0.08 ? `${w}\n  ` : `${w} `;
    parts.push(s);
    n += s.length;
  }
  return parts.join('');
}

/**
 * Writes `reward_logs/completions.jsonl` lines of ~1.5 KB until the file reaches `targetBytes`,
 * with `perStep` generations per step. Returns the bytes and lines written.
 */
export function writeCompletions(
  path: string,
  targetBytes: number,
  perStep = 16,
  seed = 2,
): { bytes: number; lines: number } {
  const rand = rng(seed);
  const sink = new TextSink(path);
  let lines = 0;
  let approx = 0;
  while (approx < targetBytes) {
    const step = Math.floor(lines / perStep) + 1;
    const reward = Math.round(rand() * 100) / 100;
    const completion = completionText(1300 + Math.floor(rand() * 400), rand);
    const obj = {
      problem_id: `p${Math.floor(rand() * 500)}`,
      reward,
      base_reward: Math.round(Math.min(1, reward + 0.2 * rand()) * 100) / 100,
      length: completion.length,
      is_degenerate: rand() < 0.03,
      style_penalty: rand() < 0.1 ? -0.1 : 0.0,
      completion,
      step,
    };
    const line = `${JSON.stringify(obj)}\n`;
    sink.write(line);
    approx += Buffer.byteLength(line);
    lines++;
  }
  sink.close();
  return { bytes: sink.bytes, lines };
}
