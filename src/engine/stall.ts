/** The stall rule kind: a live run silent for longer than its own pace allows. */
import type { RunRow } from '../store/runs.ts';
import { formatDuration, parseDuration } from '../lib/duration.ts';
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { StallRule } from './rules.ts';

/** Reads of new steps closer together than this tell nothing about a pace that matters (a pace under
 * after/factor is floored anyway): the chunks of one catch-up, a backfill, two files of one step. */
export const MIN_GAP_MS = 10_000;
/** Fewer intervals than this are too few to fit: the floor alone applies. */
export const MIN_INTERVALS = 5;

/**
 * The median interval between the run's steps over its last `window` live arrivals, on rlwatch's clock:
 * each read that took the run to new steps, `gap / steps` after the read before it. Null when too few reads
 * came far enough apart to say (a backfill reads every step at once).
 */
export function medianStepInterval(
  arrivals: ReadonlyArray<{ at: number; steps: number }>,
  window: number,
): number | null {
  const samples: number[] = [];
  for (let i = arrivals.length - 1; i > 0 && samples.length < window; i--) {
    const gap = arrivals[i]!.at - arrivals[i - 1]!.at;
    if (gap >= MIN_GAP_MS) samples.push(gap / arrivals[i]!.steps);
  }
  if (samples.length < MIN_INTERVALS) return null;
  samples.sort((a, b) => a - b);
  const mid = samples.length >> 1;
  return samples.length % 2 === 1 ? samples[mid]! : (samples[mid - 1]! + samples[mid]!) / 2;
}

/** How long the run may be silent: max(`after`, `factor` × its median step interval). */
function stallLimit(ctx: RunContext, rule: StallRule): { limit: number; pace: number | null } {
  const floor = parseDuration(rule.after) as number;
  const pace = medianStepInterval(ctx.store.arrivals.recent(ctx.runId), rule.window);
  return { limit: Math.max(floor, pace === null ? 0 : rule.factor * pace), pace };
}

/** It grew while watched live, this session or recently enough before it: else it is history, never paged. */
const watched = (run: RunRow, sessionStart: number, limit: number): boolean =>
  run.live_at !== null && run.live_at >= sessionStart - limit;

/** The silence as it was: whole seconds under a minute (38 s is not "1s"), whole minutes from there. */
const minutes = (ms: number): string =>
  formatDuration(ms < 60_000 ? Math.max(1, Math.floor(ms / 1000)) * 1000 : Math.floor(ms / 60_000) * 60_000);
const clock = (ms: number): string => `${new Date(ms).toISOString().slice(11, 19)} UTC`;

/**
 * Stall (`phase: running`): rlwatch read no line of the run for the limit, though it was watched growing. Silence
 * is measured on rlwatch's own clock (`runs.active_at`), never on file mtimes. A finished run is not stalled.
 * `phase: start`: the run printed lines but logged no step for `after` (stuck loading, in NCCL init, ...).
 */
export function evaluateStall(ctx: RunContext, rule: StallRule, sessionStart: number): void {
  if (rule.phase === 'start') {
    evaluateStuckAtStart(ctx, rule, sessionStart);
    return;
  }
  const { run } = ctx;
  if (!run || run.last_step === null || run.active_at === null) return;
  const { limit, pace } = stallLimit(ctx, rule);
  const now = ctx.now();
  const last = run.active_at;
  const finished = ctx.finishedAt() !== null;
  const stalled = !finished && watched(run, sessionStart, limit) && now - last > limit;
  const step = ctx.replaying ?? run.last_step;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: 'activity' }, ctx.now);
  const details = { lastActivity: last, lastStep: step, limitMs: limit, stepIntervalMs: pace };
  if (stalled) {
    // the pace is told when it, not the floor, set the limit
    const fitted = pace !== null && rule.factor * pace > (parseDuration(rule.after) as number);
    const paced = fitted ? `, a step every ~${formatDuration(Math.round(pace / 1000) * 1000)}` : '';
    const idle = minutes(now - last);
    const summary = `no new record for ${idle} (last at step ${step}, ${clock(last)}${paced}): crashed or hung?`;
    lc.apply(step, { kind: 'bad', firing: true, severity: rule.severity, describe: () => ({ summary, details }) });
  } else {
    const summary = finished ? 'the run finished' : 'records are arriving again';
    lc.apply(step, { kind: 'ok', recovered: true, describe: () => ({ summary, details }) });
  }
}

function evaluateStuckAtStart(ctx: RunContext, rule: StallRule, sessionStart: number): void {
  const { run } = ctx;
  if (!run || run.started_at === null) return;
  const after = parseDuration(rule.after) as number;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: 'activity' }, ctx.now);
  const details = { startedAt: run.started_at, lastActivity: run.active_at };
  if (run.last_step !== null || ctx.finishedAt() !== null) {
    const step = run.first_step ?? 0;
    const summary = `the first step arrived (step ${step})`;
    lc.apply(step, { kind: 'ok', recovered: true, describe: () => ({ summary, details }) });
    return;
  }
  const now = ctx.now();
  if (watched(run, sessionStart, after) && now - run.started_at > after) {
    const waited = minutes(now - run.started_at);
    const summary = `no step ${waited} after its first lines (${clock(run.started_at)}): stuck at start?`;
    lc.apply(0, { kind: 'bad', firing: true, severity: rule.severity, describe: () => ({ summary, details }) });
  }
}
