/** The stop verdict and the status of a report, each with the reason that decided it. */
import type { AlertRow } from '../store/alerts.ts';
import type { MilestoneItem, RangeRow, RunReport } from './build.ts';
import type { direction } from './stats.ts';

/** What a firing alert of each of these rule kinds says of the job: it no longer trains. */
const ENDED: Readonly<Record<string, string>> = {
  crash: 'the run crashed',
  stall: 'the run stopped logging',
  finished: 'the run finished',
};

export interface Ended {
  alert: AlertRow;
  /** `the run crashed` */
  what: string;
}

/** The firing alerts that say the job no longer trains (a crash, a stall, its end), as `kindOf` knows their rules. */
export function endedBy(firing: readonly AlertRow[], kindOf: (rule: string) => string | undefined): Ended[] {
  return firing.flatMap((alert) => {
    const what = ENDED[kindOf(alert.rule) ?? ''];
    return what === undefined ? [] : [{ alert, what }];
  });
}

/**
 * The stop criteria of a GRPO training analysis (Qwen2.5-Coder-1.5B on OCaml problems): judged at epoch 1.0; before,
 * green lights and red flags say how it goes. A job that no longer trains (`ended`: a crash, a stall, its end) is
 * never told to continue: what it met is past.
 */
export function stopVerdict(
  milestones: readonly MilestoneItem[],
  firing: readonly AlertRow[],
  trend: RunReport['reward'],
  frac: ReturnType<typeof direction>,
  fmt: (v: number) => string,
  ended: readonly Ended[] = [],
): RunReport['stop'] {
  const why: string[] = [];
  const missed = milestones.filter((m) => m.stop && m.state === 'missed');
  const dead = firing.filter((a) => a.rule === 'no_learning' || a.rule === 'non_finite');
  for (const m of missed) {
    why.push(
      `${m.rule}: ${m.metric} ${fmt(m.actual ?? NaN)} at epoch ${fmt(m.atEpoch ?? NaN)}, expected ${m.op} ${m.value}`,
    );
  }
  for (const a of dead) why.push(`${a.rule} firing: ${a.summary}`);
  if (why.length > 0) return { verdict: 'stop', why };
  if (ended.length > 0) {
    return {
      verdict: 'ended',
      why: ended.map(({ alert: a, what }) => `${what}: ${a.rule} firing (#${a.id}): ${a.summary}`),
    };
  }
  const stops = milestones.filter((m) => m.stop);
  const pending = stops.filter((m) => m.state === 'pending');
  const epochs = [...new Set(pending.map((m) => m.epoch))];
  if (pending.length > 0) why.push(`the stop criteria are judged at epoch ${epochs.join(', ')}`);
  else if (stops.length > 0) why.push('the stop criteria at epoch 1.0 are met');
  const moved = trend ? `(${fmt(trend.first)} -> ${fmt(trend.last)})` : '';
  if (trend?.trend === 'up') why.push(`green light: reward trending up ${moved}`);
  if (trend?.trend === 'down' || trend?.trend === 'flat') {
    why.push(`red flag: reward ${trend.trend === 'down' ? 'falling' : 'flat'} ${moved}`);
  }
  if (frac?.way === 'down')
    why.push(`green light: frac_zero_std decreasing (${fmt(frac.first)} -> ${fmt(frac.second)})`);
  if (frac?.way === 'up') why.push(`red flag: frac_zero_std rising (${fmt(frac.first)} -> ${fmt(frac.second)})`);
  return { verdict: 'continue', why };
}

export function statusOf(
  stop: RunReport['stop'],
  firing: readonly AlertRow[],
  ranges: readonly RangeRow[],
  milestones: readonly MilestoneItem[],
  fmt: (v: number) => string,
): RunReport['status'] {
  if (stop.verdict === 'stop') return { level: 'stop', decidedBy: `stop criterion: ${stop.why[0]}` };
  const outside = (r: RangeRow): string =>
    `${r.metric}: ${r.below + r.above} of ${r.n} records outside ${r.range.source}`;
  const critical = firing.find((a) => a.severity === 'critical');
  if (critical)
    return { level: 'struggling', decidedBy: `${critical.rule} firing (#${critical.id}): ${critical.summary}` };
  const bad = ranges.find((r) => r.mark === 'bad');
  if (bad) return { level: 'struggling', decidedBy: outside(bad) };
  const missed = milestones.find((m) => m.state === 'missed');
  if (missed) {
    return {
      level: 'struggling',
      decidedBy: `${missed.rule} missed: ${missed.metric} ${fmt(missed.actual ?? NaN)}, expected ${missed.op} ${missed.value}`,
    };
  }
  const warning = firing.find((a) => a.severity === 'warning');
  if (warning) return { level: 'watch', decidedBy: `${warning.rule} firing (#${warning.id}): ${warning.summary}` };
  const warn = ranges.find((r) => r.mark === 'warn');
  if (warn) return { level: 'watch', decidedBy: outside(warn) };
  return {
    level: 'healthy',
    decidedBy: 'no alert firing, every judged metric in its expected range, no milestone missed',
  };
}
