/** Discord: a gateway bot (outbound only) with slash commands, buttons, and alert cards edited in place. */
import * as z from '../../lib/zod.ts';
import { UserError } from '../../lib/errors.ts';
import { mentionSchema } from '../../notify/mentions.ts';
import { CommandsSchema, pagingSection } from '../../notify/routing.ts';
import { router, sectionOf, type Platform } from '../platform.ts';
import { discordAdvice } from './advice.ts';

/** A Discord id (a snowflake), quoted in YAML: unquoted, a number that long loses its last digits. */
const snowflake = z.string().check(z.regex(/^\d{15,21}$/, { message: 'expected a Discord id in quotes (digits)' }));

/** Who a paging alert notifies: roles and users by id, or everyone online in the channel (`here`). */
export const DiscordMention = mentionSchema({
  roles: z._default(z.array(snowflake), []),
  users: z._default(z.array(snowflake), []),
  here: z._default(z.boolean(), false),
});
export type DiscordMention = z.infer<typeof DiscordMention>;

export const DiscordSection = z.prefault(
  z.strictObject({
    ...pagingSection(DiscordMention),
    /** who may ack and mute: user ids and role ids; both empty = anyone in a channel commands are taken from */
    allow: z.prefault(
      z.strictObject({ users: z._default(z.array(z.string()), []), roles: z._default(z.array(z.string()), []) }),
      {},
    ),
    /** where commands are taken from and which runs each channel sees (docs/security.md) */
    commands: CommandsSchema,
  }),
  {},
);
export type DiscordSection = z.infer<typeof DiscordSection>;

/** From DISCORD_* variables (the channel from the config first); no DISCORD_TOKEN, no Discord. */
export interface DiscordSettings {
  token: string;
  /** REST base (DISCORD_API_URL) for tests and proxies; the gateway URL comes from it */
  apiUrl?: string;
  guildId?: string;
  channel?: string;
  /** REST retries of 5xx and network errors inside one call (default 0: the outbox owns retrying) */
  retries?: number;
  /** REST request timeout (default 10 s) */
  timeoutMs?: number;
}

export const discord: Platform<DiscordSection, DiscordSettings> = {
  id: 'discord',
  section: DiscordSection,
  settings(section, env) {
    if (!env.DISCORD_TOKEN) return null;
    const channel = section.channel ?? (env.DISCORD_CHANNEL_ID || undefined);
    // a bot with nowhere to post would look connected and drop every alert
    if (!channel && section.routes.length === 0) {
      throw new UserError('DISCORD_TOKEN is set but no channel: set DISCORD_CHANNEL_ID or discord.channel');
    }
    return {
      token: env.DISCORD_TOKEN,
      apiUrl: env.DISCORD_API_URL || undefined,
      guildId: env.DISCORD_GUILD_ID || undefined,
      channel,
    };
  },
  route: (settings, config) => router(discord.id, sectionOf(config, discord), settings.channel),
  async create(settings, ctx) {
    // discord.js (and the chart renderer) load only when Discord is configured
    const { DiscordBot } = await import('./bot.ts');
    const section = sectionOf(ctx.config, discord);
    const bot = new DiscordBot({
      ...settings,
      section,
      store: ctx.store,
      config: ctx.config,
      log: ctx.log,
      deliverNow: ctx.deliverNow,
    });
    let refused: (err: Error) => void = () => {};
    const failure = new Promise<Error>((done) => (refused = done));
    return {
      targets: bot.targets(),
      ready: () => bot.ready,
      start: () => bot.connect({ onUp: ctx.wake, onFatal: refused }),
      stop: () => bot.stop(),
      failure,
      settled: () => bot.settled(),
    };
  },
  advice: discordAdvice,
};
