/**
 * Quiet hours of a route (Alertmanager's time intervals, Grafana's mute timings): while they last, the alerts that
 * would post a new message are held rather than posted (criticals go through unless `criticals: hold`), and once
 * they end, the held ones still firing go out as one summary message per destination (src/notify/dispatcher.ts).
 */
import type { Notification, NotificationItem } from '../engine/notification.ts';
import * as z from '../lib/zod.ts';

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
const HOURS = /^(?:([01]\d|2[0-3]):([0-5]\d))-(?:([01]\d|2[0-3]):([0-5]\d))$/;

function zoneOk(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const QuietSchema = z.strictObject({
  /** `HH:MM-HH:MM` of `timezone`; an end before the start runs past midnight (`22:00-07:00`) */
  hours: z.string().check(
    z.regex(HOURS, { message: 'expected HH:MM-HH:MM, such as 22:00-07:00' }),
    z.refine((h) => h.slice(0, 5) !== h.slice(6), { message: 'the start and the end are the same time' }),
  ),
  /** the days a quiet interval starts on (`22:00-07:00` with `[fri]`: Friday night into Saturday); unset: every day */
  days: z.optional(z.array(z.enum(DAYS)).check(z.minLength(1))),
  /** the IANA time zone of `hours` (Europe/Paris, America/New_York) */
  timezone: z._default(
    z.string().check(z.refine(zoneOk, { message: 'expected an IANA time zone such as UTC or Europe/Paris' })),
    'UTC',
  ),
  /** page: criticals are posted at once, with their mention; hold: held with the rest */
  criticals: z._default(z.enum(['page', 'hold']), 'page'),
});
export type Quiet = z.infer<typeof QuietSchema>;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The day of the week (0 Sunday) and the minute of the day at `now` in `zone`. */
function localTime(now: number, zone: string): { day: number; minute: number } {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(zone, f);
  }
  const parts = f.formatToParts(now);
  const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? '';
  const day = DAYS.indexOf(get('weekday').toLowerCase().slice(0, 3) as (typeof DAYS)[number]);
  return { day, minute: Number(get('hour')) * 60 + Number(get('minute')) };
}

/** Whether `now` falls in the quiet interval. */
export function isQuiet(q: Quiet, now: number): boolean {
  const [, h1, m1, h2, m2] = HOURS.exec(q.hours)!;
  const start = Number(h1) * 60 + Number(m1);
  const end = Number(h2) * 60 + Number(m2);
  const { day, minute } = localTime(now, q.timezone);
  const on = (d: number): boolean => q.days === undefined || q.days.includes(DAYS[(d + 7) % 7]!);
  if (start < end) return on(day) && minute >= start && minute < end;
  // past midnight: the evening part is the day's own interval, the morning part the day before's
  return (minute >= start && on(day)) || (minute < end && on(day - 1));
}

/** What a held alert's severity does during the quiet interval: held (not posted) or posted at once. */
export const holds = (q: Quiet, severity: string): boolean => severity !== 'critical' || q.criticals === 'hold';

/** The outbox target under which a target's held items wait: no dispatcher lane claims it, so they are posted only
 * by the summary once the interval ends, and they survive a restart as any outbox row does. */
export const heldTarget = (target: string): string => `held:${target}`;

/** How a quiet summary's title starts: what tells it from the scheduled reports it is delivered as. */
export const QUIET_SUMMARY = 'While quiet';

/** An alert held during quiet hours: its run, its latest held item, and the quiet hours that held it. */
export interface Held {
  run: string;
  item: NotificationItem;
  quiet: Quiet | undefined;
}

const plural = (k: number, word: string): string => `${k} ${word}${k === 1 || word === 'info' ? '' : 's'}`;

/**
 * The one message of a destination's held alerts once its quiet hours ended: `While quiet (22:00-07:00): 3 warnings
 * on 2 runs`, then a line per alert. Delivered as a scheduled report is (a card of its own, no buttons); its run is
 * the first alert's.
 */
export function quietSummary(held: readonly Held[]): Notification {
  const hours = [...new Set(held.flatMap((h) => (h.quiet ? [h.quiet.hours] : [])))];
  const bySeverity = ['critical', 'warning', 'info']
    .map((s) => [s, held.filter((h) => h.item.severity === s).length] as const)
    .filter(([, k]) => k > 0)
    .map(([s, k]) => plural(k, s));
  const runs = new Set(held.map((h) => h.run)).size;
  const title = `${QUIET_SUMMARY}${hours.length > 0 ? ` (${hours.join(', ')})` : ''}: ${bySeverity.join(', ')} on ${plural(runs, 'run')}`;
  const lines = held.map(
    ({ run, item: i }) =>
      `${i.severity.toUpperCase()} · ${i.rule} · ${run}: ${i.summary.split('\n')[0]} (#${i.alertId}, step ${i.step})`,
  );
  return { run: held[0]!.run, items: [], report: { kind: 'digest', title, lines } };
}
