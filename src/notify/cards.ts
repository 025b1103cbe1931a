import type { Notification, NotificationItem } from '../engine/notification.ts';
import { formatValue } from '../render/numbers.ts';
import { finishedFields } from '../render/finished.ts';
import { sparkline } from '../render/sparkline.ts';
import { silenceMatches } from '../store/silences.ts';
import type { Store } from '../store/store.ts';
import type { ChartSpec } from '../commands/reply.ts';
import type { Request } from './interaction.ts';

/** One alert as a chat card, whatever the platform: built from the notification item and the alert's
 * current state, so that an ack, a mute or a resolution re-renders the same card. */
export interface AlertCard {
  alertId: number;
  run: string;
  title: string;
  severity: string;
  /** what colours the card */
  status: 'firing' | 'acked' | 'muted' | 'resolved';
  summary: string;
  fields: Array<{ name: string; value: string }>;
  /** a line under the summary: who acked, who muted, when it resolved */
  note: string | null;
  /** who acked, as recorded (a platform may render its own users' ids as mentions) */
  ackedBy?: string | null;
  /** who acked, as readers know them: the name the note shows (untrusted text) */
  ackedByName?: string | null;
  sparkline: string | null;
  examples: Array<{ title: string; code: string }>;
  /** the log lines that show why (untrusted): a code block, cut from the start to fit */
  evidence?: { title: string; lines: string[] } | null;
  chart: ChartSpec | null;
  buttons: Array<{ id: string; label: string; disabled: boolean }>;
}

export const COLORS: Record<AlertCard['status'] | 'info' | 'warning' | 'critical', number> = {
  critical: 0xd7263d,
  warning: 0xf4a261,
  info: 0x2a9d8f,
  firing: 0xd7263d,
  acked: 0x8d99ae,
  muted: 0x8d99ae,
  resolved: 0x2a9d8f,
};

/**
 * Custom ids of the buttons: `<action>:<alertId>`. A button is a command with its arguments filled in, run
 * through the same path as typed commands (src/notify/interaction.ts).
 */
export const BUTTON_ID = /^(ack|muteRun|muteRule):(\d+)$/;
export function buttonRequest(id: string): Request | null {
  const m = BUTTON_ID.exec(id);
  if (!m) return null;
  const alert = Number(m[2]);
  if (m[1] === 'ack') return { words: ['ack'], args: { id: alert } };
  if (m[1] === 'muteRun') return { words: ['mute'], args: { alert, duration: '1h' } };
  return { words: ['mute'], args: { alert, scope: 'rule', duration: '24h' } };
}

const CHART_POINTS = 200;
const EXAMPLE_CHARS = 500;

export function alertCards(store: Store, n: Notification, now = Date.now()): AlertCard[] {
  const silences = store.silences.active(now);
  const cards = n.items.map((item) => card(store, n.run, item, silences, now));
  return onceEach(n.items, cards);
}

/** A burst of alerts of one step (a collapse and a truncation at step 40) shows that step's best and worst
 * generations once, on its first card: on a phone the same two completions twice are a screen of scrolling. */
function onceEach(items: readonly NotificationItem[], cards: AlertCard[]): AlertCard[] {
  const shown = new Set<number>();
  return cards.map((c, i) => {
    const step = items[i]?.examples?.step;
    if (step === undefined || c.examples.length === 0) return c;
    if (shown.has(step)) return { ...c, examples: [], note: [c.note, `generations of step ${step}: on the first card`].filter(Boolean).join(' · ') };
    shown.add(step);
    return c;
  });
}

function card(store: Store, run: string, item: NotificationItem, silences: ReturnType<Store['silences']['active']>, now: number): AlertCard {
  const alert = store.alerts.byId(item.alertId);
  const resolved = alert?.state === 'resolved';
  const muted = !resolved && alert !== undefined && silences.some((s) => silenceMatches(s, { run, rule: alert.rule, severity: alert.severity }));
  const status: AlertCard['status'] = resolved ? 'resolved' : alert?.acked_by ? 'acked' : muted ? 'muted' : 'firing';
  const resolvedSummary = resolved ? String((JSON.parse(alert.details) as { resolved?: { summary?: string } }).resolved?.summary ?? '') : '';
  const notes: string[] = [];
  const acker = alert?.acked_by_name ?? alert?.acked_by;
  if (acker) notes.push(`Acked by ${acker}${alert?.ack_comment ? `: ${alert.ack_comment}` : ''}`);
  if (muted) notes.push('Muted: recorded, not posted again until the mute ends');
  if (resolved) notes.push(`Resolved at step ${alert.resolved_step}${resolvedSummary ? `: ${resolvedSummary}` : ''}`);
  const runRow = store.runs.byName(run);
  const chartPoints =
    runRow && item.metric !== 'activity' && !item.metric.startsWith('log:') ? store.points.upTo(runRow.id, item.metric, item.step + 50, CHART_POINTS) : [];
  const ex = item.examples;
  const cut = (s: string): string => (s.length > EXAMPLE_CHARS ? `${s.slice(0, EXAMPLE_CHARS)}…` : s);
  const describe = (label: string, e: { reward: number; breakdown: Record<string, number> }): string =>
    `${label} ${formatValue(e.reward)}` +
    (Object.keys(e.breakdown).length > 0 ? ` (${Object.entries(e.breakdown).slice(0, 6).map(([k, v]) => `${k} ${formatValue(v)}`).join(', ')})` : '');
  const state = resolved ? 'resolved' : item.kind === 'repeat' ? 'still firing' : 'firing';
  return {
    alertId: item.alertId,
    run,
    title: `${item.severity.toUpperCase()} · ${item.rule} ${state} · ${run}`,
    severity: item.severity,
    status,
    summary: item.kind === 'resolved' ? (alert ? alert.summary : item.summary) : item.summary,
    fields: [
      { name: 'Run', value: run },
      { name: 'Metric', value: item.metric },
      { name: 'Step', value: String(item.step) },
      ...(item.epoch === null ? [] : [{ name: 'Epoch', value: formatValue(item.epoch) }]),
      { name: 'Alert', value: `#${item.alertId}` },
      ...(item.finished ? finishedFields(item.finished) : []),
      ...(item.hint && !resolved ? [{ name: 'Try', value: item.hint }] : []),
    ],
    note: notes.length > 0 ? notes.join(' · ') : null,
    ackedBy: alert?.acked_by ?? null,
    ackedByName: alert?.acked_by_name ?? null,
    sparkline: item.recent.length > 1 ? `${item.metric} ${sparkline(item.recent)}` : null,
    examples: ex
      ? [
          ...ex.best.slice(0, 1).map((e) => ({ title: describe(`best of step ${ex.step}:`, e), code: cut(e.completion) })),
          ...ex.worst.slice(0, 1).map((e) => ({ title: describe(`worst of step ${ex.step}:`, e), code: cut(e.completion) })),
        ]
      : [],
    evidence: item.evidence && item.kind !== 'resolved' ? item.evidence : null,
    chart: chartPoints.length > 1 ? { title: `${item.metric} · ${run}`, metric: item.metric, points: chartPoints, markStep: item.step } : null,
    buttons: [
      { id: `ack:${item.alertId}`, label: alert?.acked_by ? 'Acked' : 'Ack', disabled: resolved || Boolean(alert?.acked_by) },
      { id: `muteRun:${item.alertId}`, label: 'Mute run 1h', disabled: resolved },
      { id: `muteRule:${item.alertId}`, label: 'Mute rule 24h', disabled: resolved },
    ],
  };
}
