/** The run_crashed rule kind: a fatal error in a run's log, or a traceback the run did not survive, with its lines. */
import type { EventRow } from '../store/events.ts';
import { formatDuration, parseDuration } from '../lib/duration.ts';
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { CrashRule } from './rules.ts';

/** The alert key of a crash: about the run's log, not a metric (no chart, no sparkline). */
export const CRASH_KEY = 'log:crash';

/** The evidence a card shows: the exception line last, after the lines before it. */
export function evidenceOf(e: EventRow): { title: string; lines: string[] } {
  const lines = [...e.context, e.text];
  return { title: `the log up to the error (last ${lines.length} lines)`, lines };
}

/** A Ray worker's error (`(WorkerDict pid=2) TypeError: ...`): verl's driver runs as TaskRunner or main_task. */
const WORKER = /^\((?!TaskRunner |main_task )[^)]*pid=\d+/;

/** Each rule's grace in milliseconds, parsed once (it is asked after every batch of every run). */
const graces = new WeakMap<CrashRule, number>();
function graceOf(rule: CrashRule): number {
  let ms = graces.get(rule);
  if (ms === undefined) graces.set(rule, (ms = parseDuration(rule.grace) as number));
  return ms;
}

/**
 * run_crashed, from the error events of the run's console logs. A fatal one (OOM, ChildFailedError,
 * NCCL watchdog, Killed, segfault) fires at once. Any other (a traceback, an ActorDiedError) is held: it
 * fires only if the run also goes quiet for `grace` within `grace` of it, on rlwatch's own clock
 * (`runs.active_at`); a run that keeps writing past the grace survived it. Evaluated after each batch and
 * on the engine's tick. A non-fatal error in history (a backfill, the backlog read at start-up: `live`
 * false) is not held: whether the job survived it cannot be told on rlwatch's clock. But the last error of a log
 * that logged no step after it, raised by the job's own process rather than one of its Ray workers (a job that died
 * before step 1, or whose last words were a traceback), fires once on the tick that follows (the end of a backfill,
 * the first tick of `start`), unless the run has grown while watched since: then it is held like a live error. A
 * finished run does not crash; a crashed run that logs new steps (resumed, or it was alive after all) resolves.
 */
export function evaluateCrash(ctx: RunContext, rule: CrashRule, live = true): void {
  const { store, runId, run } = ctx;
  if (!run) return;
  const grace = graceOf(rule);
  const cursor = store.alerts.cursor(runId, rule.id, CRASH_KEY);
  let seen = Number(cursor?.state.seen ?? 0);
  let held = cursor?.state.held as number | undefined;
  let last = cursor?.state.last as number | undefined;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: CRASH_KEY }, ctx.now);
  const fire = (e: EventRow, why: string): void => {
    lc.apply(e.step, {
      kind: 'bad',
      firing: true,
      severity: rule.severity,
      describe: () => ({
        summary: `${e.title}${why}`,
        details: { event: e.id, fatal: e.fatal, evidence: evidenceOf(e) },
      }),
    });
  };

  const open = lc.state === 'firing' ? ctx.alerts.get(rule.id, CRASH_KEY) : undefined;
  if (open && run.last_step !== null && run.last_step > (open.fired_step ?? open.started_step)) {
    const step = run.last_step;
    const summary = `the run logged step ${step} after the error`;
    lc.apply(step, { kind: 'ok', recovered: true, describe: () => ({ summary, details: {} }) });
  }
  const finished = ctx.finishedAt() !== null;
  for (const e of store.events.after(runId, ['error'], seen)) {
    seen = e.id;
    if (finished) continue; // errors at exit (a segfault in teardown) after the end of training
    if (e.fatal) {
      held = undefined;
      if (lc.state === null) fire(e, '');
    } else if (lc.state === null) {
      held = live ? e.id : undefined;
      last = live || WORKER.test(e.text) ? undefined : e.id;
    }
  }
  if (last !== undefined) {
    const e = store.events.byId(last);
    const after = e !== undefined && run.last_step !== null && run.last_step > e.step;
    if (!e || finished || lc.state !== null || after) last = undefined;
    else if (live && run.live_at !== null && run.live_at > e.at) {
      held = last; // it grew while watched: it may have survived, as a live error may
      last = undefined;
    } else if (live) {
      fire(e, ' (the last thing the log says)');
      last = undefined;
    }
  }
  if (held !== undefined) {
    const e = store.events.byId(held);
    const active = run.active_at ?? e?.at ?? 0;
    if (!e || finished || lc.state !== null || active - e.at > grace) held = undefined;
    else if (ctx.now() - active >= grace) {
      fire(
        e,
        ` (nothing written for ${formatDuration(Math.floor((ctx.now() - active) / 60_000) * 60_000 || 1000)} since)`,
      );
      held = undefined;
    }
  }
  const state = { seen, ...(held === undefined ? {} : { held }), ...(last === undefined ? {} : { last }) };
  store.alerts.saveCursor(runId, rule.id, CRASH_KEY, run.last_step ?? 0, state);
}
