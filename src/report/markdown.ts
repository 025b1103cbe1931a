/** The run report as Markdown (the "full report" file) and as a short summary (the chat card, the terminal). */
import { formatValue } from '../lib/numbers.ts';
import type { Level, Mark, RangeRow, RunReport } from './build.ts';
import { describeRange } from './ranges.ts';

export const LEVEL_LABEL: Record<Level, string> = {
  healthy: '🟢 Healthy',
  watch: '🟡 Watch',
  struggling: '🟠 Struggling: requires intervention',
  stop: '🔴 Stop',
};
export const MARK: Record<Mark, string> = { ok: '✅', warn: '⚠️', bad: '🔴', none: '–' };
const SEVERITY_MARK = { critical: '🔴', warning: '⚠️', info: 'ℹ️' } as const;
const MILESTONE_STATE = {
  met: '✅ met',
  missed: '🔴 missed',
  pending: '⏳ pending',
  unlogged: '– not logged',
} as const;

const f = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '-' : formatValue(v);

/** Untrusted text (run names, generations, config values) kept inert in Markdown: no mentions, no markup. */
const inert = (s: string): string =>
  s
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '?')
    .replace(/@/g, '@\u200b')
    .replace(/([\\`*_[\]<>|#])/g, '\\$1');
const fence = (s: string): string => s.replace(/```/g, "'''").replace(/@/g, '@\u200b');

export function duration(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  const m = Math.round(ms / 60_000);
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function progressLine(r: RunReport): string {
  const p = r.progress;
  const parts = [
    `step ${p.step ?? '-'}${p.totalSteps === null ? '' : ` of ${p.totalSteps}`}`,
    ...(p.epoch === null ? [] : [`epoch ${f(p.epoch)}`]),
    ...(p.elapsedMs === null ? [] : [`${duration(p.elapsedMs)} elapsed`]),
    ...(p.etaMs === null ? [] : [`ETA ${duration(p.etaMs)}`]),
  ];
  return parts.join(', ');
}

export function expected(row: RangeRow): string {
  return describeRange(row.range, row.baseline);
}

function windowLine(r: RunReport): string {
  const w = r.window;
  const epochs = w.fromEpoch === null ? '' : `, epoch ${f(w.fromEpoch)}-${f(w.toEpoch)}`;
  return `steps ${w.fromStep}-${w.toStep}${epochs} (${w.records} records)`;
}

/** Status, the three most important findings, the first actions: what a phone shows. */
export function summaryLines(r: RunReport): string[] {
  return [
    `${LEVEL_LABEL[r.status.level]} (${r.status.decidedBy})`,
    progressLine(r),
    ...r.findings.slice(0, 3).map((x) => `${SEVERITY_MARK[x.severity]} ${x.title}`),
    ...r.actions.slice(0, 3).map((a) => `try: ${a}`),
    `verdict: ${r.stop.verdict}${r.stop.why[0] ? ` (${r.stop.why[0]})` : ''}`,
  ];
}

export function reportMarkdown(r: RunReport): string {
  const out: string[] = [];
  const push = (...lines: string[]) => out.push(...lines);
  push(`# Training report: ${inert(r.run)}`, '');
  push(`**Generated:** ${new Date(r.generatedAt).toISOString()}  `, `**Progress:** ${progressLine(r)}  `);
  push(`**Window:** ${windowLine(r)}`, '');
  push(`## Status: ${LEVEL_LABEL[r.status.level]}`, '', `Decided by: ${inert(r.status.decidedBy)}`, '');
  push(`**Stop criteria:** ${r.stop.verdict.toUpperCase()}`, ...r.stop.why.map((w) => `- ${inert(w)}`), '');

  if (Object.keys(r.config).length > 0) {
    push('## Configuration (from the logs)', '', '| Setting | Value |', '|---|---|');
    for (const [k, v] of Object.entries(r.config)) push(`| ${inert(k)} | ${inert(v)} |`);
    push('');
  }

  push(
    '## Metric ranges',
    '',
    '| Metric | Range | Median | Expected | Outside | Assessment |',
    '|---|---|---|---|---|---|',
  );
  for (const row of r.ranges) {
    const outside = row.mark === 'none' ? '-' : `${row.below + row.above}/${row.n}`;
    const cells = [row.metric, `${f(row.min)} - ${f(row.max)}`, f(row.median), expected(row), outside, MARK[row.mark]];
    push(`| ${cells.join(' | ')} |`);
  }
  if (r.reward) {
    push(
      '',
      `Reward over the window: ${f(r.reward.first)} -> ${f(r.reward.last)} (halves compared: ${r.reward.trend})`,
    );
  }
  push('');

  push('## Issues found', '');
  if (r.findings.length === 0) push('None.', '');
  r.findings.forEach((x, i) => {
    push(`### ${i + 1}. ${inert(x.title)}`, '', `**Severity:** ${x.severity}  `, `**Meaning:** ${x.meaning}`);
    if (x.causes.length > 0) push('', '**Likely causes:**', ...x.causes.map((c) => `- ${c}`));
    push('');
  });

  push('## Recommended actions', '');
  if (r.actions.length === 0) push('Nothing to change: keep watching.');
  r.actions.forEach((a, i) => {
    push(`${i + 1}. ${a}`);
  });
  push('');

  push('## Milestones', '', '| Epoch | Check | Actual | State |', '|---|---|---|---|');
  for (const m of r.milestones) {
    const state = m.state === 'missed' && m.stop ? '🛑 missed (stop)' : MILESTONE_STATE[m.state];
    const actual = m.actual === null ? '-' : `${f(m.actual)} at epoch ${f(m.atEpoch)}`;
    push(`| ${m.epoch} | ${m.metric} ${m.op} ${m.value}${m.stop ? ' (stop criterion)' : ''} | ${actual} | ${state} |`);
  }
  push('');

  if (r.components.length > 0) {
    push('## Reward components (where the reward is lost)', '');
    push('| Component | Mean | Best seen | Lost | From |', '|---|---|---|---|---|');
    for (const c of r.components)
      push(`| ${inert(c.name)} | ${f(c.mean)} | ${f(c.best)} | ${f(c.gap)} | ${c.source} |`);
    push('');
  }

  if (r.best.length + r.worst.length > 0) {
    push('## Best and worst generations', '');
    const show = (label: string, g: RunReport['best'][number]) => {
      const parts = Object.entries(g.breakdown)
        .map(([k, v]) => `${inert(k)} ${f(v)}`)
        .join(', ');
      push(`**${label}**, step ${g.step}, reward ${f(g.reward)}${parts ? ` (${parts})` : ''}`, '');
      push('```', fence(g.completion), '```', '');
    };
    for (const g of r.best) show('Best', g);
    for (const g of r.worst) show('Worst', g);
  }
  return `${out.join('\n').trimEnd()}\n`;
}
