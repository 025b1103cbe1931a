/**
 * Telegram (Bot API): alerts with Ack / Mute buttons, charts, and commands (/status, /alerts, /ack ID ...)
 * read by long polling, so no public URL is needed.
 */
import * as z from '../../lib/zod.ts';
import { UserError } from '../../lib/errors.ts';
import { mentionSchema } from '../../notify/mentions.ts';
import { pagingSection } from '../../notify/routing.ts';
import { router, type Platform } from '../platform.ts';
import type { TelegramSettings } from './bot.ts';
import { telegramAdvice } from './advice.ts';

/** Who a paging alert notifies: Telegram usernames, `@name`. */
export const TelegramMention = mentionSchema({
  users: z._default(
    z.array(
      z
        .string()
        .check(z.regex(/^@[A-Za-z0-9_]{5,32}$/, { message: 'expected a Telegram username such as @ana_oncall' })),
    ),
    [],
  ),
});
export type TelegramMention = z.infer<typeof TelegramMention>;

const section = z.prefault(
  z.strictObject({
    ...pagingSection(TelegramMention),
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
    if (chats.length === 0)
      throw new UserError('telegram.channel (or TELEGRAM_CHAT_ID) is needed: the chat alerts go to');
    return {
      section: s,
      fallback,
      token: env.TELEGRAM_BOT_TOKEN,
      apiUrl: (env.TELEGRAM_API_URL || 'https://api.telegram.org').replace(/\/+$/, ''),
      chats,
      routes: s.routes,
      mention: s.mention,
      quiet: s.quiet,
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
