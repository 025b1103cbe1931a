/** When a run has finished, and the run_finished rule kind: one info alert carrying the run's summary. */
import { formatValue } from '../lib/numbers.ts';
import type { AlertRow } from '../store/alerts.ts';
import type { RunRow } from '../store/runs.ts';
import type { LiveStore } from '../store/live.ts';
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { FinishedSummary } from './notification.ts';
import type { FinishedRule } from './rules.ts';

/**
 * Whether the run has finished training: the trainer's end-of-training summary (TRL's `train_runtime`
 * dict, as an event or as the metric it was stored as before events), or its last step reached the total
 * the logs announced (trainer_state's `max_steps`, verl's `total_steps`, a tqdm total). A finished run is
 * never stalled nor crashed.
 */
export function isFinished(store: LiveStore, runId: number, run = store.runs.byId(runId)): boolean {
  return finishedAt(store, run) !== null;
}

/** The step at which the run finished, or null (also when it logged steps after its summary: resumed).
 * `logged` (the run has logged a metric) spares the query for a `train_runtime` it never logged. */
export function finishedAt(
  store: LiveStore,
  run: RunRow | undefined,
  logged: (metric: string) => boolean = () => true,
): number | null {
  if (!run || run.last_step === null) return null;
  const runId = run.id;
  const summary = store.events.finished(runId)?.step;
  if (summary !== undefined && run.last_step <= summary) return run.last_step;
  const meta = store.events.meta(runId);
  const total = meta.max_steps ?? meta.total_steps;
  if (total !== undefined && total > 0 && run.last_step >= total) return run.last_step;
  const runtime = logged('train_runtime')
    ? store.points.upTo(runId, 'train_runtime', run.last_step, 1)[0]?.step
    : undefined;
  if (runtime !== undefined && run.last_step <= runtime) return run.last_step;
  return null;
}

/** The metric whose chart the card shows. */
const REWARD = 'reward';

/** run_finished: once the run has finished, one info alert carrying the run's summary. It is announced
 * once (no repeats) and resolves if the run logs steps again (a resumed job), ready to finish again. */
export function evaluateFinished(ctx: RunContext, rule: FinishedRule): void {
  const { store, runId, run } = ctx;
  const lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: REWARD }, ctx.now);
  if (!run || run.last_step === null) return;
  if (lc.state !== null) {
    const open = ctx.alerts.get(rule.id, REWARD);
    if (open && run.last_step > open.started_step) {
      const step = run.last_step;
      const summary = `the run logged step ${step}: training resumed`;
      lc.apply(step, { kind: 'ok', recovered: true, describe: () => ({ summary, details: {} }) });
    } else if (open) refresh(ctx, open);
    return;
  }
  const at = ctx.finishedAt();
  if (at === null) return;
  const done = store.alerts.cursor(runId, rule.id, REWARD);
  if (done && done.step >= at) return; // announced at this step already
  const summary = finishedSummary(store, runId, run);
  lc.apply(at, {
    kind: 'bad',
    firing: true,
    severity: rule.severity,
    describe: () => ({ summary: describe(summary), details: { once: true, finished: summary } }),
  });
  store.alerts.saveCursor(runId, rule.id, REWARD, at, {});
}

/**
 * The summary as the records now say it: the rest of the last step's record (a console log's reward breakdown
 * lines after its `Step 400` line) or the trainer's closing `train_runtime` dict may be read after the step that
 * finished the run. The alert keeps its step and time; only what it says follows the records, however they were
 * batched.
 */
function refresh(ctx: RunContext, open: AlertRow): void {
  const summary = finishedSummary(ctx.store, ctx.runId, ctx.run);
  const text = describe(summary);
  const details = { once: true, finished: summary };
  if (text === open.summary && JSON.stringify(details) === open.details) return;
  const step = open.fired_step ?? open.started_step;
  ctx.alerts.fire(open, {
    step,
    at: open.fired_at ?? open.started_at,
    severity: open.severity,
    summary: text,
    details,
  });
}

/** 612300 -> `10m 12s`; 7500000 -> `2h 5m` */
export function humanDuration(ms: number): string {
  const total = Math.max(1, Math.round(ms / 1000));
  const [h, m, sec] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  if (h > 0) return `${h}h ${m}m`;
  return m > 0 ? `${m}m ${sec}s` : `${sec}s`;
}

function describe(s: FinishedSummary): string {
  const parts = [`training finished at step ${s.lastStep}`];
  if (s.durationMs !== null) parts.push(`in ${humanDuration(s.durationMs)}`);
  const r = s.finalReward;
  const b = s.bestReward;
  const reward = r ? `; reward ${formatValue(r.value)}` : '';
  const best = b && r && b.step !== r.step ? ` (best ${formatValue(b.value)} at step ${b.step})` : '';
  return `${parts.join(' ')}${reward}${best}`;
}

/** Duration, steps, final and best reward, and the run's alerts. */
export function finishedSummary(store: LiveStore, runId: number, run = store.runs.byId(runId)): FinishedSummary {
  const rewards = store.points.series(runId, REWARD).filter((p) => Number.isFinite(p.value));
  let best: { step: number; value: number } | null = null;
  for (const p of rewards) if (!best || p.value > best.value) best = { step: p.step, value: p.value };
  const last = rewards[rewards.length - 1];
  const runtime =
    store.events.finished(runId)?.values.train_runtime ??
    store.points.latest(runId).find((l) => l.metric === 'train_runtime')?.value;
  const span = store.points.stepSpan(runId);
  const alerts = store.alerts.firedByRule(runId);
  return {
    durationMs: runtime !== undefined && Number.isFinite(runtime) ? runtime * 1000 : span ? span : null,
    firstStep: run?.first_step ?? null,
    lastStep: run?.last_step ?? null,
    records: run?.records ?? 0,
    finalReward: last ? { step: last.step, value: last.value } : null,
    bestReward: best,
    alerts,
  };
}
