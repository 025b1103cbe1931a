/** The threshold rule kind: a metric past a fixed value for a number of records. */
import { formatValue } from '../lib/numbers.ts';
import { START, StepLookup, type RunContext } from './context.ts';
import { type Describe, Lifecycle } from './lifecycle.ts';
import { alternatives, compare, type Condition, type ThresholdRule } from './rules.ts';
import { median } from './stats.ts';

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
const NO_LOOKUPS: readonly StepLookup[] = [];

/** Threshold: each alternative is its own alert key, named after its first metric. */
export function evaluateThreshold(ctx: RunContext, rule: ThresholdRule): void {
  const { store, runId } = ctx;
  for (const conds of alternatives(rule)) {
    const [first, ...rest] = conds;
    if (!first) continue;
    const cursor = store.alerts.cursor(runId, rule.id, first.metric);
    const from = cursor?.step ?? START;
    const logged = ctx.after(first.metric, from);
    if (logged.length === 0) continue;
    const otherPoints = rest.map((c) => ctx.after(c.metric, from));
    // the newest step, unless every other metric has logged it or a later one, waits for a later step: its record
    // may not be whole yet (a console log's step spreads over lines that can land in two reads), and a step
    // judged without a metric is not judged again when it comes
    const newest = logged[logged.length - 1]!.step;
    // (a rule that escalates on its first metric alone does not wait for a metric the run has never logged: its
    // other conditions cannot hold without it, and its escalation would lag a record behind)
    const never = (k: number): boolean =>
      rule.escalate !== undefined && store.points.upTo(runId, rest[k]!.metric, newest, 1).length === 0;
    const whole = otherPoints.every((o, k) => (o.length > 0 && o[o.length - 1]!.step >= newest) || never(k));
    const main = whole ? logged : logged.slice(0, -1);
    if (main.length === 0) continue;
    const others = rest.length === 0 ? NO_LOOKUPS : otherPoints.map((o) => new StepLookup(o));
    let streak = Number(cursor?.state.streak ?? 0);
    let recovering = Number(cursor?.state.recovering ?? 0);
    // `escalate`: records in a row past its line, judged on the first metric alone
    const esc = rule.escalate;
    let hot = Number(cursor?.state.hot ?? 0);
    // `learn`: the first records of the run, and whether their median leaves the line to be judged at all
    const early = (cursor?.state.early as number[] | undefined) ?? [];
    let gate = (cursor?.state.gate as 'on' | 'off' | undefined) ?? (rule.learn === 0 ? 'on' : undefined);
    if (gate === 'off' && !esc) {
      store.alerts.saveCursor(runId, rule.id, first.metric, main[main.length - 1]!.step, cursor?.state ?? {});
      continue;
    }
    const quiet = { quietFor: rule.quietFor, quiet: Number(cursor?.state.quiet ?? 0) };
    const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: first.metric }, ctx.now, quiet);
    // plain loops and one reused array: this runs for every step of every threshold rule in a backfill
    const values: Array<number | undefined> = new Array<number | undefined>(conds.length);
    // the words of a verdict, built only for a transition; the escalation is said against its own line, on its metric
    const describe =
      (k: number, line: boolean): Describe =>
      () => {
        const judged = line ? conds.slice(0, 1) : conds;
        const { shown, details } = describeValues(judged, values);
        const summary = shown()
          .map((s, i) => `${s} ${judged[i]!.op} ${formatValue(i === 0 && line ? esc!.value : judged[i]!.value)}`)
          .join(' and ');
        return { summary: `${summary} for ${plural(k, 'step')}`, details: details() };
      };
    for (const p of main) {
      if (gate === undefined && Number.isFinite(p.value)) {
        early.push(p.value);
        if (early.length >= rule.learn) gate = compare(median(early), first.op, first.value) ? 'off' : 'on';
        if (gate === 'off' && !esc) break;
      }
      values[0] = p.value;
      let missing = Number.isNaN(p.value);
      for (let k = 0; k < others.length && !missing; k++) {
        const v = (others[k] as StepLookup).get(p.step);
        values[k + 1] = v;
        missing = v === undefined || Number.isNaN(v);
      }
      // the escalation's line needs the first metric only, from the first record (as a rule of its own would)
      const hotNow = esc !== undefined && compare(p.value, first.op, esc.value);
      // neither bad nor recovered; but an escalating rule judges its first metric on its own
      if (Number.isNaN(p.value) || (missing && !esc)) continue;
      let holds = !missing && gate !== 'off';
      for (let k = 0; k < conds.length && holds; k++)
        holds = compare(values[k] as number, conds[k]!.op, conds[k]!.value);
      if (holds || hotNow) {
        const n = holds ? ++streak : (streak = 0);
        hot = hotNow ? hot + 1 : 0;
        recovering = 0;
        const raised = esc !== undefined && hot >= esc.for;
        if (raised) lc.hold(p.step, 1, 1, esc.severity, describe(hot, true));
        else if (holds && gate === 'on') lc.hold(p.step, n, rule.for, rule.severity, describe(n, false));
        else if (hotNow) lc.hold(p.step, 0, 1, esc.severity, describe(hot, true));
        // else: still learning, nothing judged yet
      } else {
        streak = 0;
        hot = 0;
        // hysteresis: a single-condition rule (or one that escalates) resolves only once its first metric is back
        // past `recover`
        const past =
          (conds.length > 1 && !esc) || rule.recover === undefined || !compare(p.value, first.op, rule.recover);
        recovering = past ? recovering + 1 : 0;
        const recovered = recovering >= rule.recoverFor;
        if ((gate === undefined && !esc) || !lc.wouldChange('ok', recovered)) continue;
        const bound = rule.recover ?? first.value;
        const n = recovering;
        // an escalating rule resolves on its first metric alone: said on it alone
        const { shown, details } = describeValues(missing || esc ? conds.slice(0, 1) : conds, [...values]);
        lc.apply(p.step, {
          kind: 'ok',
          recovered,
          describe: () => ({
            summary: `${shown().join(', ')}: back past ${formatValue(bound)} for ${plural(n, 'step')}`,
            details: details(),
          }),
        });
      }
    }
    const held = rule.quietFor > 1 ? { quiet: lc.quiet } : {};
    const counted = esc ? { hot, ...held } : held;
    const state =
      gate === undefined ? { streak, recovering, early, ...counted } : { streak, recovering, gate, ...counted };
    store.alerts.saveCursor(runId, rule.id, first.metric, main[main.length - 1]!.step, state);
  }
}

/** `metric value` for each condition, and the values as details: built only for transitions. */
function describeValues(conds: readonly Condition[], values: ReadonlyArray<number | undefined>) {
  return {
    shown: (): string[] => conds.map((c, i) => `${c.metric} ${formatValue(values[i] as number)}`),
    details: () => ({ values: Object.fromEntries(conds.map((c, i) => [c.metric, values[i]])) }),
  };
}
