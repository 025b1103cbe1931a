/** The registry of rule kinds: each kind of the rule schema mapped to its evaluator, checked at compile time. */
import { evaluateAnomaly } from './anomaly.ts';
import { evaluateRestart } from './attempts.ts';
import type { RunContext } from './context.ts';
import { evaluateCrash } from './crash.ts';
import { evaluateDivergence } from './divergence.ts';
import { evaluateFinished } from './finished.ts';
import { evaluateMilestone } from './milestone.ts';
import { evaluateNonFinite } from './nonFinite.ts';
import { evaluateRelative } from './relative.ts';
import type { Rule } from './rules.ts';
import { evaluateSaturation } from './saturation.ts';
import { evaluateStall } from './stall.ts';
import { evaluateThreshold } from './threshold.ts';
import { evaluateTrainerWarning } from './trainerWarning.ts';
import { evaluateTrend } from './trend.ts';

/** What a rule kind does with a run's context. */
export interface Evaluator<R extends Rule = Rule> {
  /** after a batch of the run's records; `announce` is false while backfilling */
  evaluate?(ctx: RunContext, rule: R, announce: boolean): void;
  /** on the engine's clock tick, for what no record says (a run gone quiet); `sessionStart` is when this process
   * started watching */
  tick?(ctx: RunContext, rule: R, sessionStart: number): void;
  /** judged after the batch's other rules, knowing what they made of the same records */
  last?: boolean;
}

/** One entry per kind of `RuleSchema`: a kind added there without one here does not compile. */
type Evaluators = { [K in Rule['kind']]: Evaluator<Extract<Rule, { kind: K }>> };

const EVALUATORS: Evaluators = {
  threshold: { evaluate: evaluateThreshold },
  trend: { evaluate: evaluateTrend },
  stall: { tick: evaluateStall },
  // a milestone missed because of a cause another rule pages is recorded naming it, however the records were batched
  milestone: { evaluate: evaluateMilestone, last: true },
  non_finite: { evaluate: evaluateNonFinite },
  // an error held while the run still logs fires on the tick once the run is quiet
  crash: { evaluate: evaluateCrash, tick: (ctx, rule) => evaluateCrash(ctx, rule) },
  finished: { evaluate: evaluateFinished },
  restart: { evaluate: evaluateRestart },
  trainer_warning: { evaluate: evaluateTrainerWarning },
  relative: { evaluate: evaluateRelative },
  anomaly: { evaluate: evaluateAnomaly },
  divergence: { evaluate: evaluateDivergence },
  saturation: { evaluate: evaluateSaturation },
};

/** The evaluator of a rule's kind. */
export function evaluatorOf(kind: Rule['kind']): Evaluator {
  return EVALUATORS[kind];
}
