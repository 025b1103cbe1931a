/**
 * Reading an outbox row's payload back: the JSON the engine wrote (src/engine/notification.ts), checked with
 * zod. Fields added over time are optional, so a row written by an older rlwatch still reads (its cards are
 * rendered from what it has). JSON has no NaN: a non-finite value was written as null and reads as NaN.
 */
import { ChartGuidesSchema } from '../engine/capture.ts';
import type { Notification } from '../engine/notification.ts';
import * as z from '../lib/zod.ts';

const num = z.pipe(
  z.nullable(z.number()),
  z.transform((v: number | null) => v ?? Number.NaN),
);
const stepValue = z.object({ step: z.number(), value: num });
const snippet = z.object({ reward: num, breakdown: z.record(z.string(), num), completion: z.string() });

const item = z.object({
  alertId: z.int(),
  kind: z.enum(['firing', 'repeat', 'resolved', 'update']),
  severity: z.string(),
  rule: z.string(),
  metric: z.string(),
  summary: z.string(),
  step: z.number(),
  epoch: z.nullable(z.number()),
  recent: z.array(num),
  examples: z.nullable(z.object({ step: z.number(), best: z.array(snippet), worst: z.array(snippet) })),
  evidence: z.optional(z.object({ title: z.string(), lines: z.array(z.string()) })),
  finished: z.optional(
    z.object({
      durationMs: z.nullable(z.number()),
      firstStep: z.nullable(z.number()),
      lastStep: z.nullable(z.number()),
      records: z.number(),
      finalReward: z.nullable(stepValue),
      bestReward: z.nullable(stepValue),
      alerts: z.array(z.object({ rule: z.string(), severity: z.string(), incidents: z.number(), firing: z.number() })),
    }),
  ),
  hint: z.optional(z.string()),
  state: z.optional(
    z.object({
      startsAt: z.number(),
      firedStep: z.nullable(z.number()),
      ack: z.nullable(
        z.object({ by: z.string(), name: z.nullish(z.string()), at: z.number(), comment: z.nullable(z.string()) }),
      ),
      muted: z.boolean(),
      resolved: z.nullable(z.object({ step: z.number(), at: z.number(), summary: z.string() })),
    }),
  ),
  chart: z.optional(
    z.nullable(
      z.object({
        points: z.array(stepValue),
        threshold: z.nullable(z.number()),
        guides: z.optional(ChartGuidesSchema),
      }),
    ),
  ),
});

const NotificationSchema: z.ZodMiniType<Notification> = z.object({
  run: z.string(),
  items: z.array(item),
  report: z.optional(
    z.object({ kind: z.enum(['milestone', 'digest']), title: z.string(), lines: z.array(z.string()) }),
  ),
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
