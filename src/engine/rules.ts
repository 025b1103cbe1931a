/** The rule schema (every rule kind's fields, in zod) and the rule book: which rules apply to which run. */
import * as z from '../lib/zod.ts';
import { duration, nonEmpty, wholeFrom } from '../lib/zod.ts';
import { globMatch } from '../lib/duration.ts';
import { MIN_INTERVALS } from './stall.ts';

export const Severity = z.enum(['info', 'warning', 'critical']);
export type Severity = z.infer<typeof Severity>;

export const Op = z.enum(['>', '>=', '<', '<=', '==', '!=']);
export type Op = z.infer<typeof Op>;

const Condition = z.strictObject({ metric: nonEmpty(), op: Op, value: z.number() });
export type Condition = z.infer<typeof Condition>;

const common = {
  id: z.string().check(z.regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only')),
  severity: z._default(Severity, 'warning'),
  /** glob over run names; the rule applies to matching runs only */
  runs: z.optional(nonEmpty()),
  enabled: z._default(z.boolean(), true),
  description: z.optional(z.string()),
  /** rule ids this rule's firing alert holds back on the same run (Alertmanager's inhibition: one page per
   * cause); they are recorded, and announced if still firing once this one resolves */
  inhibits: z._default(z.array(nonEmpty()), []),
};

/** Metric op value held for `for` consecutive records; resolves after `recoverFor` records past `recover`. */
const Threshold = z
  .strictObject({
    ...common,
    kind: z.literal('threshold'),
    metric: z.optional(nonEmpty()),
    op: z.optional(Op),
    value: z.optional(z.number()),
    /** more conditions that must hold at the same step */
    and: z._default(z.array(Condition), []),
    /** alternatives, each its own alert keyed by its first metric */
    any: z.optional(z.array(z.array(Condition).check(z.minLength(1)))),
    for: z._default(wholeFrom(1), 1),
    /** hysteresis: firing until the metric is back past this value (default: the threshold itself) */
    recover: z.optional(z.number()),
    recoverFor: z._default(wholeFrom(1), 1),
    /** the quiet period: the alert resolves once it has stayed recovered for this many records in a row (1: at
     * once), so that a condition that returns within them continues the same incident (Prometheus'
     * keep_firing_for) */
    quietFor: z._default(wholeFrom(1), 1),
    /** a second line on the first metric alone: past it for `for` records, the incident fires at (or rises to)
     * `severity`, whatever the other conditions and the learning period say: one incident, an early warning and then
     * its page (a rule of its own would be a second incident of the same cause) */
    escalate: z.optional(
      z.strictObject({
        value: z.number(),
        for: z._default(wholeFrom(1), 1),
        severity: z._default(Severity, 'critical'),
      }),
    ),
    /** learning period: nothing fires before this many records of the first metric; then the rule applies
     * only if their median is on the good side of the line (a model that lives below the learning.log metrics
     * guide's entropy line is not collapsing). 0: judged from the first record */
    learn: z._default(wholeFrom(0), 0),
  })
  .check(
    z.refine((r) => r.any !== undefined || (r.metric !== undefined && r.op !== undefined && r.value !== undefined), {
      message: 'a threshold rule needs metric, op and value (or any: [[conditions]])',
    }),
  );

/** Mean of the last `window` records against the `window` before them. */
const Trend = z.strictObject({
  ...common,
  kind: z.literal('trend'),
  /** a metric name, or a prefix pattern such as `rewards/*` (one alert per matching metric) */
  metrics: z.array(nonEmpty()).check(z.minLength(1)),
  window: z._default(wholeFrom(2), 20),
  /** relative change that counts (0.10 = 10%) */
  change: z._default(z.number().check(z.positive()), 0.1),
  /** absolute change that must also be exceeded, so that values near 0 do not swing by 1000% */
  minDelta: z._default(z.number().check(z.minimum(0)), 0.01),
  direction: z._default(z.enum(['up', 'down', 'any', 'flat']), 'any'),
  /** severities of a rise and of a fall (direction any) */
  rise: z._default(Severity, 'info'),
  fall: z._default(Severity, 'warning'),
  /** direction flat: only while the mean is below this (a plateau of a low reward) */
  below: z.optional(z.number()),
  /** direction flat: stuck when, at its pace over the records read (read optimistically), the metric would not
   * reach `below` within this many records */
  plateauHorizon: z._default(wholeFrom(1), 300),
  /** noise gate: the change must also exceed this many standard errors of the difference of the window
   * means (the noise measured within the last four windows); 0 turns the gate off */
  sigmas: z._default(z.number().check(z.minimum(0)), 5),
  /** clear records in a row before a firing trend resolves: a change that returns within them is the
   * same incident */
  quietFor: z._default(wholeFrom(1), 1),
  /** records in a row the change of the windows (or the plateau) must hold before it fires (a break fires
   * at once) */
  for: z._default(wholeFrom(1), 1),
  /** break test (src/engine/breaks.ts): the mean of the last 5-20 records against the line fitted to the
   * `breakFit` records before them fires beyond this many standard errors (and `change`, `minDelta`);
   * 0 turns it off */
  breakSigmas: z._default(z.number().check(z.minimum(0)), 0),
  breakFit: z._default(wholeFrom(10), 100),
  /** decline test (src/engine/drawdown.ts): the mean of the last `declineWindow` records against the best such mean
   * of the `declineHorizon` records before them fires (as a fall) beyond this many standard errors of a window mean
   * (and `change`, `minDelta`); 0 turns it off */
  declineSigmas: z._default(z.number().check(z.minimum(0)), 0),
  /** the run's first records that are not judged (a learning-rate warm-up: its rewards jump about) */
  warmup: z._default(wholeFrom(0), 0),
  declineWindow: z._default(wholeFrom(2), 30),
  declineHorizon: z._default(wholeFrom(10), 300),
});

const Comparison = z.enum(['<', '>']);

/** Held for `for` records, resolved after `recoverFor` records past `recover`: shared by relative and anomaly. */
const held = {
  for: z._default(wholeFrom(1), 1),
  recoverFor: z._default(wholeFrom(1), 1),
};

/**
 * A metric against its own baseline: the median of the first `baselineWindow` records after `warmup`
 * (early), of the `baselineWindow` records before each one (rolling), or the running maximum (max).
 * Fires when the value (the median of the last `smooth` records) op the line: factor × baseline, held
 * within [floor, cap]. While an alert is open its baseline is the one it opened with (an incident does not
 * become its own baseline).
 */
const Relative = z.strictObject({
  ...common,
  kind: z.literal('relative'),
  metric: nonEmpty(),
  baseline: z._default(z.enum(['early', 'rolling', 'max']), 'early'),
  /** records skipped before the early baseline is learnt (the first steps of a run are not its level) */
  warmup: z._default(wholeFrom(0), 0),
  baselineWindow: z._default(wholeFrom(1), 20),
  /** rolling: records between the baseline window and the value (a slow rise is judged against where the metric
   * was this long ago, not against its own last steps) */
  lag: z._default(wholeFrom(0), 0),
  smooth: z._default(wholeFrom(1), 1),
  op: Comparison,
  factor: z.number().check(z.positive()),
  /** hysteresis: firing until the value is back past recover × baseline, the floor aside (default: factor, floored) */
  recover: z.optional(z.number().check(z.positive())),
  /** the value must also differ from the baseline by this much (absolute), so that tiny baselines do not fire */
  minDelta: z._default(z.number().check(z.minimum(0)), 0),
  /** the line is never nearer than this absolute value (grad_norm: the learning.log guide's 10); with a floor, a
   * rolling baseline is judged from the first record on: the median of the records there are, the floor alone
   * before any */
  floor: z.optional(z.number()),
  /** the line is never farther than this absolute value: beyond it the rule fires whatever the baseline */
  cap: z.optional(z.number()),
  /** rolling: the value's log must also be this many robust standard deviations (1.4826 × the MAD of the
   * logs of the baseline window) from the baseline's, so that a run whose norm swings over two decades is
   * not exploding at 10× its median; 0: no such gate */
  logSigmas: z._default(z.number().check(z.minimum(0)), 0),
  /** ...and by this many standard errors of the smoothed value (the run's own noise; 0: no noise gate) */
  sigmas: z._default(z.number().check(z.minimum(0)), 0),
  ...held,
});

/**
 * A spike: robust z-score (x - median) / (1.4826 · MAD; where the MAD is 0, the first non-zero deviation above it)
 * over the `window` records before each one, judged
 * once `warmup` records are there; a spike resolves after `recoverFor` calm records (its cooldown).
 */
const Anomaly = z.strictObject({
  ...common,
  kind: z.literal('anomaly'),
  metric: nonEmpty(),
  window: z._default(wholeFrom(5), 50),
  warmup: z._default(wholeFrom(5), 20),
  z: z._default(z.number().check(z.positive()), 6),
  direction: z._default(z.enum(['up', 'down', 'any']), 'up'),
  /** the value must also differ from the median by this much (absolute) */
  minDelta: z._default(z.number().check(z.minimum(0)), 0),
  ...held,
  recoverFor: z._default(wholeFrom(1), 10),
});

/**
 * `phase: running`: no line read for max(`after`, `factor` × the run's median interval between steps over its
 * last `window` steps) while it was watched growing. `phase: start`: lines read but no step for `after`.
 */
const Stall = z.strictObject({
  ...common,
  kind: z.literal('stall'),
  /** the floor: never sooner than this */
  after: z._default(duration(), '10m'),
  factor: z._default(z.number().check(z.positive()), 5),
  window: z._default(wholeFrom(MIN_INTERVALS, 200), 50),
  phase: z._default(z.enum(['running', 'start']), 'running'),
});

/** By epoch E, the mean of the last `window` records of the metric should satisfy op value. */
const Milestone = z.strictObject({
  ...common,
  kind: z.literal('milestone'),
  epoch: z.number().check(z.positive()),
  metric: nonEmpty(),
  op: Op,
  value: z.number(),
  window: z._default(wholeFrom(1), 10),
  /** `unit`: the value is written for a metric in [0, 1] (the rewards of a GRPO training analysis); on a run whose
   * metric has left [0, 1] by the epoch, it is read as that fraction of the run's range so far:
   * min + value × (max − min) */
  scale: z._default(z.enum(['absolute', 'unit']), 'absolute'),
  /** the value is the preset's assumption, not a target the user set: a miss is at most a warning. A config
   * entry that sets `value` makes it the user's target (in the metric's own units) */
  assumed: z._default(z.boolean(), false),
  /** rules whose firing alert explains a miss (a run whose prompts are all solved keeps frac_zero_std high):
   * the miss is recorded as info naming it */
  explainedBy: z._default(z.array(nonEmpty()), []),
});

/** The metrics whose first NaN or ±Inf is news (verl's and TRL's spellings map onto these names). */
export const NON_FINITE_METRICS = ['loss', 'grad_norm', 'reward', 'kl', 'entropy'] as const;

/** The first NaN or ±Inf of a metric fires at once; resolves after `recoverFor` finite records. */
const NonFinite = z.strictObject({
  ...common,
  kind: z.literal('non_finite'),
  metrics: z._default(z.array(nonEmpty()).check(z.minLength(1)), [...NON_FINITE_METRICS]),
  recoverFor: z._default(wholeFrom(1), 5),
});

/** Error lines of the run's console logs: fatal ones fire at once, others once the run also goes quiet
 * for `grace` (measured on rlwatch's own clock). */
const Crash = z.strictObject({ ...common, kind: z.literal('crash'), grace: z._default(duration(), '2m') });

/** A job that logs its steps again from an earlier step (restarted from a checkpoint): one info card per restart. */
const Restart = z.strictObject({ ...common, kind: z.literal('restart') });

/** The end of training: one summary card. */
const Finished = z.strictObject({ ...common, kind: z.literal('finished') });

/** Trainer warnings: one incident per kind while it keeps repeating; resolves after `quietSteps` steps
 * without it. */
const TrainerWarning = z.strictObject({
  ...common,
  kind: z.literal('trainer_warning'),
  quietSteps: z._default(wholeFrom(1), 20),
});

/**
 * The signature of reward hacking: over the same windows one metric's mean rises while another's falls, each
 * by more than `minDelta` and more than `sigmas` standard errors of the difference of its window means.
 * One alert per rule, keyed by its metric patterns joined with spaces.
 */
const Divergence = z.strictObject({
  ...common,
  kind: z.literal('divergence'),
  /** metric names or prefix patterns such as `rewards/*` (the `/std` series are left out) */
  metrics: z.array(nonEmpty()).check(z.minLength(1)),
  window: z._default(wholeFrom(2), 15),
  /** the same judged over windows this long too (a divergence over a few hundred steps moves two 15-record windows
   * by less than `minDelta`); 0: off */
  longWindow: z._default(wholeFrom(0), 0),
  minDelta: z._default(z.number().check(z.minimum(0)), 0.05),
  sigmas: z._default(z.number().check(z.minimum(0)), 5),
  quietFor: z._default(wholeFrom(1), 15),
});

/**
 * A reward component that gives no signal: at the highest value it has reached, with zero spread within the
 * batch (its `<metric>/std` series at 0), for `for` records. One alert per matching metric.
 */
const Saturation = z.strictObject({
  ...common,
  kind: z.literal('saturation'),
  /** metric names or prefix patterns such as `rewards/*`; each needs its `<metric>/std` series */
  metrics: z.array(nonEmpty()).check(z.minLength(1)),
  ...held,
});

export const RuleSchema = z.discriminatedUnion('kind', [
  Threshold,
  Trend,
  Stall,
  Milestone,
  NonFinite,
  Crash,
  Finished,
  Restart,
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
export type RestartRule = Extract<Rule, { kind: 'restart' }>;
export type TrainerWarningRule = Extract<Rule, { kind: 'trainer_warning' }>;
export type RelativeRule = Extract<Rule, { kind: 'relative' }>;
export type AnomalyRule = Extract<Rule, { kind: 'anomaly' }>;
export type DivergenceRule = Extract<Rule, { kind: 'divergence' }>;
export type SaturationRule = Extract<Rule, { kind: 'saturation' }>;

/** A config entry naming an existing rule changes it: everywhere, or (with `runs`) for matching runs only. */
export const RuleOverride = z.catchall(
  z.object({ id: z.string({ error: 'every rule needs an id' }).check(z.minLength(1)), runs: z.optional(nonEmpty()) }),
  z.unknown(),
);
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
        const { id, runs, ...rest } = head.data;
        const patch = ownTarget(base[at] as Rule, rest);
        parseRule({ ...base[at], ...patch }, where); // validate now, not at evaluation time
        scoped.push({ id, runs, patch });
      } else {
        base[at] = parseRule({ ...base[at], ...ownTarget(base[at] as Rule, head.data) }, where);
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

/** A milestone whose value the config sets is the user's own target, in the metric's units (unless the entry
 * says otherwise). */
function ownTarget<T extends Record<string, unknown>>(rule: Rule, patch: T): T {
  if (rule.kind !== 'milestone' || !('value' in patch)) return patch;
  return { assumed: false, scale: 'absolute', ...patch };
}

function parseRule(entry: unknown, where: string): Rule {
  const r = RuleSchema.safeParse(entry);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue && issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
  throw new RuleError(`${where}${field}: ${issue?.message ?? 'invalid rule'}`);
}
