/**
 * What the notifiers deliver: everything needed to render, captured when the alert changed, so that delivery
 * never reads the store back. Stored as JSON in `outbox.payload` (and, as posted, in `chat_messages.payload`);
 * read back through the zod schema in src/notify/payload.ts.
 */
import type { RuleIncidents } from '../store/alerts.ts';
import type { ChartGuides } from './capture.ts';

/** Alerts per chat message: one row of buttons per alert, and the strictest chat allows five rows. A notification of
 * more (a storm) shows that many cards of a severity and one chart: the engine captures no chart for the others. */
export const CARDS_PER_MESSAGE = 5;

export interface Notification {
  run: string;
  items: NotificationItem[];
  /** a report nobody asked for (a milestone epoch reached, the daily digest): then `items` is empty */
  report?: ScheduledReport;
}

/** What a scheduled report says (src/report/schedule.ts), rendered as is by every notifier. */
export interface ScheduledReport {
  kind: 'milestone' | 'digest';
  title: string;
  /** status, findings, actions (milestone); one line per run (digest): untrusted names inside */
  lines: string[];
}

export interface ExampleSnippet {
  reward: number;
  breakdown: Record<string, number>;
  completion: string;
}

export interface NotificationItem {
  alertId: number;
  /** firing: new incident; repeat: still firing after repeat_interval; resolved; update: acked, muted or
   * unmuted, its cards edited in place where they were posted (never a new message: src/notify/cardUpdates.ts) */
  kind: 'firing' | 'repeat' | 'resolved' | 'update';
  severity: string;
  rule: string;
  metric: string;
  summary: string;
  step: number;
  epoch: number | null;
  /** the last 50 values of the metric up to the step */
  recent: number[];
  examples: { step: number; best: ExampleSnippet[]; worst: ExampleSnippet[] } | null;
  /** the log lines that show why (an error and the lines before it; a warning line): untrusted text */
  evidence?: { title: string; lines: string[] };
  /** run_finished: the run's summary */
  finished?: FinishedSummary;
  /** what to try, in one line, from the knowledge base (src/engine/presets/knowledge.ts) */
  hint?: string;
  /** the alert as it stood when the row was written; absent in rows written before this field existed, whose
   * cards are rendered from the rest (firing, or resolved by `kind`) */
  state?: AlertSnapshot;
  /** what the chart draws; null: no chart (a log rule, too few points); absent in older rows: no chart either */
  chart?: ChartData | null;
}

/** An alert's state for its card: captured by the engine when it writes the row, and again when an ack or
 * a mute changes it (src/notify/cardUpdates.ts; src/notify/delivery.ts `recapture` for the clicked card). */
export interface AlertSnapshot {
  /** when it fired (ms since the epoch; when it started, if it never fired) */
  startsAt: number;
  firedStep: number | null;
  /** `by` the platform id, `name` the display name (absent in rows written before names were kept) */
  ack: { by: string; name?: string | null; at: number; comment: string | null } | null;
  /** a mute (silence) matched it */
  muted: boolean;
  resolved: { step: number; at: number; summary: string } | null;
}

/** The series around the alert's step, and the lines drawn over it. */
export interface ChartData {
  points: Array<{ step: number; value: number }>;
  /** the rule's line, when the rule has one (threshold rules) */
  threshold: number | null;
  /** why it fired, drawn over the series (src/engine/capture.ts); absent in older rows */
  guides?: ChartGuides;
}

/** What a finished run's card says. */
export interface FinishedSummary {
  /** training time: the trainer's own `train_runtime`, else the span over which rlwatch read its steps */
  durationMs: number | null;
  firstStep: number | null;
  lastStep: number | null;
  records: number;
  /** the last and the best finite reward, with their steps */
  finalReward: { step: number; value: number } | null;
  bestReward: { step: number; value: number } | null;
  /** the run's alerts by rule: incidents and how many are still firing */
  alerts: RuleIncidents[];
}
