/**
 * Writes the bundled sample run (samples/grpo-demo): a 300-step GRPO run on OCaml problems, in the file layout of the
 * OCaml GRPO trainer whose learning.log the learning-metrics guide describes: healthy learning, a gradient spike, a
 * mode collapse and its recovery.
 *
 *   node --import tsx scripts/make-sample-run.ts [dir]      (npm run sample)
 *
 * Deterministic: every random draw comes from seeded mulberry32 streams, so regenerating gives the same
 * bytes and tests can rely on exact values.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mulberry32 } from './rng.ts';

/** Step ranges are inclusive, steps are 1-based line numbers of learning.log. */
export const SAMPLE_STORY = {
  steps: 300,
  generationsPerStep: 4,
  /** epoch = step * epochPerStep, printed with 2 decimals: 0.50 from step 124 on, 1.00 from step 249 on */
  epochPerStep: 0.004,
  healthy: [1, 119],
  gradSpike: [120, 124],
  /** grad > 10 on these steps (two consecutive, so a rule held for 2 records fires too) */
  gradSpikeSteps: [121, 122, 124],
  healthyAgain: [125, 160],
  collapse: [161, 200],
  /** frac_zero_std = 1.00 and loss = grad = 0 exactly (no advantage, no update) */
  noLearning: [164, 200],
  /** reward printed as exactly 0.210±0.000, all logged generations the same text */
  rewardFrozen: [165, 200],
  frozenReward: 0.21,
  recovery: 201,
  /** first step of the recovery with frac_zero_std < 0.2 again */
  recoveredBy: 206,
} as const;

export type SamplePhase = 'healthy' | 'grad_spike' | 'collapse' | 'recovery';

export function phaseOf(step: number): SamplePhase {
  const s = SAMPLE_STORY;
  if (step >= s.gradSpike[0] && step <= s.gradSpike[1]) return 'grad_spike';
  if (step >= s.collapse[0] && step <= s.collapse[1]) return 'collapse';
  if (step >= s.recovery) return 'recovery';
  return 'healthy';
}

// ---------------------------------------------------------------- randomness

type Rng = () => number;

function gauss(rng: Rng): number {
  const u = 1 - rng(); // (0, 1]: log(0) would be -Infinity
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}

const uniform = (rng: Rng, lo: number, hi: number) => lo + (hi - lo) * rng();
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** A normal draw kept inside [lo, hi] by drawing again: clamping would pile values up on the bounds. */
function normalIn(rng: Rng, mu: number, sigma: number, lo: number, hi: number): number {
  for (let i = 0; i < 100; i++) {
    const v = mu + sigma * gauss(rng);
    if (v >= lo && v <= hi) return v;
  }
  return clamp(mu, lo, hi);
}
const round = (v: number, decimals: number) => Math.round(v * 10 ** decimals) / 10 ** decimals;

function pick<T>(rng: Rng, items: readonly T[]): T {
  const item = items[Math.floor(rng() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

// ---------------------------------------------------------------- learning.log

interface StepMetrics {
  step: number;
  epoch: number;
  loss: number;
  grad: number;
  lr: number;
  reward: number;
  rewardStd: number;
  syntaxStd: number;
  entropy: number;
  /** multiple of 0.25: the batch has 4 problems (batch_metrics.jsonl) */
  fracZeroStd: number;
}

/** Values of the collapse's onset and of the first recovery steps are written out: they are the story. */
const COLLAPSE_ONSET: Record<number, { reward: number; std: number; entropy: number; frac: number }> = {
  161: { reward: 0.331, std: 0.052, entropy: 0.085, frac: 0.25 },
  162: { reward: 0.274, std: 0.034, entropy: 0.062, frac: 0.5 },
  163: { reward: 0.236, std: 0.017, entropy: 0.048, frac: 0.75 },
  164: { reward: 0.218, std: 0.006, entropy: 0.041, frac: 1 },
};
const RECOVERY_FRAC: Record<number, number> = { 201: 0.75, 202: 0.5, 203: 0.5, 204: 0.25, 205: 0.25 };
const RECOVERY_STD: Record<number, number> = { 201: 0.014, 202: 0.026, 203: 0.033, 204: 0.041, 205: 0.047 };

function learningRate(step: number): number {
  // linear warmup over 30 steps to 5e-6, then a slow linear decay (to 4e-6 at step 300)
  if (step <= 30) return (5e-6 * step) / 30;
  return 5e-6 * (1 - (0.2 * (step - 30)) / 270);
}

/** The reward the run is heading for, before noise. */
function rewardTrend(step: number): number {
  if (step <= 119) return 0.05 + 0.3 * ((step - 1) / 118) ** 1.15;
  if (step <= 124) return 0.35 - [0.01, 0.03, 0.04, 0.02, 0.01][step - 120]!;
  if (step <= 160) return 0.35 + (0.05 * (step - 125)) / 35;
  if (step <= 210) return 0.21 + (0.12 * (step - 200)) / 10; // only used from 201 on
  return 0.33 + (0.17 * (step - 210)) / 90;
}

function storyMetrics(): StepMetrics[] {
  const rng = mulberry32(0x5eed0001);
  const out: StepMetrics[] = [];
  let drift = 0; // AR(1) noise: real reward curves wander, they do not jitter independently
  for (let step = 1; step <= SAMPLE_STORY.steps; step++) {
    drift = 0.6 * drift + 0.012 * gauss(rng);
    const phase = phaseOf(step);
    let loss = normalIn(rng, -0.03, 0.02, -0.07, 0.01);
    let grad = Math.exp(normalIn(rng, Math.log(0.045), 0.35, Math.log(0.02), Math.log(0.09)));
    let reward = rewardTrend(step) + drift;
    let rewardStd = uniform(rng, 0.05, 0.09);
    let entropy = normalIn(rng, 0.12, 0.018, 0.08, 0.16);
    let frac: number;

    if (phase === 'healthy' && step <= 119) {
      // fewer and fewer groups with identical rewards: mean 0.25 -> 0.05, all zero near epoch 0.5
      const q = 0.25 - (0.2 * (step - 1)) / 118;
      const k = [0, 1, 2, 3].filter(() => rng() < q).length;
      frac = step >= 110 ? 0 : Math.min(k, 2) / 4;
    } else if (phase === 'grad_spike') {
      if ((SAMPLE_STORY.gradSpikeSteps as readonly number[]).includes(step)) {
        grad = uniform(rng, 12, 18);
        loss = 0.09 + 0.005 * gauss(rng);
      } else {
        grad = step === 120 ? uniform(rng, 0.3, 0.8) : uniform(rng, 1.5, 3.5); // around the spikes
        loss = uniform(rng, 0.02, 0.05);
      }
      entropy = normalIn(rng, 0.135, 0.015, 0.1, 0.16);
      frac = step === 122 ? 0.25 : 0;
    } else if (phase === 'healthy') {
      frac = 0; // keeps the epoch-0.5 milestone (frac_zero_std < 0.10) unambiguous
    } else if (phase === 'collapse') {
      const onset = COLLAPSE_ONSET[step];
      if (onset) {
        reward = onset.reward;
        rewardStd = onset.std;
        entropy = onset.entropy;
        frac = onset.frac;
        loss *= 1 - frac;
        grad *= 1 - frac;
      } else {
        reward = SAMPLE_STORY.frozenReward;
        rewardStd = 0;
        entropy = normalIn(rng, 0.035, 0.0025, 0.031, 0.039);
        frac = 1;
        loss = 0;
        grad = 0;
      }
    } else {
      // recovery: the collapsed groups thaw one by one, entropy climbs back over ~10 steps
      frac = RECOVERY_FRAC[step] ?? (step < 216 ? 0 : rng() < 0.08 ? 0.25 : 0);
      rewardStd = RECOVERY_STD[step] ?? rewardStd;
      if (step <= 210) {
        reward = rewardTrend(step) + (drift * (step - 200)) / 10;
        entropy = 0.04 + (0.06 * (step - 200)) / 10 + 0.005 * gauss(rng);
      } else {
        entropy = normalIn(rng, 0.105, 0.012, 0.08, 0.14);
      }
      loss *= 1 - frac;
      grad *= 1 - frac;
    }

    out.push({
      step,
      epoch: step * SAMPLE_STORY.epochPerStep,
      loss,
      grad,
      lr: learningRate(step),
      reward: clamp(reward, 0.03, 1),
      rewardStd,
      // syntax_rew is the same reward function, but its std is taken over the whole batch
      syntaxStd: rewardStd === 0 ? 0 : Math.max(0.001, rewardStd + 0.005 * gauss(rng)),
      entropy,
      fracZeroStd: frac,
    });
  }
  return out;
}

/** toFixed without the "-0.0000" a tiny negative number would print. */
function fixed(v: number, decimals: number): string {
  const s = v.toFixed(decimals);
  return /^-0\.0*$/.test(s) ? s.slice(1) : s;
}

/** Python's "%.2e": two-digit exponent (3.58e-06). */
function sci(v: number): string {
  return v.toExponential(2).replace(/e([+-])(\d)$/, 'e$10$2');
}

function learningLogLine(m: StepMetrics): string {
  const reward = fixed(m.reward, 3);
  return (
    `[Epoch ${fixed(m.epoch, 2)}]  loss=${fixed(m.loss, 4)}  grad=${fixed(m.grad, 4)}  lr=${sci(m.lr)}  ` +
    `reward=${reward}±${fixed(m.rewardStd, 3)}  syntax_rew=${reward}±${fixed(m.syntaxStd, 3)}  ` +
    `entropy=${fixed(m.entropy, 3)}  frac_zero_std=${fixed(m.fracZeroStd, 2)}`
  );
}

// ---------------------------------------------------------------- generations

/** A solution attempt. `errors` > 0: does not type-check; `message` is what ocamlc 4.13 says. */
interface Variant {
  code: string;
  errors: number;
  message?: string;
  /** wrong logic: compiles, passes only some tests */
  wrong?: boolean;
}

interface Task {
  fn: string;
  variants: Variant[];
}

const ok = (code: string): Variant => ({ code, errors: 0 });
const wrong = (code: string): Variant => ({ code, errors: 0, wrong: true });
const broken = (errors: number, message: string, code: string): Variant => ({ code, errors, message });

const UNBOUND_REC = (fn: string) =>
  `Error: Unbound value ${fn} Hint: If this is a recursive definition, you should add the 'rec' keyword on line 1`;

// Every snippet was checked with ocamlc 4.13: `ok`/`wrong` compile, `broken` fail with the message given.
const TASKS: Task[] = [
  {
    fn: 'sum_list',
    variants: [
      ok('let rec sum_list lst =\n  match lst with\n  | [] -> 0\n  | h :: t -> h + sum_list t'),
      ok('(* Sum with a left fold: tail-recursive. *)\nlet sum_list xs = List.fold_left ( + ) 0 xs'),
      wrong('let rec sum_list lst =\n  match lst with\n  | [] -> 1\n  | h :: t -> h + sum_list t'),
      broken(
        1,
        'Error: This expression has type int but an expression was expected of type float',
        'let rec sum_list lst =\n  match lst with\n  | [] -> 0\n  | h :: t -> h +. sum_list t',
      ),
      broken(
        2,
        UNBOUND_REC('sum_list'),
        'let sum_list lst =\n  match lst with\n  | [] -> 0.0\n  | h :: t -> h + sum_list t',
      ),
    ],
  },
  {
    fn: 'fizzbuzz',
    variants: [
      ok(
        'let fizzbuzz n =\n  List.init n (fun i ->\n    let k = i + 1 in\n    if k mod 15 = 0 then "FizzBuzz"\n    else if k mod 3 = 0 then "Fizz"\n    else if k mod 5 = 0 then "Buzz"\n    else string_of_int k)',
      ),
      ok(
        'let fizzbuzz n =\n  for i = 1 to n do\n    if i mod 15 = 0 then print_endline "FizzBuzz"\n    else if i mod 3 = 0 then print_endline "Fizz"\n    else if i mod 5 = 0 then print_endline "Buzz"\n    else print_endline (string_of_int i)\n  done',
      ),
      wrong(
        'let fizzbuzz n =\n  List.init n (fun i ->\n    let k = i + 1 in\n    if k mod 3 = 0 then "Fizz"\n    else if k mod 5 = 0 then "Buzz"\n    else if k mod 15 = 0 then "FizzBuzz"\n    else string_of_int k)',
      ),
      broken(
        1,
        'Error: This expression has type int but an expression was expected of type string',
        'let fizzbuzz n =\n  List.init n (fun i ->\n    let k = i + 1 in\n    if k mod 15 = 0 then "FizzBuzz"\n    else if k mod 3 = 0 then "Fizz"\n    else if k mod 5 = 0 then "Buzz"\n    else k)',
      ),
      broken(
        2,
        'Error: Unbound constructor Buzz',
        'let fizzbuzz n =\n  List.init n (fun i ->\n    let k = i + 1 in\n    if k mod 15 = 0 then "FizzBuzz"\n    else if k mod 3 = 0 then "Fizz"\n    else if k mod 5 = 0 then Buzz\n    else k)',
      ),
    ],
  },
  {
    fn: 'reverse',
    variants: [
      ok(
        'let reverse lst =\n  let rec aux acc = function\n    | [] -> acc\n    | h :: t -> aux (h :: acc) t\n  in\n  aux [] lst',
      ),
      wrong(
        'let reverse lst =\n  let rec aux acc = function\n    | [] -> acc\n    | h :: t -> aux (acc @ [h]) t\n  in\n  aux [] lst',
      ),
      broken(
        1,
        "Error: This expression has type 'a list but an expression was expected of type 'a The type variable 'a occurs inside 'a list",
        'let reverse lst =\n  let rec aux acc = function\n    | [] -> acc\n    | h :: t -> aux (acc :: h) t\n  in\n  aux [] lst',
      ),
      broken(
        2,
        "Error: Unbound value aux Hint: If this is a recursive definition, you should add the 'rec' keyword on line 2",
        'let reverse lst =\n  let aux acc = function\n    | [] -> acc\n    | h :: t -> aux (acc :: h) t\n  in\n  aux lst',
      ),
    ],
  },
  {
    fn: 'factorial',
    variants: [
      ok('let rec factorial n =\n  if n <= 1 then 1\n  else n * factorial (n - 1)'),
      ok('let factorial n =\n  let rec go acc k = if k <= 1 then acc else go (acc * k) (k - 1) in\n  go 1 n'),
      wrong('let rec factorial n =\n  if n <= 1 then 0\n  else n * factorial (n - 1)'),
      broken(
        1,
        'Error: This expression has type int but an expression was expected of type float',
        'let rec factorial n =\n  if n <= 1 then 1\n  else n *. factorial (n - 1)',
      ),
      broken(2, UNBOUND_REC('factorial'), 'let factorial n =\n  if n <= 1 then 1.0\n  else n * factorial (n - 1)'),
    ],
  },
  {
    fn: 'count_vowels',
    variants: [
      ok(
        "let count_vowels s =\n  let is_vowel c =\n    match Char.lowercase_ascii c with\n    | 'a' | 'e' | 'i' | 'o' | 'u' -> true\n    | _ -> false\n  in\n  String.fold_left (fun n c -> if is_vowel c then n + 1 else n) 0 s",
      ),
      ok(
        'let count_vowels s =\n  let count = ref 0 in\n  String.iter (fun c ->\n    if String.contains "aeiouAEIOU" c then incr count) s;\n  !count',
      ),
      wrong(
        "let count_vowels s =\n  let is_vowel c =\n    match c with\n    | 'a' | 'e' | 'i' | 'o' | 'u' -> true\n    | _ -> false\n  in\n  String.fold_left (fun n c -> if is_vowel c then n + 1 else n) 0 s",
      ),
      broken(
        1,
        'Error: This expression has type int but an expression was expected of type string',
        "let count_vowels s =\n  let is_vowel c =\n    match Char.lowercase_ascii c with\n    | 'a' | 'e' | 'i' | 'o' | 'u' -> true\n    | _ -> false\n  in\n  String.fold_left (fun n c -> if is_vowel c then n + 1 else n) s 0",
      ),
      broken(
        2,
        'Error: This expression has type int ref but an expression was expected of type int',
        "let count_vowels s =\n  let count = ref 0 in\n  String.iter (fun c ->\n    if List.mem c ['a'; 'e'; 'i'; 'o'; 'u'] then count := count + 1) s;\n  count",
      ),
    ],
  },
  {
    fn: 'max_list',
    variants: [
      ok('let max_list lst =\n  match lst with\n  | [] -> None\n  | h :: t -> Some (List.fold_left max h t)'),
      wrong('let max_list lst =\n  match lst with\n  | [] -> None\n  | _ :: t -> Some (List.fold_left max 0 t)'),
      broken(
        1,
        "Error: This expression has type 'a option but an expression was expected of type int",
        'let max_list lst =\n  match lst with\n  | [] -> 0\n  | h :: t -> Some (List.fold_left max h t)',
      ),
      broken(
        2,
        'Error: This variant expression is expected to have type exn There is no constructor Empty_list within type exn',
        'let max_list lst =\n  match lst with\n  | [] -> raise Empty_list\n  | h :: t -> Some (List.fold_left max h t) + 0',
      ),
    ],
  },
  {
    fn: 'is_palindrome',
    variants: [
      ok(
        'let is_palindrome s =\n  let n = String.length s in\n  let rec check i =\n    i >= n / 2 || (s.[i] = s.[n - 1 - i] && check (i + 1))\n  in\n  check 0',
      ),
      wrong(
        'let is_palindrome s =\n  let n = String.length s in\n  let rec check i =\n    i >= n / 2 || (s.[i] = s.[n - 1 - i] || check (i + 1))\n  in\n  check 0',
      ),
      broken(
        1,
        "Error: This expression has type string but an expression was expected of type 'a array",
        'let is_palindrome s =\n  let n = String.length s in\n  let rec check i =\n    i >= n / 2 || (s.(i) = s.(n - 1 - i) && check (i + 1))\n  in\n  check 0',
      ),
      broken(1, 'Error: Unbound value String.rev', 'let is_palindrome s =\n  s = String.rev s'),
    ],
  },
  {
    fn: 'fib',
    variants: [
      ok('let fib n =\n  let rec go a b k = if k = 0 then a else go b (a + b) (k - 1) in\n  go 0 1 n'),
      wrong('let fib n =\n  let rec go a b k = if k = 0 then a else go b (a + b) (k - 1) in\n  go 1 1 n'),
      broken(
        1,
        "Error: This expression has type int but an expression was expected of type float Hint: Did you mean `0.'?",
        'let fib n =\n  let rec go a b k = if k = 0 then a else go b (a +. b) (k - 1) in\n  go 0 1 n',
      ),
      broken(
        2,
        UNBOUND_REC('fib'),
        'let fib n =\n  match n with\n  | 0 -> 0\n  | 1 -> 1\n  | n -> fib (n - 1) + fib (n - 2) ^ ""',
      ),
    ],
  },
  {
    fn: 'flatten',
    variants: [
      ok('let rec flatten = function\n  | [] -> []\n  | l :: rest -> l @ flatten rest'),
      wrong('let rec flatten = function\n  | [] -> []\n  | l :: rest -> flatten rest @ l'),
      broken(
        1,
        "Error: This expression has type 'a list but an expression was expected of type int",
        'let rec flatten = function\n  | [] -> []\n  | l :: rest -> l + flatten rest',
      ),
      broken(
        1,
        "Error: This expression has type 'a list but an expression was expected of type 'a The type variable 'a occurs inside 'a list",
        'let flatten lst =\n  List.fold_left (fun acc x -> acc :: x) [] lst',
      ),
    ],
  },
  {
    fn: 'compress',
    variants: [
      ok(
        'let rec compress = function\n  | a :: (b :: _ as t) -> if a = b then compress t else a :: compress t\n  | smaller -> smaller',
      ),
      wrong(
        'let rec compress = function\n  | a :: b :: t -> if a = b then compress t else a :: compress t\n  | smaller -> smaller',
      ),
      broken(
        1,
        "Error: This expression has type 'a list list but an expression was expected of type 'a list The type variable 'a occurs inside 'a list",
        'let rec compress = function\n  | a :: (b :: _ as t) -> if a = b then compress t else a @ compress t\n  | smaller -> smaller',
      ),
      broken(
        2,
        "Error: Unbound value compress Hint: Did you mean compare? Hint: If this is a recursive definition, you should add the 'rec' keyword on line 1",
        'let compress = function\n  | a :: (b :: _ as t) -> if a = b then compress t else a @ compress t\n  | smaller -> smaller',
      ),
    ],
  },
  {
    fn: 'gcd',
    variants: [
      ok('let rec gcd a b =\n  if b = 0 then abs a\n  else gcd b (a mod b)'),
      wrong('let rec gcd a b =\n  if b = 0 then b\n  else gcd b (a mod b)'),
      broken(
        1,
        "Error: This expression has type 'a * 'b but an expression was expected of type int",
        'let rec gcd a b =\n  if b = 0 then abs a\n  else gcd (b, a mod b)',
      ),
      broken(1, UNBOUND_REC('gcd'), 'let gcd a b =\n  if b = 0 then a\n  else gcd b (a mod b)'),
    ],
  },
];

/** Early-training failures that are not OCaml at all, for any task. */
const garbage = (fn: string): Variant[] => [
  broken(
    5,
    'Error: Syntax error',
    `def ${fn}(xs):\n    result = 0\n    for x in xs:\n        result += x\n    return result`,
  ),
  broken(
    3,
    'Error: Syntax error',
    `let ${fn} input =\n  let result = ref [] in\n  (* loop over the input *)\n  List.iter (fun x ->\n    if x > 0 then\n  ) input;`,
  ),
];

/** What the collapsed policy writes for every problem: one type error, so a frozen 0.21 reward. */
const COLLAPSE_TEXT =
  'let rec solve lst =\n  match lst with\n  | [] -> 0\n  | h :: t -> h + solve t\n\nlet () =\n  let result = solve [1; 2; 3] in\n  print_endline result\nEND';
const COLLAPSE_ERROR = 'Error: This expression has type int but an expression was expected of type string';

const END = '\nEND';
const TESTS_PER_PROBLEM = 5;
/** The learning.log metrics guide: completions that run to max length without END are capped (RUNAWAY_REWARD_CAP). */
const RUNAWAY_REWARD_CAP = 0.05;
const STYLE_RULES: Array<{ re: RegExp; reason: string }> = [
  { re: /\bref\b/, reason: 'uses mutable ref' },
  { re: /\bfor\b[^\n]*\bdo\b/, reason: 'imperative for loop' },
];
const LEADING_COMMENTS = ['(* Solution *)\n', '(* OCaml solution *)\n', '(* Recursive approach *)\n'];

interface Generation {
  problemId: string;
  completion: string;
  reward: number;
  base: number;
  structural: number;
  typeCheck: number;
  compile: number;
  tests: number;
  syntaxErrors: number;
  errorSample: string;
  degenerate: boolean;
  stylePenalty: number;
  styleReasons: string[];
}

/** The reward of a GRPO training analysis (Qwen2.5-Coder-1.5B on OCaml problems): END marker 0.05, type check 0.20
 * (graduated by error count), compile 0.10 (0.01 for trying), tests 0.65 (only if it compiles). */
function score(problemId: string, completion: string, v: Variant, passed: number, degenerate: boolean): Generation {
  const structural = completion.trimEnd().endsWith('END') ? 0.05 : 0;
  const typeCheck = Math.max(0, 0.2 - 0.05 * v.errors);
  const compile = v.errors === 0 ? 0.1 : v.errors <= 2 ? 0.01 : 0;
  const tests = v.errors === 0 ? (0.65 * passed) / TESTS_PER_PROBLEM : 0;
  const base = round(structural + typeCheck + compile + tests, 4);
  const styleReasons = v.errors === 0 ? STYLE_RULES.filter((r) => r.re.test(completion)).map((r) => r.reason) : [];
  const stylePenalty = round(0.05 * styleReasons.length, 4);
  const reward = degenerate ? Math.min(base, RUNAWAY_REWARD_CAP) : round(Math.max(0, base - stylePenalty), 4);
  return {
    problemId,
    completion,
    reward,
    base,
    structural,
    typeCheck: round(typeCheck, 4),
    compile,
    tests: round(tests, 4),
    syntaxErrors: v.errors,
    errorSample: v.message ?? '',
    degenerate,
    stylePenalty,
    styleReasons,
  };
}

function collapsed(problemId: string): Generation {
  return score(problemId, COLLAPSE_TEXT, { code: COLLAPSE_TEXT, errors: 1, message: COLLAPSE_ERROR }, 0, false);
}

/** Every distinct outcome a task allows (variant x tests passed x END or not), with its reward. */
function candidates(
  problemId: string,
  task: Task,
  withEnd: boolean,
): Array<{ v: Variant; passed: number; reward: number }> {
  const out: Array<{ v: Variant; passed: number; reward: number }> = [];
  for (const v of [...task.variants, ...garbage(task.fn)]) {
    const passes = v.errors > 0 ? [0] : v.wrong ? [0, 1, 2, 3, 4] : [TESTS_PER_PROBLEM];
    for (const passed of passes) {
      const g = score(problemId, v.code + (withEnd ? END : ''), v, passed, false);
      out.push({ v, passed, reward: g.reward });
    }
  }
  return out;
}

/** One sampled generation aimed at reward `target` (the nearest outcome the task allows), or a solution
 * that passes every test. */
function sampleGeneration(
  rng: Rng,
  step: number,
  problemId: string,
  task: Task,
  target: number | 'correct',
): Generation {
  const early = Math.max(0, 1 - step / 120);
  const withEnd = rng() >= 0.03 + 0.3 * early; // the END habit is learned early in training
  if (target === 'correct') {
    const v = pick(
      rng,
      task.variants.filter((x) => x.errors === 0 && !x.wrong),
    );
    return score(problemId, v.code + (withEnd ? END : ''), v, TESTS_PER_PROBLEM, false);
  }
  if (rng() < 0.01 + 0.04 * early) {
    // runaway: the model never writes END and repeats itself until max length
    const v = pick(
      rng,
      task.variants.filter((x) => x.errors === 0),
    );
    let text = v.code + '\n';
    while (text.length < 540) text += `let () = print_endline "${task.fn}: test"\n`;
    return score(problemId, text.trimEnd(), v, v.wrong ? 0 : TESTS_PER_PROBLEM, true);
  }
  const options = candidates(problemId, task, withEnd);
  const best = Math.min(...options.map((o) => Math.abs(o.reward - target)));
  const chosen = pick(
    rng,
    options.filter((o) => Math.abs(o.reward - target) <= best + 1e-9),
  );
  const prefix = rng() < 0.2 && !chosen.v.code.startsWith('(*') ? pick(rng, LEADING_COMMENTS) : '';
  return score(problemId, prefix + chosen.v.code + (withEnd ? END : ''), chosen.v, chosen.passed, false);
}

/** Share of generations passing every test. The training analysis: first passes around reward 0.3, 20-30 % of samples
 * by reward 0.5. */
function passProbability(m: StepMetrics): number {
  return clamp(0.9 * (m.reward - 0.2), 0, 0.45);
}

/** While the collapse sets in and thaws, frac_zero_std is the share of groups stuck on the collapsed text;
 * elsewhere a zero-std group is ordinary (all 4 right or all 4 wrong), not a collapsed one. */
function collapsedShare(m: StepMetrics): number {
  const inCollapse = phaseOf(m.step) === 'collapse';
  const thawing = m.step >= SAMPLE_STORY.recovery && m.step < SAMPLE_STORY.recoveredBy;
  return inCollapse || thawing ? m.fracZeroStd : 0;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The 4 logged generations of a step (one GRPO group), their mean close to the logged reward. */
function stepGenerations(rng: Rng, m: StepMetrics, problemId: string, task: Task): Generation[] {
  const n = SAMPLE_STORY.generationsPerStep;
  if (m.rewardStd === 0 || (m.fracZeroStd === 1 && phaseOf(m.step) === 'collapse')) {
    return Array.from({ length: n }, () => collapsed(problemId));
  }
  const nCollapsed = Math.round(collapsedShare(m) * n);
  const frozen = Array.from({ length: nCollapsed }, () => collapsed(problemId));
  const pCorrect = passProbability(m);
  let best: Generation[] = [];
  let bestErr = Infinity;
  // rewards are discrete, so draw a few groups and keep the one whose mean is nearest the log
  for (let attempt = 0; attempt < 64 && bestErr > 0.015; attempt++) {
    const group = [...frozen];
    // as often as batch_metrics' pass rate says, a generation solves the problem; the rest make up the mean
    for (let i = nCollapsed; i < n; i++) {
      if (rng() < pCorrect) group.push(sampleGeneration(rng, m.step, problemId, task, 'correct'));
    }
    const rest = n - group.length;
    const aim = (m.reward * n - group.reduce((a, g) => a + g.reward, 0)) / Math.max(1, rest);
    while (group.length < n)
      group.push(sampleGeneration(rng, m.step, problemId, task, aim + m.rewardStd * 1.2 * gauss(rng)));
    const err = Math.abs(mean(group.map((g) => g.reward)) - m.reward);
    if (err < bestErr) [best, bestErr] = [group, err];
  }
  // shuffle so the collapsed ones are not always first
  return best
    .map((g) => ({ g, k: rng() }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.g);
}

// ---------------------------------------------------------------- batch_metrics.jsonl

function batchMetrics(rng: Rng, m: StepMetrics): { pass_at_1: number; pass_at_all: number } {
  const problems = 4;
  const gens = 6;
  const collapsedProblems = Math.round(collapsedShare(m) * problems);
  const p = passProbability(m);
  const solved: number[] = [];
  for (let i = 0; i < problems; i++) {
    let c = 0;
    if (i >= collapsedProblems) for (let j = 0; j < gens; j++) if (rng() < p) c++;
    solved.push(c);
  }
  return {
    pass_at_1: round(mean(solved.map((c) => c / gens)), 4),
    pass_at_all: round(solved.filter((c) => c > 0).length / problems, 4),
  };
}

// ---------------------------------------------------------------- output

const INT_KEYS = new Set(['length', 'syntax_errors', 'batch_size', 'num_problems']);

/** json.dumps as the Python trainer writes it: ", " and ": " separators, floats always with a point. */
function pyJson(value: unknown, key?: string): string {
  if (typeof value === 'number') {
    return Number.isInteger(value) && !(key !== undefined && INT_KEYS.has(key)) ? value.toFixed(1) : String(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => pyJson(v)).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v, k)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

function completionLine(g: Generation): string {
  return pyJson({
    problem_id: g.problemId,
    reward: g.reward,
    base_reward: g.base,
    length: g.completion.length,
    is_degenerate: g.degenerate,
    style_penalty: g.stylePenalty,
    completion: g.completion,
  });
}

function breakdownLine(g: Generation): string {
  return pyJson({
    problem_id: g.problemId,
    total_reward: g.reward,
    base_reward: g.base,
    structural: g.structural,
    type_check: g.typeCheck,
    compile: g.compile,
    tests: g.tests,
    syntax_errors: g.syntaxErrors,
    error_sample: g.errorSample,
    is_degenerate: g.degenerate,
    style_penalty: g.stylePenalty,
    style_reasons: g.styleReasons,
    preview: g.completion.slice(0, 200),
  });
}

export function makeSampleRun(dir: string): void {
  // Wiping is the point (stale files would mix two runs), but never wipe a directory that is not a sample.
  if (existsSync(dir) && readdirSync(dir).length > 0 && !existsSync(join(dir, 'learning.log'))) {
    throw new Error(`${dir} is not empty and holds no learning.log: refusing to wipe it`);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'reward_logs'), { recursive: true });

  const metrics = storyMetrics();
  const genRng = mulberry32(0x5eed0002);
  const batchRng = mulberry32(0x5eed0003);
  const log: string[] = [];
  const batches: string[] = [];
  const completions: string[] = [];
  const breakdowns: string[] = [];
  for (const m of metrics) {
    log.push(learningLogLine(m));
    // the generations are matched to the reward as printed, which is what a reader compares them to
    const printed = { ...m, reward: Number(fixed(m.reward, 3)), rewardStd: Number(fixed(m.rewardStd, 3)) };
    batches.push(pyJson({ ...batchMetrics(batchRng, printed), batch_size: 24, num_problems: 4 }));
    const pid = Math.floor(genRng() * 60);
    const task = TASKS[pid % TASKS.length]!;
    for (const g of stepGenerations(genRng, printed, `p${pid}`, task)) {
      completions.push(completionLine(g));
      breakdowns.push(breakdownLine(g));
    }
  }
  const write = (name: string, lines: string[]) => writeFileSync(join(dir, name), lines.map((l) => l + '\n').join(''));
  write('learning.log', log);
  write('batch_metrics.jsonl', batches);
  write('reward_logs/completions.jsonl', completions);
  write('reward_logs/syntax_aware_breakdown.jsonl', breakdowns);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2]
    ? resolve(process.argv[2])
    : fileURLToPath(new URL('../samples/grpo-demo', import.meta.url));
  makeSampleRun(dir);
  console.log(`sample run written to ${dir}`);
}
