/**
 * Feishu / Lark through a custom bot webhook: each outbox row is an interactive card, signed when the bot has
 * signature verification on. Outbound only.
 */
import type { Notification } from '../../engine/notification.ts';
import { DeliveryError } from '../../notify/dispatcher.ts';
import { destinations, post, webhookSection, type WebhookSection, type WebhookSettings } from '../outbound.ts';
import { quietOf } from '../../notify/routing.ts';
import { router, type Platform } from '../platform.ts';
import { feishuCard, feishuSign } from './card.ts';

/** Its settings: the webhook destinations and FEISHU_SECRET, the bot's signing secret ("signature
 * verification" in its security settings). */
interface Settings extends WebhookSettings {
  secret: string | undefined;
}

/** Feishu answers HTTP 200 with a code: 0 is success; its rate limits (9499, 11232) heal, the rest (a refused
 * signature, a keyword filter, a bad body) do not. */
const RATE_LIMITED = new Set([9499, 11232]);

function checkAnswer(label: string, text: string): void {
  let answer: { code?: number; msg?: string; StatusCode?: number; StatusMessage?: string };
  try {
    answer = JSON.parse(text);
  } catch {
    throw new DeliveryError(`${label}: unreadable answer ${text.slice(0, 100)}`);
  }
  const code = answer.code ?? answer.StatusCode ?? 0;
  if (code === 0) return;
  const why = `${label}: code ${code} ${answer.msg ?? answer.StatusMessage ?? ''}`.trim();
  throw RATE_LIMITED.has(code) ? new DeliveryError(why, 1000) : new DeliveryError(why, undefined, true);
}

export const feishu: Platform<WebhookSection, Settings> = {
  id: 'feishu',
  section: webhookSection,
  settings(s, env) {
    const d = destinations('feishu', s, env.FEISHU_WEBHOOK_URL || undefined, 'FEISHU_WEBHOOK_URL');
    return d && { section: s, ...d, secret: env.FEISHU_SECRET || undefined };
  },
  route: (settings) => router('feishu', settings.section, settings.fallback),
  async create(settings) {
    return {
      targets: [...settings.urls].map(([name, url]) => ({
        name: `feishu:${name}`,
        quiet: quietOf(settings.section, name),
        async deliver(n: Notification) {
          const timestamp = String(Math.floor(Date.now() / 1000));
          const signed = settings.secret ? { timestamp, sign: feishuSign(timestamp, settings.secret) } : {};
          const body = JSON.stringify({ ...signed, msg_type: 'interactive', card: feishuCard(n) });
          const label = `feishu ${name}`;
          checkAnswer(label, await post(label, url, body, { 'content-type': 'application/json' }));
        },
      })),
    };
  },
};
