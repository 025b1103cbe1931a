/** What the notifiers deliver: everything needed to render, captured when the alert changed. */
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
  /** firing: new incident; repeat: still firing after repeat_interval; resolved */
  kind: 'firing' | 'repeat' | 'resolved';
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
  alerts: Array<{ rule: string; severity: string; incidents: number; firing: number }>;
}
