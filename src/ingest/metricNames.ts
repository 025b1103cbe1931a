/**
 * Canonical metric names and the number syntax found in training logs.
 * Every format maps its keys through `canonicalName` so that rules and charts see one name per quantity.
 */

/** The names rules and charts know, besides `rewards/<fn>` and `rewards/<fn>/std`. */
export const CANONICAL_METRICS: ReadonlySet<string> = new Set([
  'reward',
  'reward_std',
  'frac_zero_std',
  'entropy',
  'grad_norm',
  'loss',
  'lr',
  'kl',
  'epoch',
  'completion_length',
  'clipped_ratio',
  'pass_at_1',
  'pass_at_all',
  // PPO health and speed: the preset's rules on any trainer
  'pg_clipfrac',
  'ppo_kl',
  'value_loss',
  'step_time',
]);

const ALIASES: ReadonlyMap<string, string> = new Map([
  // TRL GRPOTrainer
  ['frac_reward_zero_std', 'frac_zero_std'],
  ['learning_rate', 'lr'],
  ['completions/mean_length', 'completion_length'],
  ['completions/clipped_ratio', 'clipped_ratio'],
  // TRL PPO/RLOO trainers log the same quantities under `objective/`
  ['objective/kl', 'kl'],
  ['objective/entropy', 'entropy'],
  // verl / TinyZero
  ['critic/score/mean', 'reward'],
  ['actor/entropy', 'entropy'],
  ['actor/entropy_loss', 'entropy'],
  ['actor/grad_norm', 'grad_norm'],
  ['actor/pg_loss', 'loss'],
  ['actor/lr', 'lr'],
  ['actor/kl_loss', 'kl'],
  ['response_length/mean', 'completion_length'],
  ['response_length/clip_ratio', 'clipped_ratio'],
  // the OCaml GRPO trainer's learning.log
  ['grad', 'grad_norm'],
  ['syntax_rew', 'rewards/syntax_aware_reward'],
]);

/** verl, TRL and OpenRLHF names of the quantities the preset's PPO, length and speed rules watch. */
const TRAINER_ALIASES: ReadonlyMap<string, string> = new Map([
  // verl (TinyZero's metrics reference; verl's console as in a public verl PPO log of Qwen3 under Slurm)
  ['actor/pg_clipfrac', 'pg_clipfrac'],
  ['actor/ppo_kl', 'ppo_kl'],
  ['critic/vf_loss', 'value_loss'],
  ['timing_s/step', 'step_time'],
  // TRL GRPOTrainer: clip_ratio/region_mean is the share of tokens the PPO ratio clip cut; TRL's own
  // `step_time` is already canonical
  ['clip_ratio/region_mean', 'pg_clipfrac'],
  // OpenRLHF PPO (its wandb keys after `train/`): policy_loss, actor_lr, entropy_loss, ppo_clip_ratio, ppo_kl,
  // critic_loss, response_length; `kl` and `reward` are canonical already
  ['policy_loss', 'loss'],
  ['actor_lr', 'lr'],
  ['entropy_loss', 'entropy'],
  ['ppo_clip_ratio', 'pg_clipfrac'],
  ['critic_loss', 'value_loss'],
  ['response_length', 'completion_length'],
]);

/**
 * Home-grown loops (minimind, DeepSpeed-Chat, the R1-Zero GRPO logging guide's callback, OpenRLHF's tqdm postfix),
 * looked up in lower case because these loops print `Reward`, `KL_ref`, `Actor Loss`. Canonical names in any case
 * match too.
 */
const HOME_GROWN_ALIASES: ReadonlyMap<string, string> = new Map([
  ['average reward score', 'reward'],
  ['reward_mean', 'reward'],
  ['avg reward', 'reward'],
  ['mean reward', 'reward'],
  ['kl_ref', 'kl'],
  ['kl divergence', 'kl'],
  ['actor loss', 'loss'],
  ['act_loss', 'loss'],
  ['policy_loss', 'loss'],
  ['policy loss', 'loss'],
  ['avg response len', 'completion_length'],
  ['avg response length', 'completion_length'],
  ['response_length', 'completion_length'],
  ['learning rate', 'lr'],
  ['actor_lr', 'lr'],
  ['grad norm', 'grad_norm'],
  ['reward std', 'reward_std'],
  // `[step 11] avg_loss=0.0002 acc=0.4773`; `avg_loss` keeps its name: loops print it as the epoch's mean beside
  // the step's own loss
  ['acc', 'accuracy'],
]);

/** Debug integers a home-grown loop prints beside its metrics: lengths of token-id tensors, a step counter. */
const COUNTER = /(?:^|_)ids?_len(?:gth)?$|^steps?_taken$/i;

/** Whether a raw key is a counter rather than a measure of the run's health: not stored. */
export function isCounter(raw: string): boolean {
  return COUNTER.test(raw);
}

const NAMES = new Map<string, string>();
const MAX_NAMES = 4096;

/**
 * Maps a raw key onto its canonical name; any other key comes back trimmed.
 * `train/` is stripped first because wandb/trackio exports and some TRL callbacks prefix train metrics
 * with it (`train/reward`, `train/rewards/acc/mean`); `eval/` is kept: eval metrics are a different series.
 */
export function canonicalName(raw: string): string {
  let name = NAMES.get(raw);
  if (name === undefined) {
    if (raw.length > MAX_CACHED_KEY) return nameOf(raw);
    // a log repeats its few keys on every line; a bounded cache, so a stream of new keys cannot grow it
    if (NAMES.size >= MAX_NAMES) NAMES.clear();
    const key = detached(raw);
    NAMES.set(key, (name = nameOf(key)));
  }
  return name;
}

/** Longer keys are not cached: nobody logs them twice. */
export const MAX_CACHED_KEY = 256;

/**
 * A copy of `s` that shares no memory with the text it was cut from. V8 keeps a slice of a string as a view of the
 * whole: a key cut from a line, kept in a cache, would keep that line's chunk of the file (256 KB) alive.
 * Concatenating makes a new string, and slicing it flattens it into one of its own.
 */
export function detached(s: string): string {
  return ` ${s}`.slice(1);
}

function nameOf(raw: string): string {
  let name = raw.trim();
  if (name.startsWith('train/') && name.length > 6) name = name.slice(6);
  const alias = ALIASES.get(name) ?? TRAINER_ALIASES.get(name);
  if (alias !== undefined) return alias;
  const lower = name.toLowerCase();
  const homeGrown = HOME_GROWN_ALIASES.get(lower);
  if (homeGrown !== undefined) return homeGrown;
  if (lower !== name && CANONICAL_METRICS.has(lower)) return lower;
  // TRL: rewards/<fn>/mean -> rewards/<fn>; rewards/<fn>/std stays as it is
  if (name.startsWith('rewards/') && name.endsWith('/mean') && name.length > 13) return name.slice(0, -5);
  return name;
}

/** True for names the built-in rules know: the canonical set and `rewards/*`. */
export function isCanonicalMetric(canonical: string): boolean {
  return CANONICAL_METRICS.has(canonical) || canonical.startsWith('rewards/');
}

const NON_FINITE = /^([+-]?)(nan|inf|infinity)$/i;
/** `np.float64(x)`, `numpy.float32(x)`, `np.int64(x)`, `tensor(x)`, `tensor(x, device='cuda:0')`. */
const WRAPPER = /^(?:(?:np|numpy)\.[a-z]+\d*|(?:torch\.)?tensor)\(/;

/**
 * The first argument of a wrapped number, as `WRAPPER\s*([^,()]*?)\s*(?:,.*)?\)$` would capture it, in linear time:
 * that regex backtracks cubically over runs of spaces (a 1.6 KB value took a second).
 */
function wrappedArgument(s: string): string | undefined {
  const open = WRAPPER.exec(s);
  if (!open || !s.endsWith(')')) return undefined;
  const inner = s.slice(open[0].length, -1);
  const comma = inner.indexOf(',');
  const first = comma < 0 ? inner : inner.slice(0, comma);
  return first.includes('(') || first.includes(')') ? undefined : first.trim();
}

/**
 * Reads a number as Python, numpy and torch print it. NaN and ±Infinity are numbers (a `nan` loss is
 * news); `None`, `null`, booleans and anything else are not. Hot path: plain decimals read in place first.
 */
export function parseNumber(raw: string): number | undefined {
  const s = raw.trim();
  return decimalAt(s, 0, s.length) ?? plainNumber(s) ?? parseSlow(s, true);
}

/** The powers of ten a double holds exactly. */
const EXACT_POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));

/**
 * The plain decimal `s[start, end)` spells (`-0.0469`, `3.58e-06`, `.5`, `7.`), as `Number()` reads it, without a
 * slice or a regex; undefined for anything else (`nan`, `0x1f`, a wrapper, a space), and for more than 15
 * significant digits or a scale beyond 1e±22, which parseNumber reads instead. Exact: an integer below 1e15 times
 * or divided by an exact power of ten is one correctly rounded operation (Clinger's fast path).
 */
export function decimalAt(s: string, start: number, end: number): number | undefined {
  if (start >= end) return undefined;
  let i = start;
  let c = s.charCodeAt(i);
  const negative = c === 45; /* - */
  if (negative || c === 43 /* + */) i++;
  let mantissa = 0;
  let digits = 0; // significant ones: leading zeros are not
  let scale = 0;
  let any = false;
  for (let point = false; i < end; i++) {
    c = s.charCodeAt(i);
    if (c === 46 /* . */ && !point) {
      point = true;
      continue;
    }
    c -= 48;
    if (c < 0 || c > 9) break;
    any = true;
    if (mantissa !== 0 || c !== 0) {
      mantissa = mantissa * 10 + c;
      digits++;
    }
    if (point) scale--;
  }
  if (!any || digits > 15) return undefined;
  if (i < end) {
    if ((s.charCodeAt(i++) | 0x20) !== 101 /* e */) return undefined;
    const negativeExp = i < end && s.charCodeAt(i) === 45;
    if (negativeExp || (i < end && s.charCodeAt(i) === 43)) i++;
    if (i >= end) return undefined;
    let exp = 0;
    for (; i < end; i++) {
      c = s.charCodeAt(i) - 48;
      if (c < 0 || c > 9 || exp > 1000) return undefined;
      exp = exp * 10 + c;
    }
    scale += negativeExp ? -exp : exp;
  }
  let value = 0;
  if (mantissa !== 0) {
    if (scale > 22 || scale < -22) return undefined;
    value = scale >= 0 ? mantissa * EXACT_POW10[scale]! : mantissa / EXACT_POW10[-scale]!;
  }
  return negative ? -value : value;
}

/** `Number()`, minus its surprises: '' is 0 and 0x1f/0b1/0o7 are read as integers. */
function plainNumber(s: string): number | undefined {
  if (s.length === 0) return undefined;
  const n = Number(s);
  if (Number.isNaN(n)) return undefined;
  if (s.length > 2 && s.charCodeAt(0) === 48 /* 0 */) {
    const c = s.charCodeAt(1) | 0x20; // lower-case
    if (c === 120 /* x */ || c === 98 /* b */ || c === 111 /* o */) return undefined;
  }
  return n;
}

function parseSlow(s: string, unwrap: boolean): number | undefined {
  const nonFinite = NON_FINITE.exec(s);
  if (nonFinite) {
    if (nonFinite[2]!.toLowerCase() === 'nan') return NaN;
    return nonFinite[1] === '-' ? -Infinity : Infinity;
  }
  if (!unwrap || s.length < 2) return undefined;
  const first = s.charCodeAt(0);
  // transformers 5 quotes its numbers: '0.06166'
  if ((first === 39 || first === 34) && s.charCodeAt(s.length - 1) === first) return parseInner(s.slice(1, -1));
  const argument = wrappedArgument(s);
  return argument === undefined ? undefined : parseInner(argument);
}

/** One level of unwrapping only: nobody prints `'np.float64(1)'`. */
function parseInner(s: string): number | undefined {
  const t = s.trim();
  return plainNumber(t) ?? parseSlow(t, false);
}
