/**
 * An alert as a chat card, whatever the platform: built from what the notification carries, so that an ack, a mute
 * or a resolution re-renders the same card.
 */
import type { ChartGuides } from '../engine/capture.ts';
import type { AlertSnapshot, Notification, NotificationItem } from '../engine/notification.ts';
import { formatValue } from '../lib/numbers.ts';
import { finishedFields } from '../render/finished.ts';
import { sparkline } from '../render/sparkline.ts';
import type { ChartSpec } from '../render/reply.ts';

/** One alert as a chat card, whatever the platform: built from the notification item and the state it
 * carries, so that an ack, a mute or a resolution re-renders the same card with its new state. */
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
  /** when and how it resolved: `Resolved at step 40: ...` */
  resolution?: string | null;
  /** who acked, as recorded (a platform may render its own users' ids as mentions) */
  ackedBy?: string | null;
  /** who acked, as readers know them: the name the note shows (untrusted text) */
  ackedByName?: string | null;
  sparkline: string | null;
  examples: Array<{ title: string; code: string }>;
  /** the log lines that show why (untrusted): a code block, cut from the start to fit */
  evidence?: { title: string; lines: string[] } | null;
  chart: AlertChart | null;
  buttons: Array<{ id: string; label: string; disabled: boolean }>;
}

/** An alert's chart: a reply's line chart with its evidence (src/engine/capture.ts) drawn over the series. */
export type AlertChart = ChartSpec & { guides?: ChartGuides };

export const COLORS: Record<AlertCard['status'] | 'info' | 'warning' | 'critical', number> = {
  critical: 0xd7263d,
  warning: 0xf4a261,
  info: 0x2a9d8f,
  firing: 0xd7263d,
  acked: 0x8d99ae,
  muted: 0x8d99ae,
  resolved: 0x2a9d8f,
};

const EXAMPLE_CHARS = 500;

/** The cards of a notification, rendered from what it carries (never from the store). */
export function alertCards(n: Notification): AlertCard[] {
  return onceEach(
    n.items,
    n.items.map((item) => card(n.run, item)),
  );
}

/** A burst of alerts of one step (a collapse and a truncation at step 40) shows that step's best and worst
 * generations once, on its first card: on a phone the same two completions twice are a screen of scrolling. */
function onceEach(items: readonly NotificationItem[], cards: AlertCard[]): AlertCard[] {
  const shown = new Set<number>();
  return cards.map((c, i) => {
    const step = items[i]?.examples?.step;
    if (step === undefined || c.examples.length === 0) return c;
    if (shown.has(step))
      return {
        ...c,
        examples: [],
        note: [c.note, `generations of step ${step}: on the first card`].filter(Boolean).join(' · '),
      };
    shown.add(step);
    return c;
  });
}

/** The item's state: as captured, or, in a row written before states were captured, what its kind says. */
export function stateOf(item: NotificationItem): AlertSnapshot {
  if (item.state) return item.state;
  const resolved = item.kind === 'resolved' ? { step: item.step, at: 0, summary: item.summary } : null;
  return { startsAt: 0, firedStep: item.kind === 'resolved' ? null : item.step, ack: null, muted: false, resolved };
}

function card(run: string, item: NotificationItem): AlertCard {
  const s = stateOf(item);
  const resolved = s.resolved !== null;
  const muted = !resolved && s.muted;
  const status: AlertCard['status'] = resolved ? 'resolved' : s.ack ? 'acked' : muted ? 'muted' : 'firing';
  const notes: string[] = [];
  if (s.ack) notes.push(`Acked by ${s.ack.name ?? s.ack.by}${s.ack.comment ? `: ${s.ack.comment}` : ''}`);
  if (muted) notes.push('Muted: recorded, not posted again until the mute ends');
  // a resolution's own item already says how it resolved in its summary
  const how = s.resolved?.summary && s.resolved.summary !== item.summary ? `: ${s.resolved.summary}` : '';
  const resolution = s.resolved ? `Resolved at step ${s.resolved.step}${how}` : null;
  if (resolution) notes.push(resolution);
  const ex = item.examples;
  const cut = (t: string): string => (t.length > EXAMPLE_CHARS ? `${t.slice(0, EXAMPLE_CHARS)}…` : t);
  const describe = (label: string, e: { reward: number; breakdown: Record<string, number> }): string =>
    `${label} ${formatValue(e.reward)}` +
    (Object.keys(e.breakdown).length > 0
      ? ` (${Object.entries(e.breakdown)
          .slice(0, 6)
          .map(([k, v]) => `${k} ${formatValue(v)}`)
          .join(', ')})`
      : '');
  const state = resolved ? 'resolved' : item.kind === 'repeat' ? 'still firing' : 'firing';
  return {
    alertId: item.alertId,
    run,
    title: `${item.severity.toUpperCase()} · ${item.rule} ${state} · ${run}`,
    severity: item.severity,
    status,
    summary: item.summary,
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
    resolution,
    ackedBy: s.ack?.by ?? null,
    ackedByName: s.ack?.name ?? null,
    sparkline: item.recent.length > 1 ? `${item.metric} ${sparkline(item.recent)}` : null,
    examples: ex
      ? [
          ...ex.best
            .slice(0, 1)
            .map((e) => ({ title: describe(`best of step ${ex.step}:`, e), code: cut(e.completion) })),
          ...ex.worst
            .slice(0, 1)
            .map((e) => ({ title: describe(`worst of step ${ex.step}:`, e), code: cut(e.completion) })),
        ]
      : [],
    evidence: item.evidence && item.kind !== 'resolved' ? item.evidence : null,
    chart: chartSpec(run, item, s),
    // ids as notify/buttons.ts reads them
    buttons: [
      { id: `ack:${item.alertId}`, label: s.ack ? 'Acked' : 'Ack', disabled: resolved || s.ack !== null },
      { id: `muteRun:${item.alertId}`, label: 'Mute run 1h', disabled: resolved },
      { id: `muteRule:${item.alertId}`, label: 'Mute rule 24h', disabled: resolved },
    ],
  };
}

/** The chart of a card: the captured points, the step it fired at, and why (the rule's lines and the records that
 * broke it; a row written before those were captured: the threshold alone). */
function chartSpec(run: string, item: NotificationItem, s: AlertSnapshot): AlertChart | null {
  const c = item.chart;
  if (!c || c.points.length < 2) return null;
  return {
    title: `${item.metric} · ${run}`,
    metric: c.guides?.metric ?? item.metric,
    points: c.points,
    markStep: s.firedStep ?? item.step,
    ...(c.guides ? { guides: c.guides } : c.threshold === null ? {} : { threshold: c.threshold }),
  };
}

/**
 * The short reply posted in a resolved alert's thread, so that the people who saw it fire hear it ended (the
 * card itself is edited silently). Untrusted text inside: each platform escapes it.
 */
export function resolvedReply(c: AlertCard): string {
  return `✅ ${c.title}: ${c.resolution ?? c.summary}`;
}

/**
 * A card's note split around the acker's name, so that a platform which formats text can show the name
 * literally (`*boss*` is not the bold word boss) while it escapes the words around it as any untrusted text.
 */
export function noteParts(c: AlertCard): { before: string; name: string | null; after: string } {
  const note = c.note ?? '';
  const shown = c.ackedByName ?? c.ackedBy;
  const lead = 'Acked by ';
  if (!shown || !note.startsWith(lead + shown)) return { before: note, name: null, after: '' };
  return { before: lead, name: shown, after: note.slice(lead.length + shown.length) };
}
