/**
 * Reading an outbox row's payload back: the JSON the engine wrote (src/engine/notification.ts), checked with
 * zod. Fields added over time are optional, so a row written by an older rlwatch still reads (its cards are
 * rendered from what it has). JSON has no NaN: a non-finite value was written as null and reads as NaN.
 */
import { z } from 'zod';
import type { Notification } from '../engine/notification.ts';

const num = z.number().nullable().transform((v) => v ?? Number.NaN);
const point = z.object({ step: z.number(), value: num });
const snippet = z.object({ reward: num, breakdown: z.record(z.string(), num), completion: z.string() });

const item = z.object({
  alertId: z.number().int(),
  kind: z.enum(['firing', 'repeat', 'resolved', 'update']),
  severity: z.string(),
  rule: z.string(),
  metric: z.string(),
  summary: z.string(),
  step: z.number(),
  epoch: z.number().nullable(),
  recent: z.array(num),
  examples: z.object({ step: z.number(), best: z.array(snippet), worst: z.array(snippet) }).nullable(),
  evidence: z.object({ title: z.string(), lines: z.array(z.string()) }).optional(),
  finished: z
    .object({
      durationMs: z.number().nullable(),
      firstStep: z.number().nullable(),
      lastStep: z.number().nullable(),
      records: z.number(),
      finalReward: z.object({ step: z.number(), value: num }).nullable(),
      bestReward: z.object({ step: z.number(), value: num }).nullable(),
      alerts: z.array(z.object({ rule: z.string(), severity: z.string(), incidents: z.number(), firing: z.number() })),
    })
    .optional(),
  hint: z.string().optional(),
  state: z
    .object({
      startsAt: z.number(),
      firedStep: z.number().nullable(),
      ack: z.object({ by: z.string(), name: z.string().nullish(), at: z.number(), comment: z.string().nullable() }).nullable(),
      muted: z.boolean(),
      resolved: z.object({ step: z.number(), at: z.number(), summary: z.string() }).nullable(),
    })
    .optional(),
  chart: z.object({ points: z.array(point), threshold: z.number().nullable() }).nullable().optional(),
});

const NotificationSchema: z.ZodType<Notification> = z.object({
  run: z.string(),
  items: z.array(item),
  report: z
    .object({ kind: z.enum(['milestone', 'digest']), title: z.string(), lines: z.array(z.string()) })
    .optional(),
});

/** The notification in a payload; throws a short error naming what is wrong when it is none. */
export function parseNotification(json: string): Notification {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('its payload is not JSON');
  }
  const r = NotificationSchema.safeParse(raw);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  throw new Error(`its payload is not a notification (${issue.path.join('.') || 'payload'}: ${issue.message})`);
}
