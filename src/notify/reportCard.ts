/** A scheduled report as a chat card. */
import type { AlertCard } from './cards.ts';
import type { ScheduledReport } from '../engine/notification.ts';

/** A scheduled report as a chat card: title and lines, no buttons (there is no alert to ack or mute). */
export function reportCard(run: string, r: ScheduledReport): AlertCard {
  return {
    alertId: 0,
    run,
    title: r.title,
    severity: 'info',
    status: 'firing',
    summary: r.lines.join('\n'),
    fields: [],
    note: r.kind === 'digest' ? 'mute with `mute --rule digest`' : 'mute with `mute --rule report`',
    sparkline: null,
    examples: [],
    evidence: null,
    chart: null,
    buttons: [],
  };
}
