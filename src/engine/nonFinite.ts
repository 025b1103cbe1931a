/**
 * The non_finite rule kind: the first NaN or ±Inf of a watched metric, one incident for the metrics that break
 * together.
 */
import { formatValue, jsonValue } from '../lib/numbers.ts';
import type { AlertRow } from '../store/alerts.ts';
import type { RunContext } from './context.ts';
import { Lifecycle } from './lifecycle.ts';
import type { NonFiniteRule } from './rules.ts';

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What one metric's cursor keeps between evaluations. */
interface Track {
  lastFinite: number | null;
  lastFiniteStep: number | null;
  finiteRun: number;
}

/**
 * non_finite: the first NaN or ±Inf of a watched metric fires at once, saying the last finite value and its
 * step. One cause, one page: the metrics that go non-finite together (a NaN loss, grad_norm and reward at one
 * step) or while it fires are one incident, named after the first; it resolves after `recoverFor` steps with
 * every watched metric finite. Judged step by step across the metrics, so batching changes nothing: a step counts
 * once towards the recovery, and a metric non-finite at the step the alert fired at, read after it, joins it.
 */
export function evaluateNonFinite(ctx: RunContext, rule: NonFiniteRule): void {
  const { store, runId } = ctx;
  const tracks = new Map<string, Track>();
  // each watched metric's fresh points (ascending by step), merged step by step below: no map of every step built
  const streams: Array<{
    metric: string;
    track: Track;
    points: ReadonlyArray<{ step: number; value: number }>;
    i: number;
  }> = [];
  let clean = Infinity;
  // the last step counted in `clean`: a step whose metrics land in two reads is counted once
  let counted = -Infinity;
  // the cursors of metrics with nothing new keep the incident's count too
  const idle: Array<{ metric: string; step: number; state: Record<string, unknown> }> = [];
  for (const metric of rule.metrics) {
    const cursor = store.alerts.cursor(runId, rule.id, metric);
    const fresh = ctx.after(metric, cursor?.step ?? -1);
    if (cursor) clean = Math.min(clean, Number(cursor.state.clean ?? cursor.state.finiteRun ?? 0));
    const c = cursor?.state.counted;
    if (typeof c === 'number') counted = Math.max(counted, c);
    if (fresh.length === 0) {
      if (cursor) idle.push({ metric, step: cursor.step, state: cursor.state });
      continue;
    }
    const s = cursor?.state;
    const track: Track = {
      lastFinite: (s?.lastFinite as number | null | undefined) ?? null,
      lastFiniteStep: (s?.lastFiniteStep as number | null | undefined) ?? null,
      finiteRun: Number(s?.finiteRun ?? 0),
    };
    tracks.set(metric, track);
    streams.push({ metric, track, points: fresh, i: 0 });
  }
  if (tracks.size === 0) return;
  if (clean === Infinity) clean = 0;
  const open = ctx.alerts.firing().find((a) => a.rule === rule.id);
  let lc = open ? new Lifecycle(ctx.alerts, { rule: rule.id, metric: open.metric }, ctx.now) : null;
  let key = open?.metric;
  const last = new Map<string, number>();
  // the watched metrics' values at the step, in the rules' order (reused from step to step)
  const names: string[] = [];
  const nums: number[] = [];
  for (;;) {
    let step = Infinity;
    for (const m of streams) if (m.i < m.points.length && m.points[m.i]!.step < step) step = m.points[m.i]!.step;
    if (step === Infinity) break;
    names.length = 0;
    nums.length = 0;
    let bad: Bad[] | null = null;
    for (const m of streams) {
      for (; m.i < m.points.length && m.points[m.i]!.step === step; m.i++) {
        const { metric, track: t } = m;
        const value = m.points[m.i]!.value;
        names.push(metric);
        nums.push(value);
        last.set(metric, step);
        if (Number.isFinite(value)) {
          t.finiteRun++;
          t.lastFinite = value;
          t.lastFiniteStep = step;
        } else {
          t.finiteRun = 0;
          (bad ??= []).push({ metric, value, last: t.lastFinite, lastStep: t.lastFiniteStep });
        }
      }
    }
    if (bad !== null) {
      const all = bad;
      clean = 0;
      counted = step;
      if (lc === null) {
        key = all[0]!.metric;
        lc = new Lifecycle(ctx.alerts, { rule: rule.id, metric: key }, ctx.now);
      }
      const firing = lc.state === 'firing' && key !== undefined ? ctx.alerts.get(rule.id, key) : undefined;
      if (firing && firing.fired_step === step) joinFired(ctx, rule, firing, step, all);
      else lc.hold(step, 1, 1, rule.severity, () => describeBad(step, all));
      continue;
    }
    if (step <= counted) continue;
    counted = step;
    clean++;
    if (lc === null) continue;
    const recovered = clean >= rule.recoverFor;
    if (!lc.wouldChange('ok', recovered)) continue;
    const values = names.map((m, k): [string, number] => [m, nums[k]!]);
    const [n, shown] = [clean, values.map(([m, v]) => `${m} ${formatValue(v)}`).join(', ')];
    lc.apply(step, {
      kind: 'ok',
      recovered,
      describe: () => ({
        summary: `finite again for ${plural(n, 'step')} (${shown})`,
        details: { values: Object.fromEntries(values) },
      }),
    });
    if (lc.state === null) lc = null;
  }
  for (const [metric, t] of tracks) {
    store.alerts.saveCursor(runId, rule.id, metric, last.get(metric)!, {
      lastFinite: t.lastFinite,
      lastFiniteStep: t.lastFiniteStep,
      finiteRun: t.finiteRun,
      // steps of any watched metric since the last non-finite one: the incident's, the same in every cursor
      clean,
      counted,
    });
  }
  for (const c of idle) {
    if (c.state.clean === clean && c.state.counted === counted) continue;
    store.alerts.saveCursor(runId, rule.id, c.metric, c.step, { ...c.state, clean, counted });
  }
}

type Bad = { metric: string; value: number; last: number | null; lastStep: number | null };

/** The words of the metrics non-finite at `step`, in the rule's order, the first's values as the alert's own. */
function describeBad(step: number, all: readonly Bad[]): { summary: string; details: Record<string, unknown> } {
  return {
    summary: all
      .map(
        (b) =>
          `${b.metric} is ${formatValue(b.value)} at step ${step}` +
          (b.last === null ? ' (never finite before)' : ` (last finite ${formatValue(b.last)} at step ${b.lastStep})`),
      )
      .join('; '),
    details: {
      value: jsonValue(all[0]!.value),
      lastFinite: all[0]!.last,
      lastFiniteStep: all[0]!.lastStep,
      metrics: Object.fromEntries(
        all.map((b) => [b.metric, { value: jsonValue(b.value), lastFinite: b.last, lastFiniteStep: b.lastStep }]),
      ),
    },
  };
}

/**
 * Metrics non-finite at the step the alert fired at, read after it (a console log's step spreads over lines that
 * can land in two reads): they join its words as if read with it. The alert keeps its step and time.
 */
function joinFired(ctx: RunContext, rule: NonFiniteRule, open: AlertRow, step: number, all: readonly Bad[]): void {
  type Held = Record<string, { value: unknown; lastFinite: number | null; lastFiniteStep: number | null }>;
  const held = (JSON.parse(open.details) as { metrics?: Held }).metrics ?? {};
  const known: Bad[] = Object.entries(held).map(([metric, m]) => ({
    metric,
    value: typeof m.value === 'number' ? m.value : m.value === 'inf' ? Infinity : m.value === '-inf' ? -Infinity : NaN,
    last: m.lastFinite,
    lastStep: m.lastFiniteStep,
  }));
  const fresh = all.filter((b) => !(b.metric in held));
  if (fresh.length === 0) return;
  const order = (b: Bad): number => rule.metrics.indexOf(b.metric);
  const merged = [...known, ...fresh].sort((a, b) => order(a) - order(b));
  const at = open.fired_at ?? open.started_at;
  ctx.alerts.fire(open, { step, at, severity: open.severity, ...describeBad(step, merged) });
}
