/** What the notifiers deliver: everything needed to render, captured when the alert changed. */
export interface Notification {
  run: string;
  items: NotificationItem[];
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
}
