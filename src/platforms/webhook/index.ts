/**
 * A generic webhook: each outbox row is POSTed as JSON (Alertmanager-compatible, see body.ts), signed with
 * HMAC-SHA256 when a secret is set, so anything (PagerDuty via a bridge, n8n, a custom pager) can be wired.
 */
import * as z from '../../lib/zod.ts';
import type { Notification } from '../../engine/notification.ts';
import { quietOf } from '../../notify/routing.ts';
import { router, type Platform } from '../platform.ts';
import { destinations, post, webhookFields, type WebhookSettings } from '../outbound.ts';

export const SIGNATURE_HEADER = 'X-Rlwatch-Signature';
export const TIMESTAMP_HEADER = 'X-Rlwatch-Timestamp';

const section = z.prefault(
  z.strictObject({
    ...webhookFields,
    /** each alert's chart as a base64 PNG in the body (adds ~30 KB per alert) */
    charts: z._default(z.boolean(), false),
  }),
  {},
);

type Section = z.infer<typeof section>;
interface Settings extends WebhookSettings<Section> {
  /** WEBHOOK_SECRET: signs every body */
  secret: string | undefined;
}

export const webhook: Platform<Section, Settings> = {
  id: 'webhook',
  section,
  settings(s, env) {
    const d = destinations('webhook', s, env.WEBHOOK_URL || undefined, 'WEBHOOK_URL');
    return d && { section: s, ...d, secret: env.WEBHOOK_SECRET || undefined };
  },
  route: (settings) => router('webhook', settings.section, settings.fallback),
  async create(settings) {
    const targets = [...settings.urls].map(([name, url]) => ({
      name: `webhook:${name}`,
      quiet: quietOf(settings.section, name),
      async deliver(n: Notification) {
        // the body draws charts (vega, resvg): loaded on the first post, not with the config
        const { signature, webhookBody } = await import('./body.ts');
        const raw = JSON.stringify(await webhookBody(n, settings.section.charts));
        const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'rlwatch' };
        if (settings.secret) {
          // signed at each attempt: a retry after an outage carries the time it was sent, not when it was queued
          const timestamp = Math.floor(Date.now() / 1000);
          headers[TIMESTAMP_HEADER] = String(timestamp);
          headers[SIGNATURE_HEADER] = signature(settings.secret, timestamp, raw);
        }
        await post(`webhook ${name}`, url, raw, headers);
      },
    }));
    return {
      targets,
    };
  },
};
