/**
 * The Discord bot (discord.js): posts and edits alert cards, attaches charts, registers the slash commands and
 * answers them and the card buttons through the one interaction path.
 */
import {
  ActionRowBuilder,
  AttachmentBuilder,
  ButtonBuilder,
  ButtonStyle,
  Client,
  DiscordAPIError,
  EmbedBuilder,
  escapeMarkdown,
  GatewayIntentBits,
  HTTPError,
  MessageFlags,
  RateLimitError,
  type APIApplicationCommandOption,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  GuildMember,
  ApplicationIntegrationType,
  InteractionContextType,
  PermissionFlagsBits,
  type Interaction,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  type SendableChannels,
} from 'discord.js';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import PQueue from 'p-queue';
import { UserError } from '../../lib/errors.ts';
import { COMMANDS, knownNames, type Args, type CommandSpec, type OptionSpec } from '../../interact/registry.ts';
import type { Reply } from '../../render/reply.ts';
import type { Notification } from '../../engine/notification.ts';
import type { Log } from '../../lib/log.ts';
import { COLORS, noteParts, resolvedReply, type AlertCard } from '../../notify/cards.ts';
import { keepConnecting, type ConnectHooks, type Connector } from '../../notify/connect.ts';
import { deliverCards, recapture, shownNow } from '../../notify/delivery.ts';
import { DeliveryError, type Target } from '../../notify/dispatcher.ts';
import { buttonRequest, changedSomething, interact, mayAct, type Asker } from '../../interact/interaction.ts';
import { codeBlock, cut, joinWithin, tailBlock } from '../../notify/limits.ts';
import { mentionOf } from '../../notify/mentions.ts';
import { allDestinations, commandPlaces, NOT_HERE, quietOf, targetName, type Place } from '../../notify/routing.ts';
import { renderLineChart } from '../../render/chart.ts';
import { alertChartPng, warmCardCharts } from '../../render/chartOnce.ts';
import type { Config } from '../../config/schema.ts';
import type { StoreContract } from '../../store/contract.ts';
import type { DiscordMention, DiscordSection, DiscordSettings } from './index.ts';

/** Discord's limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits). */
const LIMIT = {
  title: 256,
  description: 4096,
  fieldName: 256,
  fieldValue: 1024,
  fields: 25,
  embeds: 10,
  rows: 5,
  choices: 25,
  optionDescription: 100,
  embedsTotal: 6000,
};

export interface DiscordOptions extends DiscordSettings {
  section: DiscordSection;
  store: StoreContract;
  /** the loaded config: commands answer with its report ranges and rule overrides */
  config?: Config;
  log: Log;
  /** an ack or a mute queued edits of its cards: deliver them now (PlatformContext.deliverNow) */
  deliverNow?: () => void;
}

/** How long the gateway may take to say ready after a login before the attempt is given up and retried. */
const READY_TIMEOUT_MS = 30_000;
/** A chart's edit refused by a rate limit is tried again after the wait, up to this many tries in all: in a storm the
 * charts of dozens of cards meet the channel's limit one after another. */
const CHART_TRIES = 10;
/** How long `stop` waits for the charts being attached. */
const CHARTS_GRACE_MS = 500;

const OPTION_TYPE = { string: 3, integer: 4, boolean: 5 } as const;

/** Discord waits 3 s for an interaction's first answer: one not ready by then says "thinking" first. */
const DEFER_AFTER_MS = 2000;

/** What a member needs by default to see and use a command that changes state (ack, mute, unmute): Manage
 * Messages, which a server's moderators hold. Server admins may change it per command (Server Settings >
 * Integrations); rlwatch's own `discord.allow` and channel checks apply on top. Reads need nothing. */
const WRITE_PERMISSION = PermissionFlagsBits.ManageMessages.toString();
/** Commands are a server's: not offered in DMs or group DMs, nor installed on a user's account. */
const GUILD_ONLY = {
  contexts: [InteractionContextType.Guild],
  integration_types: [ApplicationIntegrationType.GuildInstall],
};

/**
 * Untrusted text (run names, log lines, summaries naming metrics) outside a code block: a masked link, a
 * heading, a list marker or a backtick (which could open a code block) becomes plain text. Mentions are left to allowed_mentions (parse: []) on every
 * message, which is what makes `@everyone` inert. Emphasis stays: `frac_zero_std` must read as itself.
 */
export const inert = (s: string): string =>
  escapeMarkdown(s, {
    codeBlock: true,
    inlineCode: true,
    codeBlockContent: true,
    inlineCodeContent: true,
    bold: false,
    italic: false,
    underline: false,
    strikethrough: false,
    spoiler: false,
    escape: false,
    heading: true,
    bulletedList: true,
    numberedList: true,
    maskedLink: true,
  });
/** A person's name: nothing in it formats, emphasis included (`*boss*`, `_x_`, `~~y~~` show as typed). */
const literal = (s: string): string =>
  escapeMarkdown(s, { heading: true, bulletedList: true, numberedList: true, maskedLink: true });

/** A card's note: the acker's name literal, the rest as any untrusted text. */
function noteText(c: AlertCard): string {
  const { before, name, after } = noteParts(c);
  return inert(before) + (name === null ? '' : literal(name)) + inert(after);
}

/** Text naming people: each of `names` literal wherever it occurs, the rest as any untrusted text. */
function withNames(text: string, names: readonly string[]): string {
  const shown = names.filter((n) => n !== '').sort((a, b) => b.length - a.length);
  if (shown.length === 0) return inert(text);
  const at = new RegExp(shown.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  let out = '';
  let from = 0;
  for (const m of text.matchAll(at)) {
    out += inert(text.slice(from, m.index)) + literal(m[0]);
    from = m.index + m[0].length;
  }
  return out + inert(text.slice(from));
}

/** The caller's name as the guild shows it: their server nickname, else their display name, else their
 * username (`GuildMember.displayName`); a member discord.js has not cached arrives as the API's raw object. */
function shownName(i: ChatInputCommandInteraction | ButtonInteraction): string {
  const m = i.member;
  return m instanceof GuildMember ? m.displayName : (m?.nick ?? i.user.displayName);
}

/** Every message, edit and reply says so explicitly: nothing rlwatch sends may ping anyone. */
const NO_MENTIONS = { parse: [] as [] };

/** The slash commands, from the shared tree: groups become commands with subcommands. */
export function discordCommands(): RESTPostAPIChatInputApplicationCommandsJSONBody[] {
  const option = (o: OptionSpec): APIApplicationCommandOption =>
    ({
      type: OPTION_TYPE[o.type],
      name: o.name,
      description: cut(o.description, LIMIT.optionDescription),
      required: o.required === true,
      ...(o.choices ? { choices: o.choices.map((c) => ({ name: c, value: c })) } : {}),
      ...(o.autocomplete ? { autocomplete: true } : {}),
    }) as APIApplicationCommandOption;
  // Discord wants required options first
  const options = (spec: CommandSpec) =>
    [...spec.options].sort((a, b) => Number(b.required === true) - Number(a.required === true)).map(option);
  // Discord sets permissions per top-level command: a group's subcommands all share its own (all reads today)
  const rights = (specs: readonly CommandSpec[]) =>
    specs.some((s) => s.access === 'write') ? { default_member_permissions: WRITE_PERMISSION } : {};
  const out: RESTPostAPIChatInputApplicationCommandsJSONBody[] = [];
  for (const spec of COMMANDS) {
    if (spec.path.length === 1) {
      out.push({
        name: spec.path[0],
        description: cut(spec.description, 100),
        options: options(spec),
        ...rights([spec]),
        ...GUILD_ONLY,
      });
      continue;
    }
    const [group, sub] = spec.path;
    let cmd = out.find((c) => c.name === group);
    const description = group === 'run' ? 'one run' : `${group} over time`;
    if (!cmd) {
      const rightsOfGroup = rights(COMMANDS.filter((c) => c.path[0] === group));
      out.push((cmd = { name: group, description, options: [], ...rightsOfGroup, ...GUILD_ONLY }));
    }
    cmd.options!.push({
      type: 1,
      name: sub,
      description: cut(spec.description, 100),
      options: options(spec),
    } as APIApplicationCommandOption);
  }
  return out;
}

/**
 * One embed within Discord's limits: each part cut to its own limit, and all of them together within the
 * `budget` of characters this embed may use of the message's 6,000. Fields go first (they carry the
 * numbers); the description takes what is left, dropping whole parts (never half a code block).
 */
function fitEmbed(
  title: string,
  fields: ReadonlyArray<{ name: string; value: string }>,
  parts: readonly string[],
  budget: number,
): EmbedBuilder {
  const embed = new EmbedBuilder().setTitle(cut(title, LIMIT.title));
  let left = budget - Math.min(title.length, LIMIT.title);
  const kept: Array<{ name: string; value: string; inline: boolean }> = [];
  for (const f of fields.slice(0, LIMIT.fields)) {
    const name = cut(f.name, LIMIT.fieldName);
    const value = cut(inert(f.value) || '-', LIMIT.fieldValue);
    if (name.length + value.length > left - 100) break; // keep room for a line of description
    kept.push({ name, value, inline: true });
    left -= name.length + value.length;
  }
  if (kept.length > 0) embed.addFields(kept);
  const room = Math.min(LIMIT.description, left);
  const description = joinWithin(parts, '\n', room) || cut(parts[0] ?? '', room);
  if (description) embed.setDescription(description);
  return embed;
}

/** A Reply as one embed (with its chart attached): the same content the CLI prints. */
export async function replyMessage(
  reply: Reply,
): Promise<{ embeds: EmbedBuilder[]; files: AttachmentBuilder[]; allowedMentions: typeof NO_MENTIONS }> {
  const names = reply.names ?? [];
  const parts = [
    ...reply.lines.map((l) => cut(withNames(l, names), 400)),
    ...(reply.blocks ?? []).map(
      (b) => `${cut(inert(b.title), 300)}\n${b.tail ? tailBlock(b.code.split('\n'), 3000) : codeBlock(b.code, 1000)}`,
    ),
  ];
  const title = names.length === 0 ? reply.title : withNames(reply.title, names);
  const embed = fitEmbed(title, reply.fields, parts, LIMIT.embedsTotal).setColor(0x264653);
  const files: AttachmentBuilder[] = [];
  if (reply.chart) {
    files.push(new AttachmentBuilder(await renderLineChart(reply.chart), { name: 'chart.png' }));
    embed.setImage('attachment://chart.png');
  }
  if (reply.attachment)
    files.push(new AttachmentBuilder(Buffer.from(reply.attachment.content), { name: reply.attachment.name }));
  return { embeds: [embed], files, allowedMentions: NO_MENTIONS };
}

/** What a lock screen shows (embeds are not in a push notification): per card its title (severity, rule,
 * state, run) and the first line of its summary, which carries the number that fired it. */
export function contentLine(cards: readonly AlertCard[]): string {
  const line = (c: AlertCard): string => `${c.title}: ${c.summary.split('\n')[0]}`;
  return cut(inert(cards.map(line).join('\n')), 1000);
}

/**
 * A message's content and allowed mentions: the configured mention first, and only its ids allowed to ping. `here`
 * needs `parse: ['everyone']`, which would also let an `@everyone` or `@here` of the untrusted text ping: those are
 * broken by a zero-width space then.
 */
export function paged(text: string, m: DiscordMention | null) {
  if (!m) return { content: text, allowedMentions: NO_MENTIONS };
  const who = [...m.roles.map((id) => `<@&${id}>`), ...m.users.map((id) => `<@${id}>`), ...(m.here ? ['@here'] : [])];
  const allowedMentions = {
    parse: m.here ? (['everyone'] as const) : NO_MENTIONS.parse,
    roles: m.roles,
    users: m.users,
  };
  const shown = m.here ? text.replace(/@(everyone|here)/g, '@\u200b$1') : text;
  return { content: `${who.join(' ')}\n${shown}`, allowedMentions };
}

/**
 * What a message does with its cards' charts: draws and attaches them (`attach`: a post, or the edit that adds them
 * to a card posted without), leaves them out (`later`: a card goes out at once, its charts follow), or keeps
 * those posted (`kept`: an edit sends no files and no `attachments` list, so Discord keeps the ones posted and each
 * embed still shows its own by name).
 */
export type Charts = 'attach' | 'later' | 'kept';

/** Alert cards as embeds sharing the message's 6,000 characters, one row of buttons per alert, and each card's
 * chart as an image (see `Charts`). */
export async function cardsMessage(
  cards: readonly AlertCard[],
  charts: Charts = 'attach',
  urgency = 0,
  mention: DiscordMention | null = null,
) {
  const embeds: EmbedBuilder[] = [];
  const files: AttachmentBuilder[] = [];
  const components: ActionRowBuilder<ButtonBuilder>[] = [];
  const budget = Math.floor(LIMIT.embedsTotal / Math.max(1, cards.length));
  for (const c of cards) {
    const parts = [
      cut(inert(c.summary), 500),
      ...(c.note ? [`**${cut(noteText(c), 500)}**`] : []),
      ...(c.sparkline ? [`\`${c.sparkline.replaceAll('`', "'")}\``] : []),
    ];
    for (const e of c.examples) parts.push(`${cut(inert(e.title), 300)}\n${codeBlock(e.code, 700)}`);
    // the evidence goes first among the blocks: on a crash it is why the card exists
    if (c.evidence) parts.splice(1, 0, `${cut(inert(c.evidence.title), 200)}\n${tailBlock(c.evidence.lines, 1800)}`);
    const embed = fitEmbed(c.title, c.fields, parts, budget).setColor(
      c.status === 'firing' ? (COLORS[c.severity as 'info'] ?? COLORS.firing) : COLORS[c.status],
    );
    if (c.chart && charts !== 'later') {
      const name = `chart-${c.alertId}.png`;
      if (charts === 'attach') files.push(new AttachmentBuilder(await alertChartPng(c.chart, urgency), { name }));
      embed.setImage(`attachment://${name}`);
    }
    embeds.push(embed);
    if (c.buttons.length > 0)
      components.push(
        new ActionRowBuilder<ButtonBuilder>().addComponents(
          c.buttons.map((b) =>
            new ButtonBuilder()
              .setCustomId(b.id)
              .setLabel(b.label)
              .setStyle(b.id.startsWith('ack') ? ButtonStyle.Primary : ButtonStyle.Secondary)
              .setDisabled(b.disabled),
          ),
        ),
      );
  }
  // log lines and run names are untrusted: nothing in a card may ping anyone but the configured mention
  const message = { ...paged(contentLine(cards), mention), embeds, components };
  return charts === 'kept' ? message : { ...message, files, attachments: [] };
}

/** The reply in a resolved alert's thread: plain text (a push notification says it), pinging nobody. */
export function resolvedMessage(cards: readonly AlertCard[], ref: string) {
  return {
    content: cut(inert(cards.map(resolvedReply).join('\n')), 2000),
    reply: { messageReference: ref, failIfNotExists: false },
    allowedMentions: { ...NO_MENTIONS, repliedUser: false },
  };
}

/**
 * A refused or failed REST call as a delivery error the dispatcher understands: a rate limit carries its
 * wait; 4xx answers (Unknown Channel, Missing Access, Missing Permissions, a bad request) and a refused
 * token cannot heal by retrying; 5xx answers and network errors can.
 */
function deliveryError(err: unknown): Error {
  if (err instanceof RateLimitError) return new DeliveryError(`Discord rate limit on ${err.route}`, err.retryAfter);
  if (err instanceof DiscordAPIError) {
    return new DeliveryError(`Discord ${err.status}: ${err.message}`, undefined, err.status >= 400 && err.status < 500);
  }
  if (err instanceof HTTPError) return new DeliveryError(`Discord ${err.status}: ${err.message}`);
  if (isTokenInvalid(err)) return new DeliveryError('Discord refused the token (DISCORD_TOKEN)', undefined, true);
  return err instanceof Error ? err : new Error(String(err));
}

const isTokenInvalid = (err: unknown): boolean => (err as { code?: string }).code === 'TokenInvalid';

/**
 * The Discord bot: a gateway client (outbound only) that registers the command tree, answers commands,
 * autocomplete and buttons, and delivers alert notifications to its channels, editing them in place.
 */
export class DiscordBot {
  readonly client: Client;
  private readonly channels: string[];
  /** where commands are taken from, and what each channel sees */
  private readonly places: (channel: string) => Place;
  /** the server commands are taken from: DISCORD_GUILD_ID, else the alert channel's (looked up at start) */
  private guild: string | undefined;
  /** per channel, the posts waiting to go: see `inTurn` */
  private readonly posting = new Map<string, PQueue>();
  /** charts being attached to cards already posted (`attachCharts`) */
  private readonly charting = new Set<Promise<void>>();
  private connected = false;
  private connector: Connector | null = null;

  constructor(private readonly opts: DiscordOptions) {
    this.client = new Client({
      intents: [GatewayIntentBits.Guilds],
      rest: {
        ...(opts.apiUrl ? { api: opts.apiUrl } : {}),
        // bounded: one delivery never sits inside the client's own retries; the outbox retries it
        retries: opts.retries ?? 0,
        timeout: opts.timeoutMs ?? 10_000,
        // a rate limit on posting goes back to the dispatcher, which waits Retry-After for that channel only
        rejectOnRateLimit: ['/channels'],
      },
    });
    this.channels = allDestinations(opts.section, opts.channel);
    this.places = commandPlaces(opts.section, opts.channel);
    this.guild = opts.guildId;
    this.client.on('interactionCreate', (i) => void this.onInteraction(i));
    this.client.on('error', (e) => opts.log.warn(`discord: ${e.message}`));
  }

  /** Logs in, waits for the guilds, and registers the commands (guild commands when a guild is set). */
  async start(): Promise<void> {
    const ready = once(this.client, 'clientReady', { signal: AbortSignal.timeout(READY_TIMEOUT_MS) });
    ready.catch(() => {}); // a failed login rejects first; this one is then of no interest
    // discord.js redials a gateway it cannot reach (a closed port) without a word until the ready timeout: its first
    // drop before the bot is ready fails the attempt instead, so that the user hears of it at once
    let dropped: () => void = () => {};
    const unreachable = new Promise<never>((_, reject) => {
      dropped = () => reject(new Error('its gateway closed the connection before the bot was ready'));
      this.client.once('shardReconnecting', dropped);
    });
    const loggedIn = (async () => {
      await this.client.login(this.opts.token);
      await ready;
    })();
    loggedIn.catch(() => {}); // when the gateway failed first, destroying the client rejects it: of no interest
    try {
      await Promise.race([loggedIn, unreachable]);
      this.guild ??= await this.guildOf(this.channels[0]);
      const commands = this.client.application!.commands;
      if (this.opts.guildId) await commands.set(discordCommands(), this.opts.guildId);
      else await commands.set(discordCommands());
    } catch (err) {
      await this.client.destroy(); // the next attempt logs in afresh
      throw err;
    } finally {
      this.client.off('shardReconnecting', dropped);
    }
    this.connected = true;
    this.opts.log.info(
      `discord: connected as ${this.client.user?.tag}; alerts to ${this.channels.join(', ') || 'no channel'}`,
    );
  }

  /**
   * Starts in the background, retrying while Discord is unreachable. A refused token, or a 4xx on
   * registering the commands (a wrong guild, a missing permission), is fatal: retrying cannot help.
   */
  connect(hooks: ConnectHooks): void {
    void warmCardCharts();
    this.connector = keepConnecting({
      platform: 'Discord',
      attempt: async () => {
        await this.start();
        hooks.onUp();
      },
      fatal: (err) => {
        if (isTokenInvalid(err))
          return new UserError('Discord refused DISCORD_TOKEN (invalid token): fix it and start again');
        if (err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          return new UserError(
            `Discord refused rlwatch: ${err.message} (check DISCORD_TOKEN, DISCORD_GUILD_ID and the bot's permissions)`,
          );
        }
        return null;
      },
      onFatal: hooks.onFatal,
      log: this.opts.log,
    });
  }

  /** The server of a channel; undefined when it cannot be looked up (a wrong channel is said on delivery): then
   * the channel check alone decides, channel ids being unique across servers. */
  private async guildOf(channelId: string | undefined): Promise<string | undefined> {
    if (channelId === undefined) return undefined;
    try {
      const channel = await this.client.channels.fetch(channelId);
      return channel && 'guildId' in channel ? channel.guildId : undefined;
    } catch (err) {
      this.opts.log.warn(`discord: cannot look up the server of channel ${channelId}: ${deliveryError(err).message}`);
      return undefined;
    }
  }

  /** logged in, commands registered */
  get ready(): boolean {
    return this.connected;
  }

  async stop(): Promise<void> {
    this.connector?.stop();
    // the charts being attached get a moment to land: their cards are out either way
    await Promise.race([Promise.all(this.charting), sleep(CHARTS_GRACE_MS, undefined, { ref: false })]);
    await this.client.destroy();
  }

  /** resolves once the charts being attached to cards already posted have landed (or failed) */
  async settled(): Promise<void> {
    await Promise.all(this.charting);
  }

  /** One delivery target per channel alerts may be routed to. */
  targets(): Target[] {
    return this.channels.map((channel) => ({
      name: targetName('discord', channel),
      deliver: (n, key, runId, urgency) => this.deliver(channel, n, key, runId, urgency),
      edits: true,
      quiet: quietOf(this.opts.section, channel),
    }));
  }

  private async deliver(
    channelId: string,
    n: Notification,
    key: string,
    runId: number,
    urgency: number,
  ): Promise<void> {
    if (!this.connected) throw new DeliveryError('not connected to Discord yet');
    try {
      const channel = await this.client.channels.fetch(channelId);
      if (!channel?.isSendable()) {
        throw new DeliveryError(
          `discord channel ${channelId} is not a text channel the bot can post in`,
          undefined,
          true,
        );
      }
      const target = targetName('discord', channelId);
      // a card goes out as soon as its numbers are ready, and its delivery ends there: its chart is drawn after and
      // attached by an edit, so neither its push nor its run's next card (maybe critical) waits for a picture
      await deliverCards(
        this.opts.store.chat,
        target,
        n,
        { key, runId },
        {
          edit: async (ref, cards) =>
            void (await channel.messages.edit(
              ref,
              await cardsMessage(cards, 'kept', 0, this.mention(channelId, cards)),
            )),
          post: async (cards) => {
            const message = await cardsMessage(cards, 'later', 0, this.mention(channelId, cards));
            return this.inTurn(channelId, urgency, async () => (await channel.send(message)).id);
          },
          afterPost: async (ref, cards) => void this.charted(this.attachCharts(channel, target, ref, cards, urgency)),
          replyResolved: async (ref, cards) =>
            this.inTurn(channelId, urgency, async () => (await channel.send(resolvedMessage(cards, ref))).id),
        },
      );
    } catch (err) {
      throw deliveryError(err);
    }
  }

  /** The mention of cards posted to a channel (edits keep it while the alert is firing: an edit pings nobody). */
  private mention(channelId: string, cards: readonly AlertCard[]): DiscordMention | null {
    return mentionOf(this.opts.section, channelId, cards);
  }

  /**
   * Runs `post` (a message to `channelId`) when it is its turn: one at a time, the most urgent first. discord.js
   * sends a channel's posts one after another in the order handed to it, so a critical card handed to it behind the
   * cards of four warnings would wait for all four to be answered; here it waits for one at most.
   */
  private inTurn<T>(channelId: string, urgency: number, post: () => Promise<T>): Promise<T> {
    let queue = this.posting.get(channelId);
    if (!queue) this.posting.set(channelId, (queue = new PQueue({ concurrency: 1 })));
    return queue.add(post, { priority: urgency });
  }

  /** Keeps `attaching` until it settles, for `stop`. */
  private charted(attaching: Promise<void>): void {
    this.charting.add(attaching);
    void attaching.finally(() => this.charting.delete(attaching));
  }

  /**
   * The charts of cards posted without them (`later`), attached by an edit of the message, drawn as urgent as the
   * delivery was. A change of the cards recorded meanwhile (an ack, a resolution: their edits keep the charts as
   * posted) is not undone: the message's record is read once the charts are on, and edited once more if it differs.
   * A rate limit is waited out, up to CHART_TRIES tries, the charts drawn once; a failure is logged: the alert is out,
   * and is not posted again for its chart. Never rejects.
   */
  private async attachCharts(
    channel: SendableChannels,
    target: string,
    ref: string,
    posted: readonly AlertCard[],
    urgency: number,
  ): Promise<void> {
    if (!posted.some((c) => c.chart)) return;
    const ids = posted.map((c) => `#${c.alertId}`).join(', ');
    let charted: Awaited<ReturnType<typeof cardsMessage>>;
    try {
      charted = await cardsMessage(posted, 'attach', urgency, this.mention(channel.id, posted));
    } catch (err) {
      return this.opts.log.warn(`discord: chart of alerts ${ids} not drawn: ${(err as Error).message}`);
    }
    let attached = false; // a rate limit met by the edit after it retries that edit alone, not the upload
    for (let tries = 1; ; tries++) {
      try {
        if (!attached) await channel.messages.edit(ref, charted);
        attached = true;
        const now = await shownNow(this.opts.store.chat, target, ref);
        if (now && JSON.stringify(now) !== JSON.stringify(posted)) {
          await channel.messages.edit(ref, await cardsMessage(now, 'kept', 0, this.mention(channel.id, now)));
        }
        return;
      } catch (err) {
        if (err instanceof RateLimitError && tries < CHART_TRIES) {
          await sleep(err.retryAfter);
          continue;
        }
        return this.opts.log.warn(`discord: chart of alerts ${ids} not attached: ${deliveryError(err).message}`);
      }
    }
  }

  private async onInteraction(i: Interaction): Promise<void> {
    try {
      if (i.isAutocomplete()) await this.autocomplete(i);
      else if (i.isChatInputCommand()) await this.command(i);
      else if (i.isButton()) await this.button(i);
    } catch (err) {
      this.opts.log.warn(`discord: interaction failed: ${(err as Error).message}`);
    }
  }

  private allowed(i: ChatInputCommandInteraction | ButtonInteraction): boolean {
    const roles = (i.member as GuildMember | null)?.roles?.cache;
    return mayAct(
      this.opts.section.allow.users,
      this.opts.section.allow.roles,
      i.user.id,
      roles ? [...roles.keys()] : [],
    );
  }

  /** What a command from where `i` comes may do: none from a DM, another server or a channel not taken from. */
  private place(i: Interaction): Place {
    if (!i.inGuild() || (this.guild !== undefined && i.guildId !== this.guild)) return { refused: NOT_HERE };
    return this.places(i.channelId ?? '');
  }

  /** The caller, for the shared interaction path: recorded by username, shown as the guild shows them. */
  private asker(i: ChatInputCommandInteraction | ButtonInteraction): Asker {
    const { store, config, log } = this.opts;
    const user = `@${i.user.username}`;
    const mayWrite = () => this.allowed(i);
    return {
      store,
      config,
      log,
      user,
      userName: shownName(i),
      mayWrite,
      rightsHint: 'discord.allow in rlwatch.yaml',
      ...this.place(i),
    };
  }

  /**
   * Runs `work` (an interaction's answer: store reads, rendering), saying "thinking" (`defer`) when it is not done
   * within DEFER_AFTER_MS, or when it calls `deferNow`: Discord waits 3 s for an interaction's first answer.
   * Whether it deferred says how the answer is then sent.
   */
  private async inTime<T>(
    what: string,
    defer: () => Promise<unknown>,
    work: (deferNow: () => void) => Promise<T>,
  ): Promise<{ value: T; deferred: boolean }> {
    let deferring: Promise<unknown> | undefined;
    const deferNow = (): void =>
      void (deferring ??= defer().catch((err: Error) =>
        this.opts.log.warn(`discord: cannot say "thinking" for ${what}: ${err.message}`),
      ));
    const timer = setTimeout(deferNow, DEFER_AFTER_MS);
    let value: T;
    try {
      value = await work(deferNow);
    } finally {
      clearTimeout(timer);
    }
    await deferring;
    return { value, deferred: deferring !== undefined };
  }

  private async command(i: ChatInputCommandInteraction): Promise<void> {
    const sub = i.options.getSubcommand(false);
    const args: Args = {};
    for (const o of i.options.data.flatMap((d) => (d.options ? [...d.options] : [d]))) {
      if (o.value !== undefined) args[o.name] = o.value;
    }
    // a command that may read a long series says "thinking" at once, any other when it is late
    const {
      value: { answer, message },
      deferred,
    } = await this.inTime(
      `/${i.commandName}`,
      () => i.deferReply(),
      async (deferNow) => {
        const answer = await interact(
          { words: sub ? [i.commandName, sub] : [i.commandName], args },
          this.asker(i),
          async (spec) => {
            if (spec.slow === true) deferNow();
          },
        );
        return { answer, message: answer.ok ? await replyMessage(answer.reply) : undefined };
      },
    );
    if (changedSomething(answer)) this.opts.deliverNow?.();
    if (answer.ok) {
      if (deferred) await i.editReply(message!);
      else await i.reply(message!);
      return;
    }
    const content = cut(answer.message, 2000);
    if (!deferred)
      return void (await i.reply({ content, flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS }));
    // the "thinking" placeholder is public: replace it by a note only the caller sees
    await i.deleteReply();
    await i.followUp({ content, flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS });
  }

  private async autocomplete(i: AutocompleteInteraction): Promise<void> {
    const place = this.place(i);
    if (place.refused !== undefined) return void (await i.respond([]));
    const focused = i.options.getFocused(true);
    const known = await knownNames(this.opts.store, place.seesRun);
    let names: readonly string[] = [];
    if (focused.name === 'run') names = known.runs;
    else if (focused.name === 'metric') {
      const run = i.options.getString('run');
      const row = run && place.seesRun(run) ? await this.opts.store.runs.byName(run) : undefined;
      names = row ? await this.opts.store.points.metricsOf(row.id) : known.metrics;
    }
    const typed = String(focused.value).toLowerCase();
    await i.respond(
      names
        .filter((n) => n.toLowerCase().includes(typed))
        .slice(0, LIMIT.choices)
        .map((n) => ({ name: n, value: n })),
    );
  }

  private async button(i: ButtonInteraction): Promise<void> {
    const request = buttonRequest(i.customId);
    if (!request) return;
    let changed = false;
    try {
      // late, the click is acknowledged first ("deferred update"): the card is then edited through the interaction
      const { value, deferred } = await this.inTime(
        `button ${i.customId}`,
        () => i.deferUpdate(),
        async () => {
          const answer = await interact(request, this.asker(i));
          if (!answer.ok) return { refused: answer.message };
          changed = true;
          // the click changed the alert: its card is captured anew and re-rendered, its chart left as posted; then
          // its other cards (other channels, other platforms) are edited from the outbox
          const cards = await recapture(this.opts.store, targetName('discord', i.channelId), i.message.id);
          return { message: cards ? await cardsMessage(cards, 'kept') : { allowedMentions: NO_MENTIONS } };
        },
      );
      if (value.refused !== undefined) {
        const note = {
          content: cut(value.refused, 2000),
          flags: MessageFlags.Ephemeral,
          allowedMentions: NO_MENTIONS,
        } as const;
        return void (await (deferred ? i.followUp(note) : i.reply(note)));
      }
      await (deferred ? i.editReply(value.message) : i.update(value.message));
    } finally {
      if (changed) this.opts.deliverNow?.();
    }
  }
}
