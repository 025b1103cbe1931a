/**
 * What a rule sees of a run in one evaluation (its series, metric names and open alerts, read once and memoised),
 * and the helpers rules share to walk a series from where they left off.
 */
import { replayingStep, type AttemptRow } from '../store/attempts.ts';
import type { RunRow } from '../store/runs.ts';
import type { LiveStore } from '../store/live.ts';
import { finishedAt } from './finished.ts';
import { OpenAlerts } from './openAlerts.ts';

export interface RunContext {
  store: LiveStore;
  runId: number;
  /** the run's row, read once per evaluation (with `live_at` as `noteLive` left it; no rule writes it) */
  run: RunRow | undefined;
  now: () => number;
  /** `store.attempts.replaying` of the run (its attempts read once per evaluation) */
  replaying: number | null;
  /** the run's open alerts, asked of the store once per evaluation: every rule's Lifecycle looks its alert up here */
  alerts: OpenAlerts;
  /** `store.points.after`, memoised for one evaluation: several rules read the same series */
  after(metric: string, step: number): Array<{ step: number; value: number }>;
  /** `store.points.metricsOf`, memoised for one evaluation (rules write no points) */
  metrics(): readonly string[];
  /** whether the run has logged the metric: rules ask for metrics a log may not have (kl, train_runtime) */
  logged(metric: string): boolean;
  /** `expandMetrics` of a rule's patterns over `metrics()`, memoised for one evaluation */
  expand(patterns: readonly string[]): readonly string[];
  /** `finishedAt`, memoised for one evaluation (crash and run_finished both ask) */
  finishedAt(): number | null;
}

/** The context one evaluation of `runId` gives its rules; `run` is its row and `attempts` its attempts as read for
 * that evaluation. */
export function runContext(
  store: LiveStore,
  runId: number,
  run: RunRow | undefined,
  now: () => number,
  attempts: readonly AttemptRow[] = store.attempts.list(runId),
): RunContext {
  // by metric, then step: no key string built per call (the rules ask ~40 times per evaluation)
  const memo = new Map<string, Map<number, Array<{ step: number; value: number }>>>();
  // a restarted job logging its steps again: the steps the earlier attempt logged past it are not evaluated
  const head = replayingStep(attempts[attempts.length - 1], run?.last_step ?? null);
  let metrics: readonly string[] | undefined;
  let names: ReadonlySet<string> | undefined;
  let finished: number | null | undefined;
  const expanded = new Map<readonly string[], readonly string[]>();
  const ctx: RunContext = {
    store,
    runId,
    run,
    now,
    replaying: head,
    alerts: new OpenAlerts(store.alerts, runId),
    after(metric, step) {
      let byStep = memo.get(metric);
      if (!byStep) memo.set(metric, (byStep = new Map()));
      let rows = byStep.get(step);
      if (!rows) {
        rows = ctx.logged(metric) ? store.points.after(runId, metric, step) : [];
        if (head !== null) rows = rows.filter((p) => p.step <= head);
        byStep.set(step, rows);
      }
      return rows;
    },
    metrics: () => (metrics ??= store.points.metricsOf(runId)),
    logged: (metric) => (names ??= new Set(ctx.metrics())).has(metric),
    expand(patterns) {
      let found = expanded.get(patterns);
      if (!found) expanded.set(patterns, (found = expandMetrics(patterns, ctx.metrics())));
      return found;
    },
    finishedAt: () => (finished !== undefined ? finished : (finished = finishedAt(store, run, ctx.logged))),
  };
  return ctx;
}

/** Before any step: where a rule's cursor starts. */
export const START = -1;

/** Where a rule left off on a metric (its cursor), and the finite points logged since: how the rules that judge
 * one metric record by record begin. */
export function resume(
  ctx: RunContext,
  rule: string,
  metric: string,
): { cursor: ReturnType<LiveStore['alerts']['cursor']>; from: number; fresh: Array<{ step: number; value: number }> } {
  const cursor = ctx.store.alerts.cursor(ctx.runId, rule, metric);
  const from = cursor?.step ?? START;
  return { cursor, from, fresh: ctx.after(metric, from).filter((p) => Number.isFinite(p.value)) };
}

/** The values of a series (steps ascending, as `ctx.after` gives them) looked up at ascending steps: a walk along
 * it instead of a Map built per batch (rules look other metrics up at every step of a backfill). */
export class StepLookup {
  private at = 0;
  constructor(private readonly points: ReadonlyArray<{ step: number; value: number }>) {}

  /** the value logged at `step`, undefined where none was; each call's step must be past the one before */
  get(step: number): number | undefined {
    const points = this.points;
    let j = this.at;
    while (j < points.length && points[j]!.step < step) j++;
    this.at = j;
    const p = points[j];
    return p !== undefined && p.step === step ? p.value : undefined;
  }
}

/** `rewards/*` matches every logged metric under `rewards/` except the `/std` series. A pattern that finds
 * a single metric beside named ones is dropped: one reward function is the reward itself (in the OCaml GRPO
 * trainer's learning.log `syntax_rew` equals `reward`), and the same alert twice is noise. */
export function expandMetrics(patterns: readonly string[], logged: readonly string[]): string[] {
  const named = patterns.filter((p) => !p.endsWith('*') && logged.includes(p));
  const out = new Set<string>(named);
  for (const p of patterns.filter((x) => x.endsWith('*'))) {
    const prefix = p.slice(0, -1);
    const found = logged.filter((m) => m.startsWith(prefix) && !m.endsWith('/std') && !m.endsWith('_std'));
    if (found.length === 1 && named.length > 0) continue;
    for (const m of found) out.add(m);
  }
  return [...out];
}
