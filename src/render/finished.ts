/** A finished run's summary as name/value pairs, shared by its card and the terminal. */
import { humanDuration } from '../engine/finished.ts';
import type { FinishedSummary } from '../engine/notification.ts';
import { formatValue } from '../lib/numbers.ts';

/** A finished run's summary as name/value pairs: the fields of its card, the lines of the terminal. */
export function finishedFields(s: FinishedSummary): Array<{ name: string; value: string }> {
  const at = (p: { step: number; value: number } | null): string =>
    p ? `${formatValue(p.value)} (step ${p.step})` : '-';
  const alerts = s.alerts.map((a) => `${a.rule} ×${a.incidents}${a.firing > 0 ? ` (${a.firing} firing)` : ''}`);
  return [
    { name: 'Duration', value: s.durationMs === null ? '-' : humanDuration(s.durationMs) },
    { name: 'Steps', value: s.firstStep === null ? '-' : `${s.firstStep}–${s.lastStep} (${s.records} records)` },
    { name: 'Final reward', value: at(s.finalReward) },
    { name: 'Best reward', value: at(s.bestReward) },
    { name: 'Alerts', value: alerts.length > 0 ? alerts.join(', ') : 'none' },
  ];
}
