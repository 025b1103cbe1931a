/**
 * Telegram (Bot API): alerts with Ack / Mute buttons, charts, and commands (/status, /alerts, /ack ID ...)
 * read by long polling, so no public URL is needed.
 */
import * as z from '../../zod.ts';
import { UserError } from '../../errors.ts';
import { commonSection, router, type Platform } from '../platform.ts';
import type { TelegramSettings } from './bot.ts';
import { telegramAdvice } from './advice.ts';

const section = z.prefault(
  z.strictObject({
    ...commonSection,
    /** who may ack and mute: Telegram user ids; empty = anyone in the chats */
    allow: z.prefault(z.strictObject({ users: z._default(z.array(z.coerce.string()), []) }), {}),
    /** answer commands and buttons (getUpdates long polling); off: alerts only */
    commands: z._default(z.boolean(), true),
  }),
  {},
);

type Section = z.infer<typeof section>;
type Settings = TelegramSettings & { section: Section };

export const telegram: Platform<Section, Settings> = {
  id: 'telegram',
  section,
  settings(s, env) {
    if (!env.TELEGRAM_BOT_TOKEN) return null;
    const fallback = s.channel ?? (env.TELEGRAM_CHAT_ID || undefined);
    const chats = [...new Set([...(fallback ? [fallback] : []), ...s.routes.map((r) => r.channel)])];
    if (chats.length === 0) throw new UserError('telegram.channel (or TELEGRAM_CHAT_ID) is needed: the chat alerts go to');
    return {
      section: s,
      fallback,
      token: env.TELEGRAM_BOT_TOKEN,
      apiUrl: (env.TELEGRAM_API_URL || 'https://api.telegram.org').replace(/\/+$/, ''),
      chats,
      routes: s.routes,
      allow: s.allow.users,
      commands: s.commands,
      pollSeconds: 25,
    };
  },
  route: (settings) => router('telegram', settings.section, settings.fallback),
  async create(settings, ctx) {
    const bot = new (await import('./bot.ts')).TelegramBot(settings, ctx);
    return {
      targets: bot.targets(),
      start: () => bot.start(),
      stop: () => bot.stop(),
      failure: bot.failure,
    };
  },
  advice: telegramAdvice,
};
