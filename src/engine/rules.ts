// zod compiles fast paths (new Function) on first use: off before any schema is parsed (the preset parses at load)
import '../zodJitless.ts';
import { z } from 'zod';
import { DURATION_EXPECTED, globMatch, parseDuration } from './duration.ts';
import { MIN_INTERVALS } from './stall.ts';

export const Severity = z.enum(['info', 'warning', 'critical']);
export type Severity = z.infer<typeof Severity>;

export const Op = z.enum(['>', '>=', '<', '<=', '==', '!=']);
export type Op = z.infer<typeof Op>;

const Condition = z.object({ metric: z.string().min(1), op: Op, value: z.number() }).strict();
export type Condition = z.infer<typeof Condition>;

const Duration = z.string().refine((s) => parseDuration(s) !== undefined, { message: DURATION_EXPECTED });

const common = {
  id: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only'),
  severity: Severity.default('warning'),
  /** glob over run names; the rule applies to matching runs only */
  runs: z.string().min(1).optional(),
  enabled: z.boolean().default(true),
  description: z.string().optional(),
};

/** Metric op value held for `for` consecutive records; resolves after `recoverFor` records past `recover`. */
const Threshold = z
  .object({
    ...common,
    kind: z.literal('threshold'),
    metric: z.string().min(1).optional(),
    op: Op.optional(),
    value: z.number().optional(),
    /** more conditions that must hold at the same step */
    and: z.array(Condition).default([]),
    /** alternatives, each its own alert keyed by its first metric */
    any: z.array(z.array(Condition).min(1)).optional(),
    for: z.number().int().min(1).default(1),
    /** hysteresis: firing until the metric is back past this value (default: the threshold itself) */
    recover: z.number().optional(),
    recoverFor: z.number().int().min(1).default(1),
    /** learning period: nothing fires before this many records of the first metric; then the rule applies
     * only if their median is on the good side of the line (a model that lives below seed 000's entropy
     * line is not collapsing). 0: judged from the first record */
    learn: z.number().int().min(0).default(0),
  })
  .strict()
  .refine((r) => r.any !== undefined || (r.metric !== undefined && r.op !== undefined && r.value !== undefined), {
    message: 'a threshold rule needs metric, op and value (or any: [[conditions]])',
  });

/** Mean of the last `window` records against the `window` before them. */
const Trend = z
  .object({
    ...common,
    kind: z.literal('trend'),
    /** a metric name, or a prefix pattern such as `rewards/*` (one alert per matching metric) */
    metrics: z.array(z.string().min(1)).min(1),
    window: z.number().int().min(2).default(20),
    /** relative change that counts (0.10 = 10%) */
    change: z.number().positive().default(0.1),
    /** absolute change that must also be exceeded, so that values near 0 do not swing by 1000% */
    minDelta: z.number().min(0).default(0.01),
    direction: z.enum(['up', 'down', 'any', 'flat']).default('any'),
    /** severities of a rise and of a fall (direction any) */
    rise: Severity.default('info'),
    fall: Severity.default('warning'),
    /** direction flat: only while the mean is below this (a plateau of a low reward) */
    below: z.number().optional(),
    /** noise gate: the change must also exceed this many standard errors of the difference of the window
     * means (the noise measured within the last four windows); 0 turns the gate off */
    sigmas: z.number().min(0).default(5),
    /** clear records in a row before a firing trend resolves: a change that returns within them is the
     * same incident */
    quietFor: z.number().int().min(1).default(1),
    /** records in a row the change of the windows (or the plateau) must hold before it fires (a break fires
     * at once) */
    for: z.number().int().min(1).default(1),
    /** break test (src/engine/breaks.ts): the mean of the last 5-20 records against the line fitted to the
     * `breakFit` records before them fires beyond this many standard errors (and `change`, `minDelta`);
     * 0 turns it off */
    breakSigmas: z.number().min(0).default(0),
    breakFit: z.number().int().min(10).default(100),
  })
  .strict();

const Comparison = z.enum(['<', '>']);

/** Held for `for` records, resolved after `recoverFor` records past `recover`: shared by relative and anomaly. */
const held = {
  for: z.number().int().min(1).default(1),
  recoverFor: z.number().int().min(1).default(1),
};

/**
 * A metric against its own baseline: the median of the first `baselineWindow` records after `warmup`
 * (early), of the `baselineWindow` records before each one (rolling), or the running maximum (max).
 * Fires when the value (the median of the last `smooth` records) op factor × baseline.
 */
const Relative = z
  .object({
    ...common,
    kind: z.literal('relative'),
    metric: z.string().min(1),
    baseline: z.enum(['early', 'rolling', 'max']).default('early'),
    /** records skipped before the early baseline is learnt (the first steps of a run are not its level) */
    warmup: z.number().int().min(0).default(0),
    baselineWindow: z.number().int().min(1).default(20),
    smooth: z.number().int().min(1).default(1),
    op: Comparison,
    factor: z.number().positive(),
    /** hysteresis: firing until the value is back past recover × baseline (default: factor) */
    recover: z.number().positive().optional(),
    /** the value must also differ from the baseline by this much (absolute), so that tiny baselines do not fire */
    minDelta: z.number().min(0).default(0),
    /** ...and by this many standard errors of the smoothed value (the run's own noise; 0: no noise gate) */
    sigmas: z.number().min(0).default(0),
    ...held,
  })
  .strict();

/**
 * A spike: robust z-score (x - median) / (1.4826 · MAD; where the MAD is 0, the first non-zero deviation above it)
 * over the `window` records before each one, judged
 * once `warmup` records are there; a spike resolves after `recoverFor` calm records (its cooldown).
 */
const Anomaly = z
  .object({
    ...common,
    kind: z.literal('anomaly'),
    metric: z.string().min(1),
    window: z.number().int().min(5).default(50),
    warmup: z.number().int().min(5).default(20),
    z: z.number().positive().default(6),
    direction: z.enum(['up', 'down', 'any']).default('up'),
    /** the value must also differ from the median by this much (absolute) */
    minDelta: z.number().min(0).default(0),
    ...held,
    recoverFor: z.number().int().min(1).default(10),
  })
  .strict();

/**
 * `phase: running`: no line read for max(`after`, `factor` × the run's median interval between steps over its
 * last `window` steps) while it was watched growing. `phase: start`: lines read but no step for `after`.
 */
const Stall = z
  .object({
    ...common,
    kind: z.literal('stall'),
    /** the floor: never sooner than this */
    after: Duration.default('10m'),
    factor: z.number().positive().default(5),
    window: z.number().int().min(MIN_INTERVALS).max(200).default(50),
    phase: z.enum(['running', 'start']).default('running'),
  })
  .strict();

/** By epoch E, the mean of the last `window` records of the metric should satisfy op value. */
const Milestone = z
  .object({
    ...common,
    kind: z.literal('milestone'),
    epoch: z.number().positive(),
    metric: z.string().min(1),
    op: Op,
    value: z.number(),
    window: z.number().int().min(1).default(10),
  })
  .strict();

/** The metrics whose first NaN or ±Inf is news (verl's and TRL's spellings map onto these names). */
export const NON_FINITE_METRICS = ['loss', 'grad_norm', 'reward', 'kl', 'entropy'] as const;

/** The first NaN or ±Inf of a metric fires at once; resolves after `recoverFor` finite records. */
const NonFinite = z
  .object({
    ...common,
    kind: z.literal('non_finite'),
    metrics: z.array(z.string().min(1)).min(1).default([...NON_FINITE_METRICS]),
    recoverFor: z.number().int().min(1).default(5),
  })
  .strict();

/** Error lines of the run's console logs: fatal ones fire at once, others once the run also goes quiet
 * for `grace` (measured on rlwatch's own clock). */
const Crash = z.object({ ...common, kind: z.literal('crash'), grace: Duration.default('2m') }).strict();

/** The end of training: one summary card. */
const Finished = z.object({ ...common, kind: z.literal('finished') }).strict();

/** Trainer warnings: one incident per kind while it keeps repeating; resolves after `quietSteps` steps
 * without it. */
const TrainerWarning = z
  .object({ ...common, kind: z.literal('trainer_warning'), quietSteps: z.number().int().min(1).default(20) })
  .strict();

/**
 * The signature of reward hacking: over the same windows one metric's mean rises while another's falls, each
 * by more than `minDelta` and more than `sigmas` standard errors of the difference of its window means.
 * One alert per rule, keyed by its metric patterns joined with spaces.
 */
const Divergence = z
  .object({
    ...common,
    kind: z.literal('divergence'),
    /** metric names or prefix patterns such as `rewards/*` (the `/std` series are left out) */
    metrics: z.array(z.string().min(1)).min(1),
    window: z.number().int().min(2).default(15),
    minDelta: z.number().min(0).default(0.05),
    sigmas: z.number().min(0).default(5),
    quietFor: z.number().int().min(1).default(15),
  })
  .strict();

/**
 * A reward component that gives no signal: at the highest value it has reached, with zero spread within the
 * batch (its `<metric>/std` series at 0), for `for` records. One alert per matching metric.
 */
const Saturation = z
  .object({
    ...common,
    kind: z.literal('saturation'),
    /** metric names or prefix patterns such as `rewards/*`; each needs its `<metric>/std` series */
    metrics: z.array(z.string().min(1)).min(1),
    ...held,
  })
  .strict();

export const RuleSchema = z.discriminatedUnion('kind', [
  Threshold,
  Trend,
  Stall,
  Milestone,
  NonFinite,
  Crash,
  Finished,
  TrainerWarning,
  Relative,
  Anomaly,
  Divergence,
  Saturation,
]);
export type Rule = z.infer<typeof RuleSchema>;
export type ThresholdRule = Extract<Rule, { kind: 'threshold' }>;
export type TrendRule = Extract<Rule, { kind: 'trend' }>;
export type StallRule = Extract<Rule, { kind: 'stall' }>;
export type MilestoneRule = Extract<Rule, { kind: 'milestone' }>;
export type NonFiniteRule = Extract<Rule, { kind: 'non_finite' }>;
export type CrashRule = Extract<Rule, { kind: 'crash' }>;
export type FinishedRule = Extract<Rule, { kind: 'finished' }>;
export type TrainerWarningRule = Extract<Rule, { kind: 'trainer_warning' }>;
export type RelativeRule = Extract<Rule, { kind: 'relative' }>;
export type AnomalyRule = Extract<Rule, { kind: 'anomaly' }>;
export type DivergenceRule = Extract<Rule, { kind: 'divergence' }>;
export type SaturationRule = Extract<Rule, { kind: 'saturation' }>;

/** A config entry naming an existing rule changes it: everywhere, or (with `runs`) for matching runs only. */
export const RuleOverride = z
  .object({ id: z.string({ error: 'every rule needs an id' }).min(1), runs: z.string().min(1).optional() })
  .catchall(z.unknown());
export type RuleOverride = z.infer<typeof RuleOverride>;

/** What `alternatives` gave each rule: the engine asks after every batch (shared: not to be changed). */
const alternativesOf = new WeakMap<ThresholdRule, readonly (readonly Condition[])[]>();

/** The alternatives of a threshold rule, each a list of conditions that must all hold. */
export function alternatives(rule: ThresholdRule): readonly (readonly Condition[])[] {
  if (rule.any) return rule.any;
  let alts = alternativesOf.get(rule);
  if (!alts) {
    alts = [[{ metric: rule.metric as string, op: rule.op as Op, value: rule.value as number }, ...rule.and]];
    alternativesOf.set(rule, alts);
  }
  return alts;
}

const EPSILON = 1e-9;
export function compare(a: number, op: Op, b: number): boolean {
  switch (op) {
    case '>':
      return a > b;
    case '>=':
      return a >= b - EPSILON;
    case '<':
      return a < b;
    case '<=':
      return a <= b + EPSILON;
    case '==':
      return Math.abs(a - b) <= EPSILON;
    case '!=':
      return Math.abs(a - b) > EPSILON;
  }
}

/**
 * The rules in force: the preset, changed and extended by the config's entries. An entry whose id is
 * known patches that rule (with `runs`: only for those runs); an unknown id must be a complete rule.
 */
export class RuleBook {
  private constructor(
    private readonly base: Rule[],
    private readonly scoped: Array<{ runs: string; id: string; patch: Record<string, unknown> }>,
  ) {}

  static build(preset: readonly Rule[], entries: readonly unknown[]): RuleBook {
    const base = [...preset];
    const scoped: Array<{ runs: string; id: string; patch: Record<string, unknown> }> = [];
    entries.forEach((entry, i) => {
      const where = `alerts.rules[${i}]`;
      const head = RuleOverride.safeParse(entry);
      if (!head.success) {
        const issue = head.error.issues[0];
        const field = issue && issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
        throw new RuleError(`${where}${field}: ${issue?.message ?? 'invalid rule'}`);
      }
      const at = base.findIndex((r) => r.id === head.data.id);
      if (at < 0) {
        base.push(parseRule(entry, where));
      } else if (head.data.runs !== undefined && base[at]?.runs === undefined) {
        const { id, runs, ...patch } = head.data;
        parseRule({ ...base[at], ...patch }, where); // validate now, not at evaluation time
        scoped.push({ id, runs, patch });
      } else {
        base[at] = parseRule({ ...base[at], ...head.data }, where);
      }
    });
    return new RuleBook(base, scoped);
  }

  /** What `forRun` gave each run name: the engine asks after every batch, and a book never changes. */
  private readonly byRun = new Map<string, readonly Rule[]>();

  /** The enabled rules for one run, with the run-scoped changes applied (shared: not to be changed). */
  forRun(runName: string): readonly Rule[] {
    let rules = this.byRun.get(runName);
    if (!rules) this.byRun.set(runName, (rules = this.rulesFor(runName)));
    return rules;
  }

  private rulesFor(runName: string): Rule[] {
    return this.base
      .map((rule) => {
        const patches = this.scoped.filter((s) => s.id === rule.id && globMatch(s.runs, runName));
        return patches.length === 0 ? rule : RuleSchema.parse(Object.assign({}, rule, ...patches.map((p) => p.patch)));
      })
      .filter((r) => r.enabled && (r.runs === undefined || globMatch(r.runs, runName)));
  }

  all(): readonly Rule[] {
    return this.base;
  }
}

export class RuleError extends Error {}

function parseRule(entry: unknown, where: string): Rule {
  const r = RuleSchema.safeParse(entry);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue && issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
  throw new RuleError(`${where}${field}: ${issue?.message ?? 'invalid rule'}`);
}
