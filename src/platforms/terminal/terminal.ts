/** The terminal: the default sink that prints notifications, and the renderer of the CLI's command replies. */
import type { Reply } from '../../render/reply.ts';
import type { ExampleSnippet, Notification } from '../../engine/notification.ts';
import type { Target } from '../../notify/dispatcher.ts';
import { formatValue } from '../../lib/numbers.ts';
import { finishedFields } from '../../render/finished.ts';
import { sparkline } from '../../render/sparkline.ts';

/**
 * The terminal: the app's default sink, not an entry of PLATFORMS. It has no section and no settings (the CLI
 * decides: `start` and `backfill` print, tests pass none), it never connects, and it also renders the CLI's
 * command replies.
 */

/** Log lines are untrusted: no control characters reach the terminal (ANSI was stripped at ingest). */
const inert = (s: string): string => s.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '?');

const bold = (s: string, color: boolean): string => (color ? `\x1b[1m${s}\x1b[22m` : s);
const dim = (s: string, color: boolean): string => (color ? `\x1b[2m${s}\x1b[22m` : s);

/** A Reply as terminal text: the title, the fields as an aligned table, then the free lines. */
export function renderReplyText(reply: Reply, color: boolean): string {
  const out = [bold(reply.title, color)];
  const width = Math.max(0, ...reply.fields.map((f) => f.name.length));
  for (const f of reply.fields) out.push(`  ${dim(f.name.padEnd(width), color)}  ${f.value}`);
  for (const line of reply.lines) out.push(`  ${line}`);
  for (const b of reply.blocks ?? []) {
    out.push(`  ${dim(b.title, color)}`);
    for (const line of b.code.split('\n')) out.push(`    ${line}`);
  }
  return out.join('\n');
}

/** reward components shown per generation: enough to see why, short enough for one line */
const BREAKDOWN_PARTS = 6;
const SEVERITY_COLOR: Record<string, string> = { critical: '31', warning: '33', info: '36' };
const paint = (s: string, code: string, color: boolean): string => (color ? `\x1b[${code}m${s}\x1b[0m` : s);

/** One notification (a run's burst of alert changes) as terminal text. */
export function renderNotification(n: Notification, color: boolean): string {
  const out: string[] = [];
  if (n.report)
    out.push(bold(`[REPORT] ${inert(n.report.title)}`, color), ...n.report.lines.map((l) => `  ${inert(l)}`));
  for (const item of n.items) {
    const state = item.kind === 'resolved' ? 'RESOLVED' : item.kind === 'repeat' ? 'STILL FIRING' : 'FIRING';
    const badge = paint(
      `[${item.severity.toUpperCase()}]`,
      item.kind === 'resolved' ? '32' : (SEVERITY_COLOR[item.severity] ?? '0'),
      color,
    );
    const where = [
      n.run,
      `step ${item.step}`,
      ...(item.epoch === null ? [] : [`epoch ${formatValue(item.epoch)}`]),
    ].join(' · ');
    out.push(`${badge} ${bold(`${item.rule} ${state}`, color)} #${item.alertId} · ${where}`);
    out.push(`  ${item.summary}`);
    if (item.hint) out.push(`  ${dim('try:', color)} ${item.hint}`);
    if (item.recent.length > 1) out.push(`  ${item.metric} ${sparkline(item.recent)} (last ${item.recent.length})`);
    if (item.finished && item.kind !== 'resolved') {
      for (const f of finishedFields(item.finished)) out.push(`  ${dim(f.name.padEnd(12), color)} ${f.value}`);
    }
    if (item.evidence && item.kind !== 'resolved') {
      out.push(`  ${dim(`${item.evidence.title}:`, color)}`);
      for (const line of item.evidence.lines) out.push(`    ${dim('│', color)} ${inert(line)}`);
    }
    if (item.examples && item.kind !== 'resolved') {
      const show = (label: string, e: ExampleSnippet): string => {
        const parts = Object.entries(e.breakdown)
          .slice(0, BREAKDOWN_PARTS)
          .map(([k, v]) => `${k} ${formatValue(v)}`)
          .join(', ');
        const text = e.completion.replace(/\s+/g, ' ').slice(0, 160);
        return `  ${label} ${formatValue(e.reward)}${parts ? ` (${parts})` : ''}: ${dim(text, color)}`;
      };
      const ex = item.examples;
      if (ex.best[0]) out.push(show(`best of step ${ex.step}:`, ex.best[0]));
      if (ex.worst[0]) out.push(show(`worst of step ${ex.step}:`, ex.worst[0]));
    }
    if (item.kind !== 'resolved')
      out.push(dim(`  rlwatch ack ${item.alertId}   rlwatch mute --run ${n.run} --rule ${item.rule} --for 1h`, color));
  }
  return out.join('\n');
}

/** The terminal notifier: prints each notification on stdout. */
export function consoleTarget(write: (s: string) => void, color: boolean): Target {
  return {
    name: 'console',
    deliver: async (n) => write(`${renderNotification(n, color)}\n`),
  };
}

/** The terminal notifier on stdout, in colour on a TTY. */
export const terminal = (): Target => consoleTarget((s) => process.stdout.write(s), process.stdout.isTTY === true);
