import { formatValue } from '../render/numbers.ts';
import type { Store } from '../store/store.ts';
import { formatDuration, parseDuration } from './duration.ts';
import { Lifecycle } from './lifecycle.ts';
import {
  alternatives,
  compare,
  type MilestoneRule,
  type StallRule,
  type ThresholdRule,
  type TrendRule,
} from './rules.ts';

export interface RunContext {
  store: Store;
  runId: number;
  now: () => number;
}

/** Before any step: where a rule's cursor starts. */
const START = -1;
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Threshold: each alternative is its own alert key, named after its first metric. */
export function evaluateThreshold(ctx: RunContext, rule: ThresholdRule): void {
  const { store, runId } = ctx;
  for (const conds of alternatives(rule)) {
    const [first, ...rest] = conds;
    if (!first) continue;
    const cursor = store.alerts.cursor(runId, rule.id, first.metric);
    const from = cursor?.step ?? START;
    const main = store.points.after(runId, first.metric, from);
    if (main.length === 0) continue;
    const others = rest.map((c) => new Map(store.points.after(runId, c.metric, from).map((p) => [p.step, p.value])));
    let streak = Number(cursor?.state.streak ?? 0);
    let recovering = Number(cursor?.state.recovering ?? 0);
    const lc = new Lifecycle(store.alerts, { runId, rule: rule.id, metric: first.metric }, ctx.now);
    for (const p of main) {
      const values = [p.value, ...others.map((m) => m.get(p.step))];
      if (values.some((v) => v === undefined || Number.isNaN(v))) continue; // neither bad nor recovered
      const shown = conds.map((c, i) => `${c.metric} ${formatValue(values[i] as number)}`);
      const details = { values: Object.fromEntries(conds.map((c, i) => [c.metric, values[i]])) };
      if (conds.every((c, i) => compare(values[i] as number, c.op, c.value))) {
        streak++;
        recovering = 0;
        const summary =
          conds.map((c, i) => `${shown[i]} ${c.op} ${formatValue(c.value)}`).join(' and ') +
          ` for ${plural(streak, 'step')}`;
        lc.apply(p.step, { kind: 'bad', firing: streak >= rule.for, severity: rule.severity, summary, details });
      } else {
        streak = 0;
        // hysteresis: a single-condition rule resolves only once the value is back past `recover`
        const past = conds.length > 1 || rule.recover === undefined || !compare(p.value, first.op, rule.recover);
        recovering = past ? recovering + 1 : 0;
        const bound = rule.recover ?? first.value;
        lc.apply(p.step, {
          kind: 'ok',
          recovered: recovering >= rule.recoverFor,
          summary: `${shown.join(', ')}: back past ${formatValue(bound)} for ${plural(recovering, 'step')}`,
          details,
        });
      }
    }
    store.alerts.saveCursor(runId, rule.id, first.metric, main[main.length - 1]!.step, { streak, recovering });
  }
}

/** `rewards/*` matches every logged metric under `rewards/` except the `/std` series. */
function expandMetrics(patterns: readonly string[], logged: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of patterns) {
    if (!p.endsWith('*')) {
      if (logged.includes(p)) out.add(p);
      continue;
    }
    const prefix = p.slice(0, -1);
    for (const m of logged) if (m.startsWith(prefix) && !m.endsWith('/std') && !m.endsWith('_std')) out.add(m);
  }
  return [...out];
}

function mean(values: readonly number[], from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += values[i] as number;
  return sum / (to - from);
}

/** Trend: the mean of the last `window` records against the mean of the `window` before them. */
export function evaluateTrend(ctx: RunContext, rule: TrendRule): void {
  const { store, runId } = ctx;
  const w = rule.window;
  for (const metric of expandMetrics(rule.metrics, store.points.metricsOf(runId))) {
    const cursor = store.alerts.cursor(runId, rule.id, metric);
    const from = cursor?.step ?? START;
    const fresh = store.points.after(runId, metric, from).filter((p) => Number.isFinite(p.value));
    if (fresh.length === 0) continue;
    const history = cursor ? store.points.upTo(runId, metric, from, 2 * w - 1).filter((p) => Number.isFinite(p.value)) : [];
    const points = [...history, ...fresh];
    const values = points.map((p) => p.value);
    const lc = new Lifecycle(store.alerts, { runId, rule: rule.id, metric }, ctx.now);
    for (let i = Math.max(history.length, 2 * w - 1); i < points.length; i++) {
      const before = mean(values, i - 2 * w + 1, i - w + 1);
      const after = mean(values, i - w + 1, i + 1);
      const delta = after - before;
      const rel = before !== 0 ? delta / Math.abs(before) : delta === 0 ? 0 : Math.sign(delta) * Infinity;
      const up = rel > rule.change && delta > rule.minDelta;
      const down = rel < -rule.change && -delta > rule.minDelta;
      const flat = Math.abs(rel) < rule.change && after < (rule.below ?? Infinity);
      const step = (points[i] as { step: number }).step;
      const pct = `${rel >= 0 ? '+' : ''}${(rel * 100).toFixed(1)}%`;
      const details = { from: before, to: after, change: rel, window: w };
      let bad: { severity: string; summary: string; direction: string } | null = null;
      if (rule.direction === 'flat') {
        if (flat) {
          bad = {
            severity: rule.severity,
            direction: 'flat',
            summary: `${metric} flat at ${formatValue(after)} (${pct} over ${w} steps), below ${formatValue(rule.below ?? Infinity)}`,
          };
        }
      } else if ((up && rule.direction !== 'down') || (down && rule.direction !== 'up')) {
        bad = {
          severity: up ? rule.rise : rule.fall,
          direction: up ? 'up' : 'down',
          summary: `${metric} ${up ? '↗' : '↘'} ${pct} (${formatValue(before)} → ${formatValue(after)}) over ${w}-step windows`,
        };
      }
      if (bad && lc.state !== null && lc.details.direction !== undefined && lc.details.direction !== bad.direction) {
        // a rise that turns into a fall is a new incident
        lc.apply(step, { kind: 'ok', recovered: true, summary: `${metric} turned ${bad.direction}`, details });
      }
      if (bad) {
        lc.apply(step, { kind: 'bad', firing: true, severity: bad.severity, summary: bad.summary, details: { ...details, direction: bad.direction } });
      } else {
        const settled = rule.direction === 'flat' || Math.abs(rel) <= rule.change / 2;
        lc.apply(step, { kind: 'ok', recovered: settled, summary: `${metric} ${pct} (${formatValue(before)} → ${formatValue(after)})`, details });
      }
    }
    store.alerts.saveCursor(runId, rule.id, metric, fresh[fresh.length - 1]!.step, {});
  }
}

/** Milestone: when the run first reaches the epoch, the recent mean must satisfy the rule; the alert
 * resolves once it does. */
export function evaluateMilestone(ctx: RunContext, rule: MilestoneRule): void {
  const { store, runId } = ctx;
  const cursor = store.alerts.cursor(runId, rule.id, rule.metric);
  const epochs = store.points.after(runId, 'epoch', cursor?.step ?? START);
  if (epochs.length === 0) return;
  let reached = cursor?.state.reached === true;
  const lc = new Lifecycle(store.alerts, { runId, rule: rule.id, metric: rule.metric }, ctx.now);
  for (const e of epochs) {
    if (!reached && !(e.value >= rule.epoch - 1e-9)) continue;
    const first = !reached;
    reached = true;
    if (!first && lc.state === null) break; // met (or judged) already: nothing more to watch
    const recent = store.points.upTo(runId, rule.metric, e.step, rule.window).map((p) => p.value).filter(Number.isFinite);
    if (recent.length === 0) continue; // the run does not log this metric (yet)
    const m = mean(recent, 0, recent.length);
    const details = { epoch: e.value, mean: m, window: recent.length };
    if (!compare(m, rule.op, rule.value)) {
      if (first) {
        lc.apply(e.step, {
          kind: 'bad',
          firing: true,
          severity: rule.severity,
          summary: `${rule.metric} ${formatValue(m)} at epoch ${formatValue(e.value)}: expected ${rule.op} ${formatValue(rule.value)} by epoch ${formatValue(rule.epoch)} (mean of last ${recent.length})`,
          details,
        });
      }
    } else {
      lc.apply(e.step, { kind: 'ok', recovered: true, summary: `${rule.metric} ${formatValue(m)} now ${rule.op} ${formatValue(rule.value)}`, details });
    }
  }
  store.alerts.saveCursor(runId, rule.id, rule.metric, epochs[epochs.length - 1]!.step, { reached });
}

/** Stall: no file of the run has changed for `after`, though it was active during this session. A run that
 * logged the Trainer's end-of-training summary (`train_runtime`) has finished, not stalled. */
export function evaluateStall(ctx: RunContext, rule: StallRule, sessionStart: number): void {
  const { store, runId } = ctx;
  const after = parseDuration(rule.after) as number;
  const run = store.runs.byId(runId);
  if (!run || run.last_step === null) return;
  const last = store.db.prepare('SELECT max(mtime_ms) FROM files WHERE run_id = ?').pluck().get(runId) as number | null;
  if (last === null) return;
  const now = ctx.now();
  const finished = store.points.metricsOf(runId).includes('train_runtime');
  const stalled = !finished && now - last > after && last >= sessionStart - after;
  const lc = new Lifecycle(store.alerts, { runId, rule: rule.id, metric: 'activity' }, ctx.now);
  const idle = formatDuration(Math.floor((now - last) / 60_000) * 60_000 || 1000);
  const details = { lastActivity: last, lastStep: run.last_step };
  if (stalled) {
    lc.apply(run.last_step, {
      kind: 'bad',
      firing: true,
      severity: rule.severity,
      summary: `no new record for ${idle} (last at step ${run.last_step}, ${new Date(last).toISOString().slice(11, 19)} UTC): crashed or hung?`,
      details,
    });
  } else {
    lc.apply(run.last_step, { kind: 'ok', recovered: true, summary: finished ? 'the run finished' : 'records are arriving again', details });
  }
}
