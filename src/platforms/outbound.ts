/**
 * What the outbound-only channels (webhook, email, Teams, Mattermost, Feishu) share: named destinations (a URL
 * per name) and one HTTP POST whose failures say whether they can heal. Routing is every platform's `router`.
 */
import { UserError } from '../lib/errors.ts';
import type { Notification } from '../engine/notification.ts';
import { DeliveryError } from '../notify/dispatcher.ts';
import { quietOf } from '../notify/routing.ts';
import { commonSection, router, type Platform, type Route } from './platform.ts';
import * as z from '../lib/zod.ts';
import { nonEmpty } from '../lib/zod.ts';

/** The destination name of the URL given by the environment (`WEBHOOK_URL`, `TEAMS_WEBHOOK_URL`, ...). */
export const DEFAULT_DESTINATION = 'default';

/** `urls` in a section: more destinations by name, for routes (`channel: oncall`). */
export const urlsField = z._default(z.record(nonEmpty(), z.url()), {});

/**
 * Destination name → URL: the section's `urls`, plus the environment's URL as `default`. Null when there is
 * none (the platform is off). Every route must name a known destination: a typo is an error at start-up.
 */
export function destinations(
  platform: string,
  section: { channel?: string; routes: readonly Route[]; urls: Record<string, string> },
  envUrl: string | undefined,
  envName: string,
): { urls: Map<string, string>; fallback: string | undefined } | null {
  const urls = new Map(Object.entries(section.urls));
  if (envUrl) urls.set(DEFAULT_DESTINATION, envUrl);
  if (urls.size === 0) return null;
  const fallback = section.channel ?? (urls.has(DEFAULT_DESTINATION) ? DEFAULT_DESTINATION : undefined);
  const check = (name: string, field: string): void => {
    if (!urls.has(name)) {
      throw new UserError(
        `${platform}.${field}: no destination '${name}' (set ${envName}, or ${platform}.urls.${name})`,
      );
    }
  };
  if (section.channel) check(section.channel, 'channel');
  section.routes.forEach((r, i) => {
    check(r.channel, `routes[${i}].channel`);
  });
  if (!fallback && section.routes.length === 0) {
    throw new UserError(
      `${platform}.urls is set but no channel: set ${envName} or ${platform}.channel (one of its names)`,
    );
  }
  return { urls, fallback };
}

/** How long one POST may take before it counts as failed (and is retried by the outbox). */
const POST_TIMEOUT_MS = 10_000;

/**
 * POSTs `body` and returns the response text. Failures as the dispatcher wants them: a network error or a
 * 5xx is retried; a 429 waits the Retry-After; any other 4xx cannot heal (a deleted hook, a refused
 * signature) and is set aside. The URL never appears in a message: it often carries the secret.
 */
export async function post(
  label: string,
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs = POST_TIMEOUT_MS,
): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', body, headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new DeliveryError(`${label}: no answer (${cause})`);
  }
  const text = await res.text().catch(() => '');
  if (res.ok) return text;
  const why = `${label}: HTTP ${res.status}${text ? ` ${text.slice(0, 200)}` : ''}`;
  if (res.status === 429) throw new DeliveryError(why, retryAfterMs(res.headers.get('retry-after')));
  throw new DeliveryError(why, undefined, res.status >= 400 && res.status < 500);
}

/** Retry-After in seconds or as an HTTP date; a second when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  if (header === null) return 1000;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - now) : 1000;
}

/** The fields of a channel posting to webhook URLs: the common ones and more URLs by name, for routes. */
export const webhookFields = {
  ...commonSection,
  /** more webhook URLs by name, for routes (the default one comes from the environment) */
  urls: urlsField,
};
export const webhookSection = z.prefault(z.strictObject(webhookFields), {});

export type WebhookSection = z.infer<typeof webhookSection>;
/** A webhook channel's settings: its section and its destinations (name -> URL, the default name). */
export interface WebhookSettings<S = WebhookSection> {
  section: S;
  urls: Map<string, string>;
  fallback: string | undefined;
}

/**
 * A channel that POSTs each outbox row as one JSON message to an incoming webhook (Teams' Workflows, Mattermost):
 * its URL from `envName`, more by name in `<id>.urls`, the message built by `message`.
 */
export function jsonWebhookPlatform(
  id: string,
  envName: string,
  message: (n: Notification) => unknown,
): Platform<WebhookSection, WebhookSettings> {
  const route = (settings: WebhookSettings) => router(id, settings.section, settings.fallback);
  return {
    id,
    section: webhookSection,
    settings(s, env) {
      const d = destinations(id, s, env[envName] || undefined, envName);
      return d && { section: s, ...d };
    },
    route,
    async create(settings) {
      return {
        targets: [...settings.urls].map(([name, url]) => ({
          name: `${id}:${name}`,
          quiet: quietOf(settings.section, name),
          async deliver(n: Notification) {
            await post(`${id} ${name}`, url, JSON.stringify(message(n)), { 'content-type': 'application/json' });
          },
        })),
      };
    },
  };
}
