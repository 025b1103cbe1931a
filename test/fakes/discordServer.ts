/**
 * A local fake of Discord's gateway (v10, JSON encoding, no compression) and REST API, good enough for the
 * REAL discord.js 14 Client to log in, receive READY + GUILD_CREATE, receive INTERACTION_CREATE (slash
 * commands, autocomplete, component clicks) and make the REST calls a bot makes.
 *
 * Everything listens on 127.0.0.1 (one ephemeral port serves REST, the gateway WebSocket and attachment bytes).
 *
 * Configure the client under test like this:
 *
 *   const fake = await startFakeDiscord();
 *   const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl, retries: 0 } });
 *   const ready = once(client, 'clientReady');
 *   await client.login(fake.token);
 *   await ready;
 *   ...
 *   await client.destroy(); // ALWAYS before fake.close()
 *   await fake.close();
 *
 * Why this works (see node_modules, the final word):
 *  - @discordjs/rest builds URLs as `${options.api}/v${options.version}${route}`, so `apiUrl` is
 *    `http://127.0.0.1:PORT/api` and every route here lives under `/api/v10`.
 *  - @discordjs/ws asks REST for `GET /gateway/bot` and connects to `${url}?v=10&encoding=json`
 *    (node_modules/@discordjs/ws/dist/index.js ~line 657). No `compress` param is sent because discord.js only
 *    enables zlib-stream when `zlib-sync` is installed (discord.js/src/client/websocket/WebSocketManager.js:160),
 *    and it is not, so frames are plain JSON text.
 *  - discord.js' client only becomes ready after READY *and* a GUILD_CREATE for every guild listed as
 *    unavailable in READY (discord.js/src/client/websocket/WebSocketShard.js:134-200), otherwise it waits
 *    `waitGuildTimeout` (15 s).
 *  - BaseInteraction's constructor calls `data.entitlements.reduce(...)` and
 *    `new AuthorizingIntegrationOwners(client, data.authorizing_integration_owners)` unguarded
 *    (discord.js/src/structures/BaseInteraction.js), so INTERACTION_CREATE must carry both or the event throws.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket } from 'ws';

// ---------------------------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------------------------

/** Loose JSON object: the fake stores what discord.js sends without narrowing it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

export interface FakeUser {
  id: string;
  username: string;
  globalName?: string | null;
  /** The member's nickname in the guild (sent as the interaction member's `nick`). */
  nick?: string | null;
  /** Guild-level permissions bitfield of the member (string of a bigint). Default: everyone's permissions. */
  permissions?: string;
}

export interface RecordedFile {
  /** Multipart field name, e.g. `files[0]`. */
  field: string;
  /** File name as sent by the client, e.g. `chart.png`. */
  name: string;
  contentType: string;
  data: Buffer;
}

export interface RecordedRequest {
  method: string;
  /** Path without the `/api/v10` prefix and without the query, percent-decoded (`%40original` → `@original`). */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or the parsed `payload_json` field for multipart bodies, or null. */
  body: Json | Json[] | null;
  files: RecordedFile[];
  multipart: boolean;
  /** HTTP status the fake answered with. */
  status: number;
  at: number;
}

export interface FakeAttachment {
  id: string;
  filename: string;
  contentType: string;
  size: number;
  /** Served by the fake at this URL (127.0.0.1). */
  url: string;
  description?: string;
  data: Buffer;
}

export interface FakeMessage {
  id: string;
  channelId: string;
  content: string;
  embeds: Json[];
  components: Json[];
  attachments: FakeAttachment[];
  flags: number;
  /** Discord message type: 0 default, 20 chat-input command reply. */
  type: number;
  authorId: string;
  /** Set for messages created through an interaction (reply, deferred reply, follow-up). */
  interactionId: string | null;
  webhookId: string | null;
  createdAt: number;
  editedAt: number | null;
  /** Number of edits applied so far (PATCH, interaction type 7, webhook edits). */
  editCount: number;
  /** The message this one replies to (`message_reference` on create; the message is then type 19, REPLY). */
  replyTo: string | null;
}

export interface RegisteredCommand extends Json {
  id: string;
  application_id: string;
  /** null for global commands. */
  guild_id: string | null;
  name: string;
  type: number;
  version: string;
}

export interface RecordedCallback {
  /** Interaction callback type: 4 reply, 5 deferred reply, 6 deferred update, 7 update, 8 autocomplete, 9 modal. */
  type: number;
  data: Json | null;
  files: RecordedFile[];
  withResponse: boolean;
  at: number;
}

export interface RecordedWebhookCall {
  /** Message id the call targeted (the resolved @original id for `@original`). */
  messageId: string;
  body: Json | null;
  files: RecordedFile[];
  at: number;
}

export interface FakeInteraction {
  id: string;
  token: string;
  /** Interaction type: 2 application command, 3 message component, 4 autocomplete. */
  type: 2 | 3 | 4;
  user: FakeUser;
  roles: string[];
  /** The INTERACTION_CREATE payload that was dispatched. */
  payload: Json;
  callback: RecordedCallback | null;
  /** PATCH /webhooks/{app}/{token}/messages/{@original|id} bodies, in order. */
  edits: RecordedWebhookCall[];
  /** POST /webhooks/{app}/{token} follow-ups, in order. */
  followUps: RecordedWebhookCall[];
  /** Id of the message `@original` refers to (reply / deferred placeholder / clicked message), once known. */
  originalMessageId: string | null;
  originalDeleted: boolean;
  /** Autocomplete result (callback type 8). */
  choices: Json[] | null;
}

export type CommandOptionValue = string | number | boolean;

export interface CommandOptionSpec {
  name: string;
  /** ApplicationCommandOptionType; inferred from the registered command or from the JS type when omitted. */
  type?: number;
  value: CommandOptionValue;
}

export type CommandOptions = Record<string, CommandOptionValue> | CommandOptionSpec[];

/** Where an interaction comes from: by default the fake's channel in its guild. `dm`: the bot's DM with the user;
 * `channelId` another channel (of the fake's guild unless `guildId` names another server). */
export type InteractionPlace = 'dm' | { channelId?: string; guildId?: string };

export interface CommandSpec {
  name: string;
  where?: InteractionPlace;
  subcommand?: string;
  /** Subcommand group name (requires `subcommand`). */
  group?: string;
  options?: CommandOptions;
  user: FakeUser;
  /** Role ids or role names. Unknown names/ids are created in the guild first (GUILD_ROLE_CREATE). */
  roles?: string[];
  /** How long to wait for the bot's interaction callback. Default 5000 ms. */
  timeoutMs?: number;
}

export interface AutocompleteSpec {
  name: string;
  where?: InteractionPlace;
  subcommand?: string;
  group?: string;
  focused: { name: string; value: string | number };
  options?: CommandOptions;
  user: FakeUser;
  roles?: string[];
  timeoutMs?: number;
}

export interface ClickSpec {
  customId: string;
  where?: InteractionPlace;
  messageId: string;
  user: FakeUser;
  roles?: string[];
  /** For select menus: the selected values. */
  values?: string[];
  /** Real Discord does not let users click disabled components; the fake throws unless this is set. */
  allowDisabled?: boolean;
  timeoutMs?: number;
}

export type FailSpec =
  | { status: 429; retryAfter?: number; global?: boolean }
  | { status: number; code?: number; message?: string };

export interface FakeRole {
  id: string;
  name: string;
  permissions: string;
}

export interface FakeDiscordOptions {
  guildId?: string;
  guildName?: string;
  channelId?: string;
  channelName?: string;
  botUserId?: string;
  botUsername?: string;
  token?: string;
  /** Extra guild roles included in GUILD_CREATE (besides @everyone). */
  roles?: Array<{ id?: string; name: string; permissions?: string }>;
  /** Gateway HELLO heartbeat_interval. Default 41250 ms (the client jitters its first beat inside it). */
  heartbeatIntervalMs?: number;
  /** Log gateway/REST traffic to stderr. */
  debug?: boolean;
  /** Listen on this port (e.g. one rlwatch was pointed at before the fake came up); default: ephemeral. */
  port?: number;
  /** What GET /gateway/bot answers instead of the fake's own gateway (e.g. a closed port). */
  gatewayUrl?: string;
  /** The channel's `permission_overwrites` (e.g. one denying @everyone, id = the guild's, Embed Links). */
  overwrites?: Json[];
}

export interface FakeDiscord {
  /** `http://127.0.0.1:PORT/api` — pass as `rest: { api }` to the discord.js Client. */
  readonly apiUrl: string;
  /** `ws://127.0.0.1:PORT` — what GET /gateway/bot returns. */
  readonly gatewayUrl: string;
  readonly port: number;
  readonly token: string;
  readonly applicationId: string;
  readonly guildId: string;
  readonly channelId: string;
  readonly botUserId: string;
  /** Every REST request, in arrival order (including failed / injected-failure ones). */
  readonly requests: RecordedRequest[];
  /** Current view of every message, keyed by id (edits applied, deletions removed). */
  readonly messages: Map<string, FakeMessage>;
  /** Registered application commands (bulk overwrites replace a scope: global or one guild). */
  readonly commands: RegisteredCommand[];
  readonly interactions: Map<string, FakeInteraction>;
  readonly roles: FakeRole[];
  /** IDENTIFY payloads received on the gateway. */
  readonly identifies: Json[];
  /** Heartbeats (op 1) received and acknowledged (op 11). */
  readonly heartbeats: number;

  command(spec: CommandSpec): Promise<FakeInteraction>;
  autocomplete(spec: AutocompleteSpec): Promise<Json[]>;
  click(spec: ClickSpec): Promise<FakeInteraction>;
  /** The next request matching (and `matches`, if given) fails as `spec` says. */
  failNext(method: string, pathRegex: RegExp, spec: FailSpec, matches?: (r: RecordedRequest) => boolean): void;
  /** The next request matching (and `matches`, if given) is recorded on arrival, and applied and answered only once
   * `release()` is called: a request slow on its way, for what happens meanwhile. */
  holdNext(
    method: string,
    pathRegex: RegExp,
    matches?: (r: RecordedRequest) => boolean,
  ): { arrived: Promise<RecordedRequest>; release(): void };
  setDown(down: boolean): void;
  /** Every request to a channel (posts, edits) is answered 429 until `until` (ms since the epoch), its retry_after
   * the time left: a channel's rate limit held for a while, as a storm meets it. */
  rateLimitChannelsUntil(until: number): void;
  waitFor<T>(predicate: () => T | null | undefined | false, timeoutMs?: number): Promise<T>;
  /** Send a raw gateway dispatch (op 0) to every identified connection. */
  dispatch(t: string, d: unknown): void;
  /** Messages in a channel (default: the fake's text channel), oldest first. */
  channelMessages(channelId?: string): FakeMessage[];
  /** Requests matching a method and path regex. */
  requestsTo(method: string, pathRegex: RegExp): RecordedRequest[];
  /** The API message object (what REST returns) for a stored message. */
  apiMessage(id: string): Json;
  /** Resolves a role id or name to a role, creating it (and dispatching GUILD_ROLE_CREATE) if unknown. */
  ensureRole(idOrName: string): FakeRole;
  /** Number of open gateway connections that completed IDENTIFY. */
  readonly connectedClients: number;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

const DISCORD_EPOCH = 1420070400000n;
let snowflakeSeq = 0n;
let lastSnowflakeMs = 0n;

/** Monotonic snowflakes (timestamp-encoded so discord.js' createdTimestamp is sane). */
export function snowflake(): string {
  let ms = BigInt(Date.now());
  if (ms <= lastSnowflakeMs) ms = lastSnowflakeMs;
  if (ms !== lastSnowflakeMs) snowflakeSeq = 0n;
  lastSnowflakeMs = ms;
  snowflakeSeq = (snowflakeSeq + 1n) & 0xfffn;
  if (snowflakeSeq === 0n) lastSnowflakeMs += 1n;
  return (((lastSnowflakeMs - DISCORD_EPOCH) << 22n) | (1n << 17n) | snowflakeSeq).toString();
}

const ALL_PERMISSIONS = ((1n << 51n) - 1n).toString();
// View channel, send messages, embed links, attach files, read history, use application commands, etc.
const EVERYONE_PERMISSIONS = '2248473465835073';

const CALLBACK = {
  Pong: 1,
  ChannelMessageWithSource: 4,
  DeferredChannelMessageWithSource: 5,
  DeferredMessageUpdate: 6,
  UpdateMessage: 7,
  AutocompleteResult: 8,
  Modal: 9,
} as const;

const MESSAGE_FLAG_EPHEMERAL = 64;
const MESSAGE_FLAG_LOADING = 128;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function parseBody(
  req: IncomingMessage,
  raw: Buffer,
): Promise<{ body: Json | Json[] | null; files: RecordedFile[]; multipart: boolean }> {
  const ct = String(req.headers['content-type'] ?? '');
  if (raw.length === 0) return { body: null, files: [], multipart: false };
  if (ct.startsWith('multipart/form-data')) {
    // Node's fetch Response knows how to parse multipart/form-data.
    const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': ct } }).formData();
    let body: Json | Json[] | null = null;
    const files: RecordedFile[] = [];
    for (const [field, value] of form.entries()) {
      if (typeof value === 'string') {
        if (field === 'payload_json') body = JSON.parse(value) as Json;
      } else {
        files.push({
          field,
          name: value.name,
          contentType: value.type,
          data: Buffer.from(await value.arrayBuffer()),
        });
      }
    }
    return { body, files, multipart: true };
  }
  const text = raw.toString('utf8');
  try {
    return { body: JSON.parse(text) as Json, files: [], multipart: false };
  } catch {
    return { body: { _raw: text }, files: [], multipart: false };
  }
}

function findComponent(components: Json[], customId: string): Json | undefined {
  for (const c of components) {
    if (c && typeof c === 'object') {
      if (c.custom_id === customId) return c;
      for (const key of ['components', 'accessory', 'component']) {
        const child = c[key];
        const list = Array.isArray(child) ? child : child ? [child] : [];
        const found = findComponent(list as Json[], customId);
        if (found) return found;
      }
    }
  }
  return undefined;
}

function inferOptionType(v: CommandOptionValue): number {
  if (typeof v === 'boolean') return 5;
  if (typeof v === 'number') return Number.isInteger(v) ? 4 : 10;
  return 3;
}

// ---------------------------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------------------------

interface GatewayConn {
  ws: WebSocket;
  seq: number;
  identified: boolean;
  sessionId: string | null;
}

/** Which request a `failNext` or `holdNext` is for: the first to match after it was set, once. */
interface RequestRule {
  method: string;
  re: RegExp;
  matches: (r: RecordedRequest) => boolean;
}

interface FailRule extends RequestRule {
  spec: FailSpec;
}

interface HoldRule extends RequestRule {
  arrived(r: RecordedRequest): void;
  released: Promise<void>;
}

/** Takes out of `rules` the first one for `rec`, if any. */
function ruleFor<R extends RequestRule>(rules: R[], rec: RecordedRequest): R | undefined {
  const k = rules.findIndex((r) => r.method === rec.method && r.re.test(rec.path) && r.matches(rec));
  return k === -1 ? undefined : rules.splice(k, 1)[0];
}

interface Pending {
  resolve: (i: FakeInteraction) => void;
}

class FakeDiscordImpl implements FakeDiscord {
  apiUrl = '';
  gatewayUrl = '';
  port = 0;
  readonly token: string;
  readonly applicationId: string;
  readonly guildId: string;
  readonly channelId: string;
  readonly botUserId: string;
  readonly requests: RecordedRequest[] = [];
  readonly messages = new Map<string, FakeMessage>();
  commands: RegisteredCommand[] = [];
  readonly interactions = new Map<string, FakeInteraction>();
  readonly roles: FakeRole[] = [];
  readonly identifies: Json[] = [];
  heartbeats = 0;

  private readonly byToken = new Map<string, FakeInteraction>();
  private readonly pending = new Map<string, Pending>();
  private readonly conns = new Set<GatewayConn>();
  private readonly failRules: FailRule[] = [];
  private readonly holdRules: HoldRule[] = [];
  private down = false;
  private channelsLimitedUntil = 0;
  private closed = false;
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  private readonly opts: FakeDiscordOptions;
  private readonly guildName: string;
  private readonly channelName: string;
  private readonly botUsername: string;
  private readonly startedAt = new Date().toISOString();

  constructor(opts: FakeDiscordOptions) {
    this.opts = opts;
    this.botUserId = opts.botUserId ?? snowflake();
    this.applicationId = this.botUserId; // like real bots created after 2020
    this.guildId = opts.guildId ?? snowflake();
    this.channelId = opts.channelId ?? snowflake();
    this.guildName = opts.guildName ?? 'rlwatch-test';
    this.channelName = opts.channelName ?? 'alerts';
    this.botUsername = opts.botUsername ?? 'rlwatch-bot';
    this.token =
      opts.token ??
      `${Buffer.from(this.botUserId).toString('base64url')}.${randomBytes(4).toString('base64url')}.${randomBytes(
        20,
      ).toString('base64url')}`;
    for (const r of opts.roles ?? []) {
      this.roles.push({ id: r.id ?? snowflake(), name: r.name, permissions: r.permissions ?? EVERYONE_PERMISSIONS });
    }
    this.http = createServer((req, res) => {
      // a client that goes away mid-request (a bot process killed while uploading) is nobody's error
      this.onHttp(req, res).catch((e: unknown) => {
        this.log('request dropped', e);
        res.destroy();
      });
    });
    this.wss = new WebSocketServer({ server: this.http });
    this.wss.on('connection', (ws) => this.onConnection(ws));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.opts.port ?? 0, '127.0.0.1', () => {
        this.http.off('error', reject);
        resolve();
      });
    });
    this.port = (this.http.address() as AddressInfo).port;
    this.apiUrl = `http://127.0.0.1:${this.port}/api`;
    this.gatewayUrl = this.opts.gatewayUrl ?? `ws://127.0.0.1:${this.port}`;
  }

  get connectedClients(): number {
    let n = 0;
    for (const c of this.conns) if (c.identified && c.ws.readyState === WebSocket.OPEN) n++;
    return n;
  }

  private log(...args: unknown[]): void {
    if (this.opts.debug) console.error('[fake-discord]', ...args);
  }

  // ------------------------------------------------------------------------------------------------ objects

  private botUser(): Json {
    return {
      id: this.botUserId,
      username: this.botUsername,
      discriminator: '0000',
      global_name: null,
      avatar: null,
      bot: true,
      system: false,
      mfa_enabled: false,
      verified: true,
      flags: 0,
      public_flags: 0,
      email: null,
    };
  }

  private apiUser(u: FakeUser): Json {
    return {
      id: u.id,
      username: u.username,
      discriminator: '0',
      global_name: u.globalName ?? null,
      avatar: null,
      public_flags: 0,
    };
  }

  private apiChannel(): Json {
    return {
      id: this.channelId,
      type: 0,
      guild_id: this.guildId,
      name: this.channelName,
      position: 0,
      permission_overwrites: this.opts.overwrites ?? [],
      parent_id: null,
      topic: null,
      nsfw: false,
      last_message_id: null,
      rate_limit_per_user: 0,
      flags: 0,
    };
  }

  private apiRole(r: FakeRole, position: number): Json {
    return {
      id: r.id,
      name: r.name,
      color: 0,
      colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
      hoist: false,
      icon: null,
      unicode_emoji: null,
      position,
      permissions: r.permissions,
      managed: false,
      mentionable: false,
      flags: 0,
    };
  }

  private apiGuild(): Json {
    const everyone: FakeRole = { id: this.guildId, name: '@everyone', permissions: EVERYONE_PERMISSIONS };
    return {
      id: this.guildId,
      name: this.guildName,
      icon: null,
      splash: null,
      discovery_splash: null,
      owner_id: snowflake(),
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      roles: [this.apiRole(everyone, 0), ...this.roles.map((r, i) => this.apiRole(r, i + 1))],
      emojis: [],
      stickers: [],
      features: [],
      mfa_level: 0,
      application_id: null,
      system_channel_id: null,
      system_channel_flags: 0,
      rules_channel_id: null,
      vanity_url_code: null,
      description: null,
      banner: null,
      premium_tier: 0,
      premium_subscription_count: 0,
      preferred_locale: 'en-US',
      public_updates_channel_id: null,
      safety_alerts_channel_id: null,
      nsfw_level: 0,
      premium_progress_bar_enabled: false,
      // GUILD_CREATE extras
      joined_at: this.startedAt,
      large: false,
      unavailable: false,
      member_count: 2,
      voice_states: [],
      members: [
        {
          user: this.botUser(),
          nick: null,
          avatar: null,
          roles: [],
          joined_at: this.startedAt,
          premium_since: null,
          deaf: false,
          mute: false,
          flags: 0,
          pending: false,
        },
      ],
      channels: [this.apiChannel()],
      threads: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
    };
  }

  private application(): Json {
    return {
      id: this.applicationId,
      name: this.botUsername,
      icon: null,
      description: '',
      bot_public: false,
      bot_require_code_grant: false,
      bot: this.botUser(),
      owner: { id: snowflake(), username: 'owner', discriminator: '0', global_name: null, avatar: null },
      team: null,
      verify_key: randomBytes(32).toString('hex'),
      flags: 0,
      tags: [],
      install_params: null,
      integration_types_config: { '0': {} },
    };
  }

  apiMessage(id: string): Json {
    const m = this.messages.get(id);
    if (!m) throw new HttpError(404, 10008, 'Unknown Message');
    return this.toApiMessage(m);
  }

  private toApiMessage(m: FakeMessage): Json {
    const out: Json = {
      id: m.id,
      type: m.type,
      channel_id: m.channelId,
      guild_id: this.guildId,
      author: this.botUser(),
      content: m.content,
      timestamp: new Date(m.createdAt).toISOString(),
      edited_timestamp: m.editedAt === null ? null : new Date(m.editedAt).toISOString(),
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      mention_channels: [],
      attachments: m.attachments.map((a) => ({
        id: a.id,
        filename: a.filename,
        size: a.size,
        url: a.url,
        proxy_url: a.url,
        content_type: a.contentType,
        ...(a.description !== undefined ? { description: a.description } : {}),
      })),
      embeds: m.embeds,
      components: m.components,
      reactions: [],
      pinned: false,
      flags: m.flags,
    };
    if (m.replyTo) {
      out.message_reference = { type: 0, message_id: m.replyTo, channel_id: m.channelId, guild_id: this.guildId };
      const replied = this.messages.get(m.replyTo);
      out.referenced_message = replied ? this.toApiMessage(replied) : null;
    }
    if (m.webhookId) {
      out.webhook_id = m.webhookId;
      out.application_id = this.applicationId;
    }
    if (m.interactionId) {
      const i = this.interactions.get(m.interactionId);
      if (i) {
        out.interaction_metadata = {
          id: i.id,
          type: i.type,
          user: this.apiUser(i.user),
          authorizing_integration_owners: { '0': this.guildId },
        };
      }
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------------ messages

  private makeAttachments(channelId: string, body: Json | null, files: RecordedFile[]): FakeAttachment[] {
    const meta: Json[] = Array.isArray(body?.attachments) ? (body.attachments as Json[]) : [];
    return files.map((f, index) => {
      const m = meta.find((a) => String(a.id) === String(index));
      const id = snowflake();
      return {
        id,
        filename: f.name,
        contentType: f.contentType || 'application/octet-stream',
        size: f.data.length,
        url: `http://127.0.0.1:${this.port}/attachments/${channelId}/${id}/${encodeURIComponent(f.name)}`,
        ...(typeof m?.description === 'string' ? { description: m.description } : {}),
        data: f.data,
      };
    });
  }

  private createMessage(
    channelId: string,
    body: Json | null,
    files: RecordedFile[],
    extra: { type?: number; interactionId?: string; webhook?: boolean; flags?: number; replyTo?: string } = {},
  ): FakeMessage {
    const now = Date.now();
    const msg: FakeMessage = {
      id: snowflake(),
      channelId,
      content: typeof body?.content === 'string' ? body.content : '',
      embeds: Array.isArray(body?.embeds) ? (body.embeds as Json[]) : [],
      components: Array.isArray(body?.components) ? (body.components as Json[]) : [],
      attachments: this.makeAttachments(channelId, body, files),
      flags: extra.flags ?? (typeof body?.flags === 'number' ? body.flags : 0),
      type: extra.type ?? 0,
      authorId: this.botUserId,
      interactionId: extra.interactionId ?? null,
      webhookId: extra.webhook ? this.applicationId : null,
      createdAt: now,
      editedAt: null,
      editCount: 0,
      replyTo: extra.replyTo ?? null,
    };
    this.messages.set(msg.id, msg);
    return msg;
  }

  private editMessage(msg: FakeMessage, body: Json | null, files: RecordedFile[]): FakeMessage {
    const b = body ?? {};
    if ('content' in b && b.content !== undefined) msg.content = b.content === null ? '' : String(b.content);
    if ('embeds' in b && b.embeds !== undefined) msg.embeds = Array.isArray(b.embeds) ? (b.embeds as Json[]) : [];
    if ('components' in b && b.components !== undefined) {
      msg.components = Array.isArray(b.components) ? (b.components as Json[]) : [];
    }
    if ('flags' in b && typeof b.flags === 'number') {
      // Only SUPPRESS_EMBEDS etc. can change; keep ephemeral as it was.
      msg.flags = (b.flags & ~MESSAGE_FLAG_EPHEMERAL) | (msg.flags & MESSAGE_FLAG_EPHEMERAL);
    }
    if (Array.isArray(b.attachments)) {
      const keep = new Set((b.attachments as Json[]).map((a) => String(a.id)));
      msg.attachments = msg.attachments.filter((a) => keep.has(a.id));
    }
    if (files.length) msg.attachments.push(...this.makeAttachments(msg.channelId, body, files));
    msg.flags &= ~MESSAGE_FLAG_LOADING;
    msg.editedAt = Date.now();
    msg.editCount++;
    return msg;
  }

  channelMessages(channelId: string = this.channelId): FakeMessage[] {
    return [...this.messages.values()].filter((m) => m.channelId === channelId);
  }

  requestsTo(method: string, pathRegex: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method.toUpperCase() && pathRegex.test(r.path));
  }

  // ------------------------------------------------------------------------------------------------ gateway

  private onConnection(ws: WebSocket): void {
    if (this.closed) {
      ws.terminate();
      return;
    }
    const conn: GatewayConn = { ws, seq: 0, identified: false, sessionId: null };
    this.conns.add(conn);
    this.log('gateway connection');
    ws.on('close', () => this.conns.delete(conn));
    ws.on('error', () => this.conns.delete(conn));
    ws.on('message', (data) => {
      let payload: Json;
      try {
        payload = JSON.parse(String(data)) as Json;
      } catch {
        ws.close(4002, 'Error while decoding payload.');
        return;
      }
      this.onGatewayPayload(conn, payload);
    });
    this.sendOp(conn, { op: 10, d: { heartbeat_interval: this.opts.heartbeatIntervalMs ?? 41250 }, s: null, t: null });
  }

  private sendOp(conn: GatewayConn, payload: Json): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    this.log('gateway ->', payload.op, payload.t ?? '');
    conn.ws.send(JSON.stringify(payload));
  }

  private sendDispatch(conn: GatewayConn, t: string, d: unknown): void {
    conn.seq += 1;
    this.sendOp(conn, { op: 0, t, s: conn.seq, d });
  }

  private onGatewayPayload(conn: GatewayConn, p: Json): void {
    this.log('gateway <-', p.op);
    switch (p.op) {
      case 1: // heartbeat
        this.heartbeats++;
        this.sendOp(conn, { op: 11, d: null, s: null, t: null });
        break;
      case 2: {
        // identify
        const d = (p.d ?? {}) as Json;
        this.identifies.push(d);
        if (d.token !== this.token) {
          conn.ws.close(4004, 'Authentication failed.');
          return;
        }
        if (conn.identified) {
          conn.ws.close(4005, 'Already authenticated.');
          return;
        }
        conn.identified = true;
        conn.sessionId = randomBytes(16).toString('hex');
        this.sendDispatch(conn, 'READY', {
          v: 10,
          user: this.botUser(),
          guilds: [{ id: this.guildId, unavailable: true }],
          session_id: conn.sessionId,
          resume_gateway_url: this.gatewayUrl,
          shard: Array.isArray(d.shard) ? d.shard : [0, 1],
          application: { id: this.applicationId, flags: 0 },
          private_channels: [],
          presences: [],
          relationships: [],
          _trace: ['["fake-discord",{"micros":0}]'],
        });
        this.sendDispatch(conn, 'GUILD_CREATE', this.apiGuild());
        break;
      }
      case 6: {
        // resume: accept it (the fake keeps no event backlog)
        const d = (p.d ?? {}) as Json;
        if (d.token !== this.token) {
          conn.ws.close(4004, 'Authentication failed.');
          return;
        }
        conn.identified = true;
        conn.sessionId = String(d.session_id ?? randomBytes(16).toString('hex'));
        conn.seq = typeof d.seq === 'number' ? d.seq : conn.seq;
        this.sendDispatch(conn, 'RESUMED', { _trace: [] });
        break;
      }
      default:
        // op 3 presence update, op 4 voice state, op 8 request guild members: accepted and ignored.
        break;
    }
  }

  dispatch(t: string, d: unknown): void {
    for (const c of this.conns) if (c.identified) this.sendDispatch(c, t, d);
  }

  // ------------------------------------------------------------------------------------------------ roles

  ensureRole(idOrName: string): FakeRole {
    if (idOrName === this.guildId || idOrName === '@everyone') {
      return { id: this.guildId, name: '@everyone', permissions: EVERYONE_PERMISSIONS };
    }
    const found = this.roles.find((r) => r.id === idOrName || r.name === idOrName);
    if (found) return found;
    const isId = /^\d{15,22}$/.test(idOrName);
    const role: FakeRole = {
      id: isId ? idOrName : snowflake(),
      name: isId ? `role-${idOrName}` : idOrName,
      permissions: EVERYONE_PERMISSIONS,
    };
    this.roles.push(role);
    this.dispatch('GUILD_ROLE_CREATE', { guild_id: this.guildId, role: this.apiRole(role, this.roles.length) });
    return role;
  }

  // ------------------------------------------------------------------------------------------------ interactions

  private findCommandDef(name: string): Json | undefined {
    return (
      this.commands.find((c) => c.name === name && c.guild_id === this.guildId) ??
      this.commands.find((c) => c.name === name && c.guild_id === null)
    );
  }

  private buildOptions(
    def: Json | undefined,
    spec: { subcommand?: string; group?: string; options?: CommandOptions },
    focused?: { name: string; value: string | number },
  ): Json[] {
    // Option definitions at the level where the leaf options live.
    let defs: Json[] = Array.isArray(def?.options) ? (def.options as Json[]) : [];
    if (spec.group) {
      const g = defs.find((o) => o.name === spec.group && o.type === 2);
      defs = Array.isArray(g?.options) ? (g.options as Json[]) : [];
    }
    if (spec.subcommand) {
      const s = defs.find((o) => o.name === spec.subcommand && o.type === 1);
      defs = Array.isArray(s?.options) ? (s.options as Json[]) : [];
    }
    const specs: CommandOptionSpec[] = Array.isArray(spec.options)
      ? spec.options
      : Object.entries(spec.options ?? {}).map(([name, value]) => ({ name, value }));
    const leaf: Json[] = specs.map((o) => ({
      name: o.name,
      type: o.type ?? (defs.find((d) => d.name === o.name)?.type as number | undefined) ?? inferOptionType(o.value),
      value: o.value,
    }));
    if (focused) {
      const existing = leaf.find((o) => o.name === focused.name);
      const type =
        (defs.find((d) => d.name === focused.name)?.type as number | undefined) ??
        (typeof focused.value === 'number' ? inferOptionType(focused.value) : 3);
      if (existing) {
        existing.value = focused.value;
        existing.focused = true;
      } else {
        leaf.push({ name: focused.name, type, value: focused.value, focused: true });
      }
    }
    let options = leaf;
    if (spec.subcommand) options = [{ name: spec.subcommand, type: 1, options }];
    if (spec.group) options = [{ name: spec.group, type: 2, options }];
    return options;
  }

  private baseInteraction(
    type: 2 | 3 | 4,
    user: FakeUser,
    roleIds: string[],
    data: Json,
    where?: InteractionPlace,
  ): Json {
    const inGuild = this.baseInGuild(type, user, roleIds, data);
    if (where === undefined) return inGuild;
    if (where === 'dm') {
      // as Discord sends it from a DM: no guild, no member, the user at the top level, context 1 (BotDM)
      const { guild_id: _g, guild: _gd, member: _m, app_permissions: _p, guild_locale: _l, ...rest } = inGuild;
      const channel = { id: snowflake(), type: 1, last_message_id: null, flags: 0, recipients: [this.apiUser(user)] };
      return {
        ...rest,
        user: this.apiUser(user),
        channel_id: channel.id,
        channel,
        context: 1,
        authorizing_integration_owners: { '1': user.id },
      };
    }
    const guildId = where.guildId ?? this.guildId;
    const channel = { ...this.apiChannel(), id: where.channelId ?? snowflake(), guild_id: guildId, name: 'elsewhere' };
    return {
      ...inGuild,
      guild_id: guildId,
      guild: { id: guildId, locale: 'en-US', features: [] },
      channel_id: channel.id,
      channel,
      authorizing_integration_owners: { '0': guildId },
    };
  }

  private baseInGuild(type: 2 | 3 | 4, user: FakeUser, roleIds: string[], data: Json): Json {
    return {
      id: snowflake(),
      application_id: this.applicationId,
      type,
      token: `fake-itoken-${randomBytes(24).toString('base64url')}`,
      version: 1,
      data,
      guild_id: this.guildId,
      guild: { id: this.guildId, locale: 'en-US', features: [] },
      channel_id: this.channelId,
      channel: this.apiChannel(),
      member: {
        user: this.apiUser(user),
        roles: roleIds,
        nick: user.nick ?? null,
        avatar: null,
        premium_since: null,
        joined_at: this.startedAt,
        permissions: user.permissions ?? EVERYONE_PERMISSIONS,
        pending: false,
        deaf: false,
        mute: false,
        flags: 0,
        communication_disabled_until: null,
      },
      app_permissions: ALL_PERMISSIONS,
      locale: 'en-US',
      guild_locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': this.guildId },
      context: 0,
      attachment_size_limit: 26214400,
    };
  }

  private send(
    type: 2 | 3 | 4,
    user: FakeUser,
    roles: string[] | undefined,
    data: Json,
    extra: Json,
    timeoutMs: number,
    label: string,
    where?: InteractionPlace,
  ): Promise<FakeInteraction> {
    if (this.connectedClients === 0) {
      return Promise.reject(new Error(`fake-discord: no identified gateway client to send ${label} to`));
    }
    const roleIds = (roles ?? []).map((r) => this.ensureRole(r).id);
    const payload = { ...this.baseInteraction(type, user, roleIds, data, where), ...extra };
    const rec: FakeInteraction = {
      id: String(payload.id),
      token: String(payload.token),
      type,
      user,
      roles: roleIds,
      payload,
      callback: null,
      edits: [],
      followUps: [],
      originalMessageId: type === 3 ? String((extra.message as Json).id) : null,
      originalDeleted: false,
      choices: null,
    };
    this.interactions.set(rec.id, rec);
    this.byToken.set(rec.token, rec);
    return new Promise<FakeInteraction>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(rec.id);
        reject(new Error(`fake-discord: the bot did not answer ${label} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(rec.id, {
        resolve: (i) => {
          clearTimeout(timer);
          this.pending.delete(rec.id);
          resolve(i);
        },
      });
      this.dispatch('INTERACTION_CREATE', payload);
    });
  }

  command(spec: CommandSpec): Promise<FakeInteraction> {
    const def = this.findCommandDef(spec.name);
    const data: Json = {
      id: def?.id ?? snowflake(),
      name: spec.name,
      type: 1,
      options: this.buildOptions(def, spec),
    };
    if (def?.guild_id) data.guild_id = def.guild_id;
    const label = `/${[spec.name, spec.group, spec.subcommand].filter(Boolean).join(' ')}`;
    return this.send(2, spec.user, spec.roles, data, {}, spec.timeoutMs ?? 5000, `command ${label}`, spec.where);
  }

  async autocomplete(spec: AutocompleteSpec): Promise<Json[]> {
    const def = this.findCommandDef(spec.name);
    const data: Json = {
      id: def?.id ?? snowflake(),
      name: spec.name,
      type: 1,
      options: this.buildOptions(def, spec, spec.focused),
    };
    if (def?.guild_id) data.guild_id = def.guild_id;
    const rec = await this.send(
      4,
      spec.user,
      spec.roles,
      data,
      {},
      spec.timeoutMs ?? 5000,
      `autocomplete /${spec.name} ${spec.focused.name}`,
      spec.where,
    );
    return rec.choices ?? [];
  }

  click(spec: ClickSpec): Promise<FakeInteraction> {
    const msg = this.messages.get(spec.messageId);
    if (!msg) return Promise.reject(new Error(`fake-discord: click on unknown message ${spec.messageId}`));
    const component = findComponent(msg.components, spec.customId);
    if (!component) {
      return Promise.reject(
        new Error(`fake-discord: message ${spec.messageId} has no component with custom_id ${spec.customId}`),
      );
    }
    if (component.disabled && !spec.allowDisabled) {
      return Promise.reject(new Error(`fake-discord: component ${spec.customId} is disabled`));
    }
    const data: Json = { custom_id: spec.customId, component_type: Number(component.type ?? 2) };
    if (spec.values) data.values = spec.values;
    return this.send(
      3,
      spec.user,
      spec.roles,
      data,
      { message: this.toApiMessage(msg) },
      spec.timeoutMs ?? 5000,
      `click ${spec.customId}`,
      spec.where,
    );
  }

  private interactionByIdToken(id: string, token: string): FakeInteraction {
    const rec = this.interactions.get(id);
    if (!rec || rec.token !== token) throw new HttpError(404, 10062, 'Unknown interaction');
    return rec;
  }

  private onCallback(
    rec: FakeInteraction,
    body: Json | null,
    files: RecordedFile[],
    withResponse: boolean,
  ): { status: number; json?: Json } {
    if (rec.callback) throw new HttpError(400, 40060, 'Interaction has already been acknowledged.');
    const type = Number(body?.type);
    const data = (body?.data ?? null) as Json | null;
    rec.callback = { type, data, files, withResponse, at: Date.now() };
    let message: FakeMessage | undefined;
    switch (type) {
      case CALLBACK.ChannelMessageWithSource:
        message = this.createMessage(this.channelId, data, files, {
          type: rec.type === 2 ? 20 : 0,
          interactionId: rec.id,
          webhook: true,
        });
        rec.originalMessageId = message.id;
        break;
      case CALLBACK.DeferredChannelMessageWithSource:
        message = this.createMessage(this.channelId, { content: '' }, [], {
          type: rec.type === 2 ? 20 : 0,
          interactionId: rec.id,
          webhook: true,
          flags: ((Number(data?.flags) || 0) & MESSAGE_FLAG_EPHEMERAL) | MESSAGE_FLAG_LOADING,
        });
        rec.originalMessageId = message.id;
        break;
      case CALLBACK.DeferredMessageUpdate:
        if (rec.type !== 3) throw new HttpError(400, 50035, 'Invalid Form Body (type 6 needs a component interaction)');
        break;
      case CALLBACK.UpdateMessage: {
        if (rec.type !== 3) throw new HttpError(400, 50035, 'Invalid Form Body (type 7 needs a component interaction)');
        const target = rec.originalMessageId ? this.messages.get(rec.originalMessageId) : undefined;
        if (!target) throw new HttpError(404, 10008, 'Unknown Message');
        message = this.editMessage(target, data, files);
        break;
      }
      case CALLBACK.AutocompleteResult:
        rec.choices = Array.isArray(data?.choices) ? (data.choices as Json[]) : [];
        break;
      default:
        break;
    }
    // Resolve the test's `command()/click()/autocomplete()` only after this HTTP response has been written.
    setImmediate(() => this.pending.get(rec.id)?.resolve(rec));
    if (!withResponse) return { status: 204 };
    const original = rec.originalMessageId ? this.messages.get(rec.originalMessageId) : undefined;
    const json: Json = {
      interaction: {
        id: rec.id,
        type: rec.type,
        response_message_id: message?.id ?? original?.id,
        response_message_loading: type === CALLBACK.DeferredChannelMessageWithSource,
        response_message_ephemeral: Boolean(((message ?? original)?.flags ?? 0) & MESSAGE_FLAG_EPHEMERAL),
      },
    };
    if (message) json.resource = { type, message: this.toApiMessage(message) };
    else json.resource = { type };
    return { status: 200, json };
  }

  private resolveWebhookMessage(rec: FakeInteraction, mid: string): FakeMessage {
    const id = mid === '@original' ? rec.originalMessageId : mid;
    const msg = id ? this.messages.get(id) : undefined;
    if (!msg || (mid === '@original' && rec.originalDeleted)) throw new HttpError(404, 10008, 'Unknown Message');
    return msg;
  }

  // ------------------------------------------------------------------------------------------------ failures

  failNext(
    method: string,
    pathRegex: RegExp,
    spec: FailSpec,
    matches: (r: RecordedRequest) => boolean = () => true,
  ): void {
    this.failRules.push({ method: method.toUpperCase(), re: pathRegex, spec, matches });
  }

  holdNext(
    method: string,
    pathRegex: RegExp,
    matches: (r: RecordedRequest) => boolean = () => true,
  ): { arrived: Promise<RecordedRequest>; release(): void } {
    let arrived!: (r: RecordedRequest) => void;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const arrival = new Promise<RecordedRequest>((r) => (arrived = r));
    this.holdRules.push({ method: method.toUpperCase(), re: pathRegex, matches, arrived, released });
    return { arrived: arrival, release };
  }

  setDown(down: boolean): void {
    this.down = down;
  }

  rateLimitChannelsUntil(until: number): void {
    this.channelsLimitedUntil = until;
  }

  async waitFor<T>(predicate: () => T | null | undefined | false, timeoutMs = 2000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = predicate();
      if (v !== null && v !== undefined && v !== false) return v;
      if (Date.now() >= deadline) throw new Error(`fake-discord: waitFor timed out after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  // ------------------------------------------------------------------------------------------------ HTTP

  private reply(res: ServerResponse, status: number, json?: unknown, headers: Record<string, string> = {}): void {
    if (res.headersSent) return;
    if (json === undefined || status === 204) {
      res.writeHead(status, headers);
      res.end();
      return;
    }
    const text = JSON.stringify(json);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  }

  private async onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${this.port}`);
    const method = (req.method ?? 'GET').toUpperCase();

    // Attachment bytes (what the attachment urls point at).
    const att = /^\/attachments\/(\d+)\/(\d+)\//.exec(url.pathname);
    if (att && method === 'GET') {
      const a = [...this.messages.values()].flatMap((m) => m.attachments).find((x) => x.id === att[2]);
      if (!a) return this.reply(res, 404, { message: 'Not Found' });
      res.writeHead(200, { 'content-type': a.contentType, 'content-length': String(a.size) });
      res.end(a.data);
      return;
    }

    const raw = await readBody(req);
    let parsed: Awaited<ReturnType<typeof parseBody>>;
    try {
      parsed = await parseBody(req, raw);
    } catch (e) {
      parsed = { body: { _unparseable: String(e) }, files: [], multipart: false };
    }
    const prefix = '/api/v10';
    const rawPath = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : url.pathname;
    const path = rawPath
      .split('/')
      .map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          return s;
        }
      })
      .join('/');
    const rec: RecordedRequest = {
      method,
      path,
      query: Object.fromEntries(url.searchParams.entries()),
      headers: { ...req.headers },
      body: parsed.body,
      files: parsed.files,
      multipart: parsed.multipart,
      status: 0,
      at: Date.now(),
    };
    this.requests.push(rec);
    this.log('rest', method, path);
    const hold = ruleFor(this.holdRules, rec);
    if (hold) {
      hold.arrived(rec);
      await hold.released;
    }

    const send = (status: number, json?: unknown, headers?: Record<string, string>): void => {
      rec.status = status;
      this.reply(res, status, json, headers);
    };

    if (this.down) return send(503, { message: 'Service Unavailable', code: 0 });
    const limitedFor = (this.channelsLimitedUntil - Date.now()) / 1000;
    const rule =
      limitedFor > 0 && path.startsWith('/channels/')
        ? { spec: { status: 429, retryAfter: limitedFor } as FailSpec }
        : ruleFor(this.failRules, rec);
    if (rule) {
      const spec = rule.spec;
      if (spec.status === 429) {
        const s = spec as { status: 429; retryAfter?: number; global?: boolean };
        const retryAfter = s.retryAfter ?? 1;
        const headers: Record<string, string> = {
          'retry-after': String(retryAfter),
          'x-ratelimit-limit': '5',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(Date.now() / 1000 + retryAfter),
          'x-ratelimit-reset-after': String(retryAfter),
          'x-ratelimit-bucket': 'fakebucket' + randomBytes(4).toString('hex'),
          'x-ratelimit-scope': s.global ? 'global' : 'user',
        };
        if (s.global) headers['x-ratelimit-global'] = 'true';
        return send(
          429,
          { message: 'You are being rate limited.', retry_after: retryAfter, global: Boolean(s.global) },
          headers,
        );
      }
      const s = spec as { status: number; code?: number; message?: string };
      return send(s.status, { message: s.message ?? `${s.status}: injected failure`, code: s.code ?? 0 });
    }

    try {
      const out = this.route(method, path, rec, req);
      send(out.status, out.json);
    } catch (e) {
      if (e instanceof HttpError) {
        send(e.status, { message: e.message, code: e.code });
      } else {
        this.log('internal error', e);
        send(500, { message: `fake-discord internal error: ${String(e)}`, code: 0 });
      }
    }
  }

  private requireAuth(req: IncomingMessage): void {
    if (req.headers.authorization !== `Bot ${this.token}`) throw new HttpError(401, 0, '401: Unauthorized');
  }

  private requireChannel(id: string): void {
    if (id !== this.channelId) throw new HttpError(404, 10003, 'Unknown Channel');
  }

  private route(
    method: string,
    path: string,
    r: RecordedRequest,
    req: IncomingMessage,
  ): { status: number; json?: unknown } {
    const seg = path.split('/').filter(Boolean);
    const body = (Array.isArray(r.body) ? null : r.body) as Json | null;
    const is = (m: string, ...pattern: string[]): boolean =>
      method === m && seg.length === pattern.length && pattern.every((p, i) => p === '*' || p === seg[i]);

    // --- webhooks / interaction callbacks (token-authenticated, no bot auth)
    if (is('POST', 'interactions', '*', '*', 'callback')) {
      const rec = this.interactionByIdToken(seg[1]!, seg[2]!);
      return this.onCallback(rec, body, r.files, r.query.with_response === 'true');
    }
    if (seg[0] === 'webhooks' && seg.length >= 3) {
      if (seg[1] !== this.applicationId) throw new HttpError(404, 10015, 'Unknown Webhook');
      const rec = this.byToken.get(seg[2]!);
      if (!rec) throw new HttpError(404, 10015, 'Unknown Webhook');
      if (is('POST', 'webhooks', '*', '*')) {
        if (!rec.callback) throw new HttpError(404, 10015, 'Unknown Webhook'); // follow-up before ack
        const flags = typeof body?.flags === 'number' ? body.flags : 0;
        const msg = this.createMessage(this.channelId, body, r.files, {
          interactionId: rec.id,
          webhook: true,
          flags,
        });
        rec.followUps.push({ messageId: msg.id, body, files: r.files, at: Date.now() });
        return r.query.wait === 'true' ? { status: 200, json: this.toApiMessage(msg) } : { status: 204 };
      }
      if (seg.length === 5 && seg[3] === 'messages') {
        const msg = this.resolveWebhookMessage(rec, seg[4]!);
        if (method === 'GET') return { status: 200, json: this.toApiMessage(msg) };
        if (method === 'PATCH') {
          this.editMessage(msg, body, r.files);
          rec.edits.push({ messageId: msg.id, body, files: r.files, at: Date.now() });
          return { status: 200, json: this.toApiMessage(msg) };
        }
        if (method === 'DELETE') {
          this.messages.delete(msg.id);
          if (msg.id === rec.originalMessageId) rec.originalDeleted = true;
          return { status: 204 };
        }
      }
      throw new HttpError(405, 0, '405: Method Not Allowed');
    }

    // --- everything else needs `Authorization: Bot <token>`
    this.requireAuth(req);

    if (is('GET', 'gateway', 'bot')) {
      return {
        status: 200,
        json: {
          url: this.gatewayUrl,
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
        },
      };
    }
    if (is('GET', 'gateway')) return { status: 200, json: { url: this.gatewayUrl } };
    if (is('GET', 'users', '@me')) return { status: 200, json: this.botUser() };
    if (is('GET', 'applications', '@me')) return { status: 200, json: this.application() };
    if (is('GET', 'guilds', '*')) {
      if (seg[1] !== this.guildId) throw new HttpError(404, 10004, 'Unknown Guild');
      const g = this.apiGuild();
      for (const k of ['joined_at', 'large', 'unavailable', 'member_count', 'voice_states', 'members', 'channels']) {
        delete g[k];
      }
      for (const k of ['threads', 'presences', 'stage_instances', 'guild_scheduled_events', 'soundboard_sounds']) {
        delete g[k];
      }
      return { status: 200, json: g };
    }
    if (is('GET', 'guilds', '*', 'members', '*')) {
      if (seg[1] !== this.guildId) throw new HttpError(404, 10004, 'Unknown Guild');
      if (seg[3] !== this.botUserId) throw new HttpError(404, 10007, 'Unknown Member');
      return { status: 200, json: (this.apiGuild().members as Json[])[0] };
    }
    if (is('GET', 'guilds', '*', 'channels')) {
      if (seg[1] !== this.guildId) throw new HttpError(404, 10004, 'Unknown Guild');
      return { status: 200, json: [this.apiChannel()] };
    }

    // channels
    if (is('GET', 'channels', '*')) {
      this.requireChannel(seg[1]!);
      return { status: 200, json: this.apiChannel() };
    }
    if (is('POST', 'channels', '*', 'messages')) {
      this.requireChannel(seg[1]!);
      const hasContent =
        (typeof body?.content === 'string' && body.content.length > 0) ||
        (Array.isArray(body?.embeds) && body.embeds.length > 0) ||
        (Array.isArray(body?.components) && body.components.length > 0) ||
        r.files.length > 0 ||
        Array.isArray(body?.sticker_ids) ||
        Boolean(body?.poll);
      if (!hasContent) throw new HttpError(400, 50006, 'Cannot send an empty message');
      // a reply: Discord refuses a reference to an unknown message unless fail_if_not_exists is false, when
      // it posts a plain message instead
      const reference = body?.message_reference as { message_id?: string; fail_if_not_exists?: boolean } | undefined;
      const repliedTo =
        reference?.message_id !== undefined ? this.messages.get(String(reference.message_id)) : undefined;
      if (reference?.message_id !== undefined && !repliedTo && reference.fail_if_not_exists !== false) {
        throw new HttpError(400, 50035, 'Invalid Form Body (message_reference: Unknown message)');
      }
      const msg = this.createMessage(seg[1]!, body, r.files, repliedTo ? { type: 19, replyTo: repliedTo.id } : {});
      const out = this.toApiMessage(msg);
      if (body?.nonce !== undefined) out.nonce = body.nonce;
      return { status: 200, json: out };
    }
    if (is('GET', 'channels', '*', 'messages')) {
      this.requireChannel(seg[1]!);
      const limit = Math.min(100, Number(r.query.limit ?? 50) || 50);
      const list = this.channelMessages(seg[1]!)
        .reverse()
        .slice(0, limit)
        .map((m) => this.toApiMessage(m));
      return { status: 200, json: list };
    }
    if (seg[0] === 'channels' && seg[2] === 'messages' && seg.length === 4) {
      this.requireChannel(seg[1]!);
      const msg = this.messages.get(seg[3]!);
      if (!msg || msg.channelId !== seg[1]) throw new HttpError(404, 10008, 'Unknown Message');
      if (method === 'GET') return { status: 200, json: this.toApiMessage(msg) };
      if (method === 'PATCH') {
        this.editMessage(msg, body, r.files);
        return { status: 200, json: this.toApiMessage(msg) };
      }
      if (method === 'DELETE') {
        this.messages.delete(msg.id);
        return { status: 204 };
      }
    }
    if (is('POST', 'channels', '*', 'typing')) {
      this.requireChannel(seg[1]!);
      return { status: 204 };
    }

    // application commands
    if (seg[0] === 'applications' && seg[2] === 'commands' && (seg.length === 3 || seg.length === 4)) {
      if (seg[1] !== this.applicationId) throw new HttpError(403, 50001, 'Missing Access');
      return this.commandsRoute(method, null, seg[3], body, r.body);
    }
    if (seg[0] === 'applications' && seg[2] === 'guilds' && seg[4] === 'commands' && seg.length <= 6) {
      if (seg[1] !== this.applicationId) throw new HttpError(403, 50001, 'Missing Access');
      if (seg[3] !== this.guildId) throw new HttpError(403, 50001, 'Missing Access');
      return this.commandsRoute(method, seg[3]!, seg[5], body, r.body);
    }

    throw new HttpError(404, 0, `404: Not Found (fake-discord has no route ${method} ${path})`);
  }

  private toCommand(def: Json, guildId: string | null, existing?: RegisteredCommand): RegisteredCommand {
    return {
      default_member_permissions: null,
      type: 1,
      nsfw: false,
      description: '',
      options: [],
      integration_types: [0],
      contexts: null,
      ...def,
      id: existing?.id ?? snowflake(),
      application_id: this.applicationId,
      guild_id: guildId,
      name: String(def.name),
      version: snowflake(),
    } as RegisteredCommand;
  }

  private commandsRoute(
    method: string,
    guildId: string | null,
    commandId: string | undefined,
    body: Json | null,
    rawBody: Json | Json[] | null,
  ): { status: number; json?: unknown } {
    const scope = (): RegisteredCommand[] => this.commands.filter((c) => c.guild_id === guildId);
    const out = (c: RegisteredCommand): Json => {
      const copy: Json = { ...c };
      if (copy.guild_id === null) delete copy.guild_id;
      return copy;
    };
    if (commandId === undefined) {
      if (method === 'GET') return { status: 200, json: scope().map(out) };
      if (method === 'PUT') {
        if (!Array.isArray(rawBody)) throw new HttpError(400, 50035, 'Invalid Form Body');
        const previous = scope();
        const next = rawBody.map((d) =>
          this.toCommand(
            d,
            guildId,
            previous.find((p) => p.name === d.name && (p.type ?? 1) === (d.type ?? 1)),
          ),
        );
        this.commands = [...this.commands.filter((c) => c.guild_id !== guildId), ...next];
        return { status: 200, json: next.map(out) };
      }
      if (method === 'POST') {
        if (!body) throw new HttpError(400, 50035, 'Invalid Form Body');
        const existing = scope().find((p) => p.name === body.name && (p.type ?? 1) === (body.type ?? 1));
        const cmd = this.toCommand(body, guildId, existing);
        this.commands = [...this.commands.filter((c) => c !== existing), cmd];
        return { status: existing ? 200 : 201, json: out(cmd) };
      }
    } else {
      const cmd = scope().find((c) => c.id === commandId);
      if (!cmd) throw new HttpError(404, 10063, 'Unknown application command');
      if (method === 'GET') return { status: 200, json: out(cmd) };
      if (method === 'PATCH') {
        const updated = this.toCommand({ ...cmd, ...(body ?? {}) }, guildId, cmd);
        this.commands = this.commands.map((c) => (c === cmd ? updated : c));
        return { status: 200, json: out(updated) };
      }
      if (method === 'DELETE') {
        this.commands = this.commands.filter((c) => c !== cmd);
        return { status: 204 };
      }
    }
    throw new HttpError(405, 0, '405: Method Not Allowed');
  }

  // ------------------------------------------------------------------------------------------------ close

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Clients should be destroyed before close(). For a client that is still connected, close with 4004
    // (Authentication failed): @discordjs/ws treats it as unrecoverable and does NOT reconnect
    // (node_modules/@discordjs/ws/dist/index.js, WebSocketShard.onClose), whereas 1000/1006/4000 make it
    // reconnect/resume forever against a dead port, which keeps vitest alive. The client then emits `shardError`.
    const open = [...this.conns].filter((c) => c.ws.readyState === WebSocket.OPEN);
    await Promise.all(
      open.map(
        (c) =>
          new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              c.ws.terminate();
              resolve();
            }, 1000);
            c.ws.once('close', () => {
              clearTimeout(t);
              resolve();
            });
            c.ws.close(4004, 'fake-discord is shutting down');
          }),
      ),
    );
    for (const c of this.conns) c.ws.terminate();
    this.conns.clear();
    for (const p of this.pending.values()) p.resolve = () => {};
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }
}

/** Starts the fake on 127.0.0.1 with an ephemeral port. */
/** The environment that points rlwatch's Discord settings at `fake` (its alert channel, or `channel`). */
export const discordEnv = (fake: FakeDiscord, channel = fake.channelId): Record<string, string> => ({
  DISCORD_TOKEN: fake.token,
  DISCORD_API_URL: fake.apiUrl,
  DISCORD_GUILD_ID: fake.guildId,
  DISCORD_CHANNEL_ID: channel,
});

export async function startFakeDiscord(opts: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = new FakeDiscordImpl(opts);
  await fake.listen();
  return fake;
}
