/** Slack: Bolt in Socket Mode (or its HTTP receiver), slash commands, buttons, alert messages updated in place. */
import * as z from '../../lib/zod.ts';
import { wholeFrom } from '../../lib/zod.ts';
import { UserError } from '../../lib/errors.ts';
import { mentionSchema } from '../../notify/mentions.ts';
import { CommandsSchema, pagingSection } from '../../notify/routing.ts';
import { router, sectionOf, type Platform } from '../platform.ts';
import { slackAdvice } from './advice.ts';

/** Who a paging alert notifies: users (U…, W…) and user groups (S…) by id, or the channel (`here`: those active,
 * `channel`: every member). */
export const SlackMention = mentionSchema({
  users: z._default(
    z.array(z.string().check(z.regex(/^[UW][A-Z0-9]{2,}$/, { message: 'expected a Slack user id (U…)' }))),
    [],
  ),
  groups: z._default(
    z.array(z.string().check(z.regex(/^S[A-Z0-9]{2,}$/, { message: 'expected a Slack user-group id (S…)' }))),
    [],
  ),
  here: z._default(z.boolean(), false),
  channel: z._default(z.boolean(), false),
});
export type SlackMention = z.infer<typeof SlackMention>;

export const SlackSection = z.prefault(
  z.strictObject({
    ...pagingSection(SlackMention),
    /** who may ack and mute: user ids and user-group ids; both empty = anyone in a channel commands are taken from */
    allow: z.prefault(
      z.strictObject({ users: z._default(z.array(z.string()), []), groups: z._default(z.array(z.string()), []) }),
      {},
    ),
    /** where commands are taken from and which runs each channel sees (docs/security.md) */
    commands: CommandsSchema,
    /** socket: outbound WebSocket (no public URL); http: Bolt's HTTP receiver with the signing secret */
    mode: z._default(z.enum(['socket', 'http']), 'socket'),
    port: z._default(wholeFrom(1, 65535), 3000),
  }),
  {},
);
export type SlackSection = z.infer<typeof SlackSection>;

/** From SLACK_* variables (the channel from the config first); no SLACK_BOT_TOKEN, no Slack. */
export interface SlackSettings {
  botToken: string;
  /** Socket Mode (xapp-…); without it, Bolt's HTTP receiver with the signing secret */
  appToken?: string;
  signingSecret?: string;
  /** Web API base (SLACK_API_URL) for tests and proxies */
  apiUrl?: string;
  channel?: string;
  /** Web API retries of a failed call inside the client (default 0: the outbox owns retrying) */
  retries?: number;
  /** Web API request timeout (default 10 s) */
  timeoutMs?: number;
}

export const slack: Platform<SlackSection, SlackSettings> = {
  id: 'slack',
  section: SlackSection,
  settings(section, env) {
    if (!env.SLACK_BOT_TOKEN) return null;
    const channel = section.channel ?? (env.SLACK_CHANNEL_ID || undefined);
    // a bot with nowhere to post would look connected and drop every alert
    if (!channel && section.routes.length === 0) {
      throw new UserError('SLACK_BOT_TOKEN is set but no channel: set SLACK_CHANNEL_ID or slack.channel');
    }
    return {
      botToken: env.SLACK_BOT_TOKEN,
      appToken: env.SLACK_APP_TOKEN || undefined,
      signingSecret: env.SLACK_SIGNING_SECRET || undefined,
      apiUrl: env.SLACK_API_URL || undefined,
      channel,
    };
  },
  route: (settings, config) => router(slack.id, sectionOf(config, slack), settings.channel),
  async create(settings, ctx) {
    // Bolt (and the chart renderer) load only when Slack is configured
    const { SlackBot } = await import('./bot.ts');
    const section = sectionOf(ctx.config, slack);
    const bot = new SlackBot({
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
    };
  },
  advice: slackAdvice,
};
