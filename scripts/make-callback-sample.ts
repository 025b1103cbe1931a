/**
 * Writes samples/grpo-callback/train.log: the captured stdout of a 400-step GRPO run that uses the
 * ComprehensiveLoggingCallback of the DeepSeek-R1-Zero GRPO logging guide (a block every 2 steps, GENERATION EXAMPLES
 * every 50), with a mode collapse.
 *
 *   node --import tsx scripts/make-callback-sample.ts [file]
 *
 * Deterministic (seeded mulberry32): `callbackRun()` returns the numbers and the text, so tests compare what
 * rlwatch stores with the generator's own numbers.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mulberry32 } from './rng.ts';

export const CALLBACK_STORY = {
  steps: 400,
  logEvery: 2,
  examplesEvery: 50,
  stepsPerEpoch: 200,
  /** inclusive: every group's generations identical, reward std 0, entropy near 0, loss 0 */
  collapse: [240, 300],
  rewardFunctions: ['accuracy', 'format', 'reasoning_steps'],
} as const;

export interface RewardStats {
  mean: number;
  std: number;
  min: number;
  max: number;
}

export interface CallbackStep {
  step: number;
  loss: number;
  lr: number;
  epoch: number;
  policy: number;
  value: number;
  entropy: number;
  rewards: Record<string, RewardStats>;
  total: number;
  formatPct: number;
  formatCount: number;
  responseLength: number;
  thinkLength: number;
  answerLength: number;
  reasoningIndicators: number;
  stepTime: number;
  samplesPerSec: number;
  gpuGb: number;
  gpuReservedGb: number;
  ramGb: number;
  ramPct: number;
  cpuPct: number;
  /** on every `examplesEvery`-th step */
  examples?: { best: GenerationExample; worst: GenerationExample };
}

export interface GenerationExample {
  idx: number;
  content: string;
  breakdown: Record<string, number>;
  total: number;
}

const GROUP = 8;
const inCollapse = (step: number): boolean => step >= CALLBACK_STORY.collapse[0] && step <= CALLBACK_STORY.collapse[1];

/** Values as printed: the log and the stored numbers agree to the printed precision. */
const round = (v: number, decimals: number): number => Number(v.toFixed(decimals));

function stats(xs: number[]): RewardStats {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const std = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
  const [min, max] = [Math.min(...xs), Math.max(...xs)];
  return { mean: round(mean, 3), std: round(std, 3), min: round(min, 3), max: round(max, 3) };
}

interface Generation {
  text: string;
  scores: Record<string, number>;
}

/** The template every generation turns into during the collapse: well formatted, wrong, the same. */
const COLLAPSED: Generation = {
  text: '<think>\nI think so.\n</think>\n\n<answer>\n0\n</answer>',
  scores: { accuracy: 0, format: 1, reasoning_steps: 0 },
};

function generation(rng: () => number, step: number, collapsed: boolean): Generation {
  if (collapsed) return COLLAPSED;
  const skill = Math.min(0.9, 0.3 + step / 500);
  const a = 2 + Math.floor(rng() * 50);
  const b = 2 + Math.floor(rng() * 50);
  const correct = rng() < skill;
  const formatted = rng() < skill + 0.1;
  const stepsShown = Math.floor(rng() * 4);
  const reasoning = Array.from(
    { length: stepsShown },
    (_, i) => `Step ${i + 1}: ${i === 0 ? `I need to add ${a} and ${b}` : 'check the sum'}`,
  );
  const answer = correct ? a + b : a + b + 1 + Math.floor(rng() * 9);
  const text = formatted
    ? `<think>\n${reasoning.join('\n')}\n</think>\n\n<answer>\n${answer}\n</answer>`
    : `The answer is ${answer} because I think so.`;
  return {
    text,
    scores: {
      accuracy: correct ? 1 : 0,
      format: formatted ? 1 : 0,
      reasoning_steps: round(Math.min(1, stepsShown / 3), 3),
    },
  };
}

export function callbackRun(seed = 2): { steps: CallbackStep[]; text: string } {
  const rng = mulberry32(seed);
  const steps: CallbackStep[] = [];
  for (let step = CALLBACK_STORY.logEvery; step <= CALLBACK_STORY.steps; step += CALLBACK_STORY.logEvery) {
    const collapsed = inCollapse(step);
    const gens = Array.from({ length: GROUP }, () => generation(rng, step, collapsed));
    const rewards: Record<string, RewardStats> = {};
    for (const fn of CALLBACK_STORY.rewardFunctions) rewards[fn] = stats(gens.map((g) => g.scores[fn]!));
    const totals = gens.map((g) => Object.values(g.scores).reduce((x, y) => x + y, 0));
    const formatCount = gens.filter((g) => g.scores['format'] === 1).length;
    const lengths = gens.map((g) => g.text.length);
    const policy = collapsed ? 0 : round(0.05 + 0.3 * rng(), 4);
    const value = collapsed ? 0 : round(0.1 + 0.5 * rng(), 4);
    const entropy = collapsed ? round(0.002 + 0.004 * rng(), 4) : round(0.6 - step / 1000 + 0.05 * rng(), 4);
    const s: CallbackStep = {
      step,
      loss: round(policy + value, 4),
      lr: Number((5e-5 * (1 - step / (CALLBACK_STORY.steps + 1))).toExponential(2)),
      epoch: round(step / CALLBACK_STORY.stepsPerEpoch, 2),
      policy,
      value,
      entropy,
      rewards,
      total: round(
        Object.values(rewards).reduce((a, r) => a + r.mean, 0),
        3,
      ),
      formatPct: round((100 * formatCount) / GROUP, 1),
      formatCount,
      responseLength: round(lengths.reduce((a, b) => a + b, 0) / GROUP, 1),
      thinkLength: round(collapsed ? 12 : 40 + 60 * rng(), 1),
      answerLength: round(collapsed ? 3 : 2 + 3 * rng(), 1),
      reasoningIndicators: round(collapsed ? 0 : 3 * rng(), 2),
      stepTime: round(3 + rng(), 2),
      samplesPerSec: round(2 + rng(), 1),
      gpuGb: round(4 + rng(), 2),
      gpuReservedGb: round(5.2 + rng(), 2),
      ramGb: round(12 + rng(), 2),
      ramPct: round(60 + 5 * rng(), 1),
      cpuPct: round(40 + 20 * rng(), 1),
    };
    if (step % CALLBACK_STORY.examplesEvery === 0) {
      const order = totals.map((t, i) => [t, i] as const).sort((x, y) => y[0] - x[0] || x[1] - y[1]);
      const pickExample = (i: number): GenerationExample => ({
        idx: i,
        content: gens[i]!.text,
        breakdown: gens[i]!.scores,
        total: round(totals[i]!, 3),
      });
      s.examples = { best: pickExample(order[0]![1]), worst: pickExample(order[order.length - 1]![1]) };
    }
    steps.push(s);
  }
  return { steps, text: render(steps) };
}

const f = (v: number, d: number): string => v.toFixed(d);
/** Python's `f"{x:.2e}"`: two exponent digits (`5.00e-05`) */
const pythonExp = (v: number): string => v.toExponential(2).replace(/e([+-])(\d)$/, 'e$10$2');
const pad = (s: string, n: number): string => s.padStart(n);

function renderStep(s: CallbackStep): string[] {
  const lines = [
    `Step ${pad(String(s.step), 4)} | Loss: ${f(s.loss, 4)} | LR: ${pythonExp(s.lr)} | Epoch: ${f(s.epoch, 2)}`,
    `         GRPO | Policy: ${f(s.policy, 4)} | Value: ${f(s.value, 4)} | Entropy: ${f(s.entropy, 4)}`,
    '',
    'Reward Breakdown:',
  ];
  for (const [name, r] of Object.entries(s.rewards)) {
    const range = `[${pad(f(r.min, 3), 6)}, ${pad(f(r.max, 3), 6)}]`;
    lines.push(`  ${name.padEnd(15)}: ${pad(f(r.mean, 3), 6)} ± ${f(r.std, 3)} ${range}`);
  }
  lines.push(
    `  ${'total'.padEnd(15)}: ${pad(f(s.total, 3), 6)} (combined)`,
    '',
    'Generation Quality:',
    `  Format compliance: ${pad(f(s.formatPct, 1), 5)}% (${s.formatCount}/${GROUP})`,
    `  Avg response length: ${pad(f(s.responseLength, 1), 6)} chars`,
    `  Avg think length:    ${pad(f(s.thinkLength, 1), 6)} chars`,
    `  Avg answer length:   ${pad(f(s.answerLength, 1), 6)} chars`,
    `  Reasoning indicators: ${pad(f(s.reasoningIndicators, 2), 5)} per response`,
    '',
    'Performance:',
    `  Step time:      ${f(s.stepTime, 2)}s`,
    `  Samples/sec:    ${f(s.samplesPerSec, 1)}`,
    `  GPU memory:     ${f(s.gpuGb, 2)}GB (reserved: ${f(s.gpuReservedGb, 2)}GB)`,
    `  RAM usage:     ${f(s.ramGb, 2)}GB (${f(s.ramPct, 1)}%)`,
    `  CPU usage:     ${f(s.cpuPct, 1)}%`,
    '',
  );
  if (s.examples) {
    const rule = '='.repeat(80);
    lines.push(rule, 'GENERATION EXAMPLES', rule);
    const one = (label: string, e: GenerationExample): void => {
      lines.push(`${label} EXAMPLE (idx ${e.idx}):`, `Content: ${e.content}`, '', 'Reward breakdown:');
      for (const [k, v] of Object.entries(e.breakdown)) lines.push(`  ${k}: ${f(v, 3)}`);
      lines.push(`  total: ${f(e.total, 3)}`);
    };
    one('BEST', s.examples.best);
    lines.push('-'.repeat(40));
    one('WORST', s.examples.worst);
    lines.push(rule);
  }
  return lines;
}

function render(steps: CallbackStep[]): string {
  const out = [
    'Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]',
    '[2026-11-20 09:12:01] INFO Starting GRPO training: reward_funcs=[accuracy, format, reasoning_steps]',
    `***** Running training *****`,
    `  Num examples = 3,200`,
    `  Total optimization steps = ${CALLBACK_STORY.steps}`,
  ];
  for (const s of steps) {
    const pct = Math.floor((100 * s.step) / CALLBACK_STORY.steps);
    out.push(`${pad(String(pct), 3)}%|          | ${s.step}/${CALLBACK_STORY.steps} [00:10<20:00,  3.1s/it]`);
    out.push(...renderStep(s));
  }
  return `${out.join('\n')}\n`;
}

export const DEFAULT_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'samples',
  'grpo-callback',
  'train.log',
);

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = resolve(process.argv[2] ?? DEFAULT_FILE);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, callbackRun().text);
  console.log(`wrote ${file}`);
}
