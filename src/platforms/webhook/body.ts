/**
 * The JSON a generic webhook receives: Alertmanager's webhook body (version 4) where its fields fit, so that
 * receivers written for Alertmanager read it, plus rlwatch's own fields on each alert. See the README.
 */
import { createHmac } from 'node:crypto';
import { alertCards, stateOf } from '../../notify/cards.ts';
import type { Notification, NotificationItem, ScheduledReport } from '../../engine/notification.ts';
import { alertChartPng } from '../../render/chartOnce.ts';
import { urgencyOf } from '../../store/outbox.ts';

export interface WebhookAlert {
  status: 'firing' | 'resolved';
  labels: { alertname: string; run: string; severity: string; metric: string };
  annotations: { summary: string };
  startsAt: string;
  /** Alertmanager's zero time while firing */
  endsAt: string;
  fingerprint: string;
  /** rlwatch's own fields */
  alertId: number;
  /** never 'update': acks and mutes are not sent to a channel that cannot edit what it sent */
  kind: NotificationItem['kind'];
  state: 'firing' | 'acked' | 'muted' | 'resolved';
  note: string | null;
  step: number;
  epoch: number | null;
  /** the last values of the metric up to the step */
  values: number[];
  examples: Array<{ title: string; completion: string }>;
  evidence: { title: string; lines: string[] } | null;
  /** the chart as a base64 PNG, when `webhook.charts` is on */
  chart?: string;
}

export interface WebhookBody {
  version: '4';
  receiver: string;
  status: 'firing' | 'resolved';
  groupKey: string;
  groupLabels: { run: string };
  commonLabels: { run: string };
  commonAnnotations: Record<string, never>;
  truncatedAlerts: 0;
  alerts: WebhookAlert[];
}

/**
 * A scheduled report (a run reaching a milestone epoch, the daily digest): a body of its own kind, with no
 * Alertmanager `status` or `alerts`, so that a receiver written for Alertmanager never reads it as a resolution.
 */
export interface WebhookReport {
  kind: 'report';
  receiver: 'rlwatch';
  /** the run it is about; '' for the digest, which covers every run */
  run: string;
  report: ScheduledReport;
}

const ZERO_TIME = '0001-01-01T00:00:00Z';
const iso = (ms: number | null | undefined): string => (ms ? new Date(ms).toISOString() : ZERO_TIME);

/** The body for one outbox row: every alert of the burst, its card's state, optionally its chart. */
export async function webhookBody(n: Notification, charts: boolean): Promise<WebhookBody | WebhookReport> {
  if (n.report) return { kind: 'report', receiver: 'rlwatch', run: n.run, report: n.report };
  const cards = alertCards(n);
  const alerts = await Promise.all(
    n.items.map(async (item, i): Promise<WebhookAlert> => {
      const card = cards[i]!;
      const state = stateOf(item);
      const resolved = card.status === 'resolved';
      return {
        status: resolved ? 'resolved' : 'firing',
        labels: { alertname: item.rule, run: n.run, severity: item.severity, metric: item.metric },
        annotations: { summary: card.summary },
        // Alertmanager's zero time where a row written before states were captured does not know
        startsAt: iso(state.startsAt),
        endsAt: resolved ? iso(state.resolved?.at) : ZERO_TIME,
        fingerprint: `rlwatch-${item.alertId}`,
        alertId: item.alertId,
        kind: item.kind,
        state: card.status,
        note: card.note,
        step: item.step,
        epoch: item.epoch,
        values: item.recent,
        examples: card.examples.map((e) => ({ title: e.title, completion: e.code })),
        evidence: card.evidence ?? null,
        ...(charts && card.chart
          ? { chart: (await alertChartPng(card.chart, urgencyOf(card.severity))).toString('base64') }
          : {}),
      };
    }),
  );
  return {
    version: '4',
    receiver: 'rlwatch',
    status: alerts.every((a) => a.status === 'resolved') ? 'resolved' : 'firing',
    groupKey: `rlwatch:{run="${n.run}"}`,
    groupLabels: { run: n.run },
    commonLabels: { run: n.run },
    commonAnnotations: {},
    truncatedAlerts: 0,
    alerts,
  };
}

/**
 * The signature header's value: `v1=` and the hex HMAC-SHA256, under the secret, of `v1:<timestamp>:<raw body>`
 * (Slack's scheme). The timestamp (Unix seconds, sent as `X-Rlwatch-Timestamp`) is signed with the body, so a
 * receiver that refuses old timestamps refuses a captured body replayed later.
 */
export const signature = (secret: string, timestamp: number, rawBody: string): string =>
  `v1=${createHmac('sha256', secret).update(`v1:${timestamp}:${rawBody}`).digest('hex')}`;
