/**
 * A local fake of Slack (Web API + Socket Mode + response_url + file upload URL) for rlwatch's tests.
 * It binds 127.0.0.1 only, on an ephemeral port, and the REAL @slack/bolt `App` connects to it.
 *
 * ## Configuring Bolt against it (verified with @slack/bolt 4.7.3, @slack/socket-mode 2.0.7, @slack/web-api 7.19.0)
 *
 * Simplest form: the Socket Mode client inherits the App's `clientOptions`
 * (App.js:148-151 builds `installerOptions = { clientOptions: this.clientOptions, ...installerOptions }` and
 * SocketModeReceiver.js:35 passes `installerOptions.clientOptions` to `new SocketModeClient(...)`), so ONE `slackApiUrl`
 * reaches both the bot WebClient and the app-token WebClient that calls `apps.connections.open`:
 *
 * ```ts
 * import { App, LogLevel } from '@slack/bolt';
 * const fake = await startFakeSlack();
 * const app = new App({
 *   token: fake.botToken,             // xoxb-…: auth.test is called AT CONSTRUCTION (tokenVerificationEnabled)
 *   appToken: fake.appToken,          // xapp-…: sent as `Authorization: Bearer` to apps.connections.open
 *   socketMode: true,
 *   logLevel: LogLevel.ERROR,
 *   clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },   // == fake.clientOptions()
 * });
 * await app.start();                  // resolves once the fake has sent `hello`
 * …
 * await app.stop();                   // resolves BEFORE the socket is closed…
 * await fake.close();                 // …so close() first waits for the client's close handshake
 * ```
 *
 * With control over the Socket Mode client (ping timeouts, no auto-reconnect) build the receiver yourself;
 * `App` does NOT forward `clientPingTimeout` / `serverPingTimeout` / `autoReconnectEnabled` (App.js:709-734 `initReceiver`):
 *
 * ```ts
 * import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
 * const receiver = new SocketModeReceiver({
 *   appToken: fake.appToken,
 *   logLevel: LogLevel.ERROR,
 *   autoReconnectEnabled: false,      // a dropped socket does not redial apps.connections.open
 *   clientPingTimeout: 2_000,         // client pings every timeout/3 ms; the fake (ws) auto-pongs
 *   installerOptions: { clientOptions: fake.clientOptions() },   // slackApiUrl + retryConfig for apps.connections.open
 * });
 * const app = new App({ token: fake.botToken, receiver, logLevel: LogLevel.ERROR, clientOptions: fake.clientOptions() });
 * ```
 *
 * ## Quirks of the installed clients (paths under node_modules/)
 * - `@slack/socket-mode/dist/src/SocketModeClient.js:94-96`: when `clientOptions.retryConfig` is undefined it WRITES
 *   `{ retries: 100, factor: 1.3 }` into the object it was given. With `new App({ socketMode: true })` that object is
 *   the App's own `clientOptions`, so every listener `client` (App.js:548, a copy of `this.clientOptions`) also ends
 *   up with 100 retries while `app.client` (built earlier, App.js:134) keeps the default 10-retries/30-minutes policy.
 *   Always pass `retryConfig` explicitly in tests (`fake.clientOptions()` does).
 * - `SocketModeClient.js:98`: `new WebClient('', { …, headers: { Authorization: 'Bearer <appToken>' }, ...clientOptions })`:
 *   a `headers` entry in the App's `clientOptions` replaces the app-token header, so apps.connections.open goes out
 *   with the wrong token or none. This fake then answers `not_allowed_token_type` (which socket-mode treats as
 *   recoverable and keeps retrying) or `not_authed` (unrecoverable: `start()` rejects).
 * - `@slack/bolt/dist/receivers/SocketModeReceiver.js:173-190`: `stop()` calls `client.disconnect()` without awaiting
 *   it, so `await app.stop()` returns while the close handshake is still running; `fake.close()` (or
 *   `fake.waitForSocketClosed()`) waits for it.
 * - `@slack/bolt/dist/App.js:824-832` (`singleAuthorization`): with `tokenVerificationEnabled` (default) auth.test
 *   runs in the constructor, before `start()`; if the fake is down then, the rejected promise is only observed on
 *   the first event, as an unhandled rejection before that. Passing both `botId` and `botUserId` to `App` skips
 *   auth.test entirely (App.js:812-815).
 * - `@slack/socket-mode/dist/src/SocketModeClient.js:207-240` (`retrieveWSSURL`): once the WebClient's own
 *   `retryConfig` is exhausted, HTTP errors (503 from `setDown`) and connection errors are "unrecoverable", so
 *   `app.start()` rejects (at once with `retries: 0`). `ok:false` errors other than not_authed, invalid_auth,
 *   account_inactive, user_removed_from_team and team_disabled (UnrecoverableSocketModeStartError.js) are retried
 *   without limit, after `clientPingTimeout × attempt` ms. After `start()`, a dropped socket redials
 *   (autoReconnectEnabled) after `clientPingTimeout` ms. If that redial fails, for example because the fake is
 *   closed, the result is an unhandled rejection (SocketModeClient.js:199, `cb.apply(this).then(res)` has no catch),
 *   so stop the app before closing the fake.
 * - `@slack/socket-mode/dist/src/SlackWebSocket.js:186-235`: the client pings every `clientPingTimeout / 3` ms and
 *   drops the socket after 3 unanswered pings; `serverPingTimeout` only starts counting after the server's first ping
 *   (the fake never pings, so it never fires).
 * - `@slack/bolt/dist/receivers/SocketModeResponseAck.js:13`: nothing acks for you in Socket Mode (no 3 s
 *   auto-ack as in HTTPReceiver); `slashCommand()`/`blockAction()` reject after `ackTimeoutMs` (3000) without an ack.
 * - Rate limits, `@slack/web-api/dist/WebClient.js:478-501` (`makeRequest`): on a 429 with `Retry-After: N`
 *     - `rejectRateLimitedCalls: true` → the call rejects AT ONCE with `code: 'slack_webapi_rate_limited_error'` and
 *       `retryAfter: N` (p-retry AbortError), after emitting `rate_limited`;
 *     - otherwise WebClient pauses its request queue, SLEEPS N s, then throws a plain Error that p-retry retries per
 *       `retryConfig`. So `retryConfig: { retries: 0 }` does NOT fail fast on 429: it waits N s then rejects with
 *       `Error('A rate limit was exceeded (url: …, retry-after: N)')` (no `code`). With `retries >= 1` the call is
 *       re-sent after N s (+ p-retry's `minTimeout`, default 1000 ms) and succeeds.
 *     - a 429 without a parsable Retry-After aborts at once (`Retry header did not contain a valid timeout`).
 *   Any other non-200 status (`{status: 500}`, `setDown`) → `code: 'slack_webapi_http_error'`, `statusCode`, retried
 *   per `retryConfig`; `{error: 'x'}` (HTTP 200, ok:false) → `code: 'slack_webapi_platform_error'`, `data.error`,
 *   never retried.
 * - `files.uploadV2` (WebClient.js:358-430, dist/file-upload.js): getUploadURLExternal (form fields `filename`,
 *   `length` as strings) → POST to `upload_url` as multipart/form-data, single part `body`, filename `Untitled`,
 *   with the bot token as bearer (any 200 counts) → completeUploadExternal with `files` = JSON `[{id, title}]`,
 *   `channel_id`, `initial_comment`, `thread_ts`. It resolves `{ ok: true, files: [<completeUploadExternal result>] }`.
 * - Bolt's `respond()` (dist/context/create-respond.js, App.js:631) posts JSON with App's own axios (no token) to
 *   `response_url`. Node 20's global agent keeps connections alive, hence `close()` calls `closeAllConnections()`.
 *
 * ## What the fake records
 * - `calls`: every HTTP request to `/api/<method>` (even failed ones), plus pseudo-methods `'upload'` (POST to an
 *   upload_url) and `'response_url'` (POST to a response_url). Form values arrive as strings; JSON-ish fields
 *   (`blocks`, `attachments`, `files`, `metadata`, `view`…) are decoded. `token` is taken from the bearer header
 *   (else the `token` argument) and removed from `args`.
 * - `messages`: ts → current state of every message (chat.postMessage, chat.update in place, chat.delete removes,
 *   completeUploadExternal with a channel, `in_channel` / `replace_original` / `delete_original` response_url posts).
 * - `uploads`, `responses`, `acks`, `ephemerals`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { parseBody, readBody, requestToken, type ParsedBody } from './slack/parse.ts';
import {
  blockActionPayload,
  envelopeId as newEnvelopeId,
  locateAction,
  mimeOf,
  slashCommandPayload,
  type Workspace,
} from './slack/payloads.ts';

// ---------------------------------------------------------------------------------------------------------------
// Public types

export interface FakeSlackOptions {
  /** Default channel for interactions and `fake.channelId` (default 'C0RLWATCH'). */
  channelId?: string;
  channelName?: string;
  teamId?: string;
  teamDomain?: string;
  appId?: string;
  botUserId?: string;
  botId?: string;
  /** Known users for users.info (others matching /^[UW]/ are synthesised). */
  users?: Record<string, { name?: string; realName?: string; isAdmin?: boolean; tz?: string }>;
  /** usergroup id → member user ids, for usergroups.users.list. */
  usergroups?: Record<string, string[]>;
  /** Default time an envelope may wait for its ack (Slack's limit is 3 s). */
  ackTimeoutMs?: number;
  /** Listen on this port (e.g. one rlwatch was pointed at before the fake came up); default: ephemeral. */
  port?: number;
  /** The tokens the fake accepts (default: random ones), for a client configured before the fake is up. */
  botToken?: string;
  appToken?: string;
  /** The bot token's scopes, sent as Slack does in the `x-oauth-scopes` header of each answer to it (default: none). */
  scopes?: string[];
}

export interface RecordedCall {
  /** Web API method, or the pseudo-methods 'upload' and 'response_url'. */
  method: string;
  args: Record<string, unknown>;
  token: string | undefined;
  /** Date.now() when the request arrived. */
  at: number;
  /** HTTP status the fake answered with. */
  status: number;
  /** Slack error code answered (`ok: false`), if any. */
  error: string | undefined;
  contentType: string;
}

export interface FakeMessage {
  channel: string;
  ts: string;
  text: string;
  blocks: unknown[];
  attachments: unknown[];
  threadTs: string | undefined;
  user: string;
  botId: string | undefined;
  /** File ids shared with the message (files.completeUploadExternal). */
  files: string[];
  /** How many times chat.update / replace_original edited it. */
  edits: number;
  /** Earlier versions, oldest first. */
  history: Array<{ text: string; blocks: unknown[] }>;
  source: 'chat.postMessage' | 'files.completeUploadExternal' | 'response_url' | 'seed';
}

export interface FakeUpload {
  fileId: string;
  filename: string;
  /** Declared `length` from files.getUploadURLExternal. */
  length: number;
  altText: string | undefined;
  uploadUrl: string;
  /** The bytes POSTed to upload_url (undefined until then). */
  bytes: Buffer | undefined;
  uploadedAt: number | undefined;
  completed: boolean;
  title: string | undefined;
  channelId: string | undefined;
  initialComment: string | undefined;
  threadTs: string | undefined;
}

export interface FakeResponse {
  /** Id in the response_url path. */
  id: string;
  url: string;
  kind: 'slash_commands' | 'interactive';
  envelopeId: string;
  /** The JSON body Bolt's respond() posted (`response_type`, `text`, `blocks`, `replace_original`…). */
  body: Record<string, unknown>;
  at: number;
}

export interface FakeAck {
  envelopeId: string;
  /** Envelope type the ack answers ('slash_commands', 'interactive', …) or undefined for an unknown envelope. */
  type: string | undefined;
  /** `payload` of the ack frame (`{}` for a bare `ack()`), undefined if absent. */
  payload: Record<string, unknown> | undefined;
  /** Milliseconds between pushing the envelope and receiving the ack. */
  ms: number;
  at: number;
}

export interface FakeEphemeral {
  channel: string;
  user: string;
  text: string;
  blocks: unknown[];
  threadTs: string | undefined;
  messageTs: string;
}

export interface FailSpec {
  /** HTTP status (default 200 when `error` is given, else 500). 429 adds `Retry-After`. */
  status?: number;
  /** Seconds for the Retry-After header of a 429 (default 1). */
  retryAfter?: number;
  /** Slack error code in the `{ ok: false, error }` body (default 'ratelimited' for 429, 'internal_error' else). */
  error?: string;
  /** How many consecutive calls fail (default 1). */
  times?: number;
}

export interface SlashCommandOptions {
  command: string;
  text?: string;
  userId?: string;
  userName?: string;
  /** Another workspace's id (a shared channel, another install): default the fake's. */
  teamId?: string;
  channelId?: string;
  channelName?: string;
  /** Reject if the app has not acked within this many ms (default: the fake's ackTimeoutMs, 3000). */
  ackTimeoutMs?: number;
  /** After the ack, wait until this many response_url posts arrived (default 0). */
  waitForResponses?: number;
  /** Max wait for `waitForResponses` (default 3000). */
  responseTimeoutMs?: number;
  /** Extra settle time after the ack (and after `waitForResponses`), default 50 ms. */
  settleMs?: number;
}

export interface BlockActionOptions {
  actionId: string;
  value?: string;
  userId?: string;
  userName?: string;
  /** ts of the message holding the button; its current text/blocks (from `messages`) go into the payload.
   * Unused with `ephemeral`. */
  messageTs?: string;
  /** The button is on this private answer (a response_url post with `response_type: 'ephemeral'`) instead: as
   * Slack does, the payload's container says `is_ephemeral` and no `message` is sent (the app gets only the
   * button's value back). */
  ephemeral?: FakeResponse;
  /** Default: the message's channel if known, else `fake.channelId`. */
  channelId?: string;
  /** Default: the block holding `actionId` in the message, else 'actions'. */
  blockId?: string;
  /** Default: the element's type in the message, else 'button'. */
  actionType?: string;
  ackTimeoutMs?: number;
  waitForResponses?: number;
  responseTimeoutMs?: number;
  settleMs?: number;
}

export interface InteractionResult {
  envelopeId: string;
  /** The payload pushed in the envelope. */
  payload: Record<string, unknown>;
  ack: FakeAck;
  /** Posts to this interaction's response_url; live: keeps filling after the promise resolved. */
  responses: FakeResponse[];
  responseUrl: string;
}

export interface PushOptions {
  acceptsResponsePayload?: boolean;
  ackTimeoutMs?: number;
}

export type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

export interface FakeSlack {
  /** `http://127.0.0.1:PORT/api/`, for WebClient's `slackApiUrl`. */
  readonly apiUrl: string;
  /** `http://127.0.0.1:PORT`. */
  readonly baseUrl: string;
  readonly port: number;
  readonly botToken: string;
  readonly appToken: string;
  readonly channelId: string;
  readonly channelName: string;
  readonly teamId: string;
  readonly appId: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly calls: RecordedCall[];
  readonly messages: Map<string, FakeMessage>;
  readonly uploads: FakeUpload[];
  readonly responses: FakeResponse[];
  readonly acks: FakeAck[];
  readonly ephemerals: FakeEphemeral[];
  readonly usergroups: Map<string, string[]>;
  /** Socket Mode connections currently open. */
  readonly openSockets: number;
  /** Socket Mode connections accepted since start. */
  readonly socketConnections: number;
  /** Fresh `{ slackApiUrl, retryConfig: { retries: 0 } }` (a new object each time: Bolt and socket-mode mutate it). */
  clientOptions(): { slackApiUrl: string; retryConfig: { retries: number } };
  /** Recorded calls of one method, in order. */
  callsTo(method: string): RecordedCall[];
  /** Push a slash_commands envelope; resolves once acked (then settles for response_url posts). */
  slashCommand(opts: SlashCommandOptions): Promise<InteractionResult>;
  /** Push an interactive block_actions envelope; resolves once acked. */
  blockAction(opts: BlockActionOptions): Promise<InteractionResult>;
  /** Push any envelope (`events_api`, `interactive` view_submission…); resolves with the ack. */
  pushEnvelope(type: string, payload: Record<string, unknown>, opts?: PushOptions): Promise<FakeAck>;
  /** Send a raw frame on the newest socket (e.g. `{ type: 'disconnect', reason: 'refresh_requested' }`). */
  sendSocketMessage(message: unknown): void;
  /** Put a message into `messages` as if someone had posted it; returns its ts. */
  seedMessage(msg: { channel?: string; text?: string; blocks?: unknown[]; user?: string; threadTs?: string }): string;
  /** The next `times` calls of `method` (or 'upload' / 'response_url') fail as described. Queues add up. */
  failNext(method: string, spec: FailSpec): void;
  /** While down, every /api/ call answers HTTP 503 (still recorded). */
  setDown(down: boolean): void;
  /**
   * While hanging, every /api/ call is recorded (status 0) and never answered, as behind a dead load balancer:
   * the client waits for its own timeout. Turning it off answers the held calls with 503.
   */
  setHanging(hanging: boolean): void;
  /** Poll `predicate` every 10 ms until it returns a truthy value (resolved) or `timeoutMs` passes (rejected). */
  waitFor<T>(predicate: () => T, timeoutMs?: number, label?: string): Promise<Truthy<T>>;
  /** Resolves once a socket is open and has been sent `hello`. */
  waitForSocket(timeoutMs?: number): Promise<void>;
  /** Resolves once no socket is open. */
  waitForSocketClosed(timeoutMs?: number): Promise<void>;
  /**
   * Waits (up to `timeoutMs`, default 3000) for the client to close its socket (call `await app.stop()` first),
   * terminates whatever is left, rejects pending acks and closes the HTTP server with all keep-alive connections.
   */
  close(opts?: { timeoutMs?: number }): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// Implementation

interface PendingAck {
  type: string;
  sentAt: number;
  timer: NodeJS.Timeout;
  resolve: (ack: FakeAck) => void;
  reject: (err: Error) => void;
}

interface ResponseTarget {
  id: string;
  url: string;
  kind: FakeResponse['kind'];
  envelopeId: string;
  channelId: string;
  messageTs: string | undefined;
  list: FakeResponse[];
}

type ApiResult = { status?: number; headers?: Record<string, string>; body: Record<string, unknown> };

const str = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const bool = (v: unknown): boolean => v === true || v === 'true' || v === '1' || v === 1;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

class FakeSlackServer implements FakeSlack {
  readonly botToken: string;
  readonly appToken: string;
  readonly channelId: string;
  readonly channelName: string;
  readonly teamId: string;
  readonly appId: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly calls: RecordedCall[] = [];
  readonly messages = new Map<string, FakeMessage>();
  readonly uploads: FakeUpload[] = [];
  readonly responses: FakeResponse[] = [];
  readonly acks: FakeAck[] = [];
  readonly ephemerals: FakeEphemeral[] = [];
  readonly usergroups: Map<string, string[]>;

  port = 0;
  private readonly teamDomain: string;
  private readonly users: NonNullable<FakeSlackOptions['users']>;
  private readonly ackTimeoutMs: number;
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly sockets = new Set<WebSocket>();
  private readonly helloSent = new WeakSet<WebSocket>();
  private readonly tickets = new Set<string>();
  private readonly failures = new Map<string, FailSpec[]>();
  private readonly pending = new Map<string, PendingAck>();
  private readonly targets = new Map<string, ResponseTarget>();
  private down = false;
  private hanging = false;
  private readonly held = new Set<ServerResponse>();
  private readonly fixedPort: number;
  private closing: Promise<void> | undefined;
  private totalSockets = 0;
  private tsCounter = 0;
  private readonly tsBase = Math.floor(Date.now() / 1000);
  private fileCounter = 0;
  private readonly scopes: string[] | undefined;

  constructor(opts: FakeSlackOptions) {
    this.scopes = opts.scopes;
    this.botToken = opts.botToken ?? `xoxb-0000000000-0000000000000-${randomBytes(12).toString('hex')}`;
    this.appToken = opts.appToken ?? `xapp-1-A0000000000-0000000000000-${randomBytes(16).toString('hex')}`;
    this.channelId = opts.channelId ?? 'C0RLWATCH';
    this.channelName = opts.channelName ?? 'rlwatch-alerts';
    this.teamId = opts.teamId ?? 'T0RLWATCH';
    this.teamDomain = opts.teamDomain ?? 'rlwatch-test';
    this.appId = opts.appId ?? 'A0RLWATCH';
    this.botUserId = opts.botUserId ?? 'U0RLWBOT';
    this.botId = opts.botId ?? 'B0RLWBOT';
    this.users = opts.users ?? {};
    this.usergroups = new Map(Object.entries(opts.usergroups ?? {}));
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 3000;
    this.fixedPort = opts.port ?? 0;
    this.server = createServer((req, res) => {
      this.handleHttp(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.sendJson(res, 500, { ok: false, error: 'fake_internal', detail: String(err) });
        else res.destroy();
      });
    });
    this.wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
    this.server.on('upgrade', (req, socket, head) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const ticket = url.searchParams.get('ticket');
      if (this.closing !== undefined || url.pathname !== '/socket' || ticket === null || !this.tickets.delete(ticket)) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws));
    });
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get apiUrl(): string {
    return `${this.baseUrl}/api/`;
  }
  get openSockets(): number {
    return [...this.sockets].filter((ws) => ws.readyState === WebSocket.OPEN).length;
  }
  get socketConnections(): number {
    return this.totalSockets;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.fixedPort, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  clientOptions(): { slackApiUrl: string; retryConfig: { retries: number } } {
    return { slackApiUrl: this.apiUrl, retryConfig: { retries: 0 } };
  }

  callsTo(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  failNext(method: string, spec: FailSpec): void {
    const queue = this.failures.get(method) ?? [];
    const times = Math.max(1, spec.times ?? 1);
    for (let i = 0; i < times; i += 1) queue.push({ ...spec, times: 1 });
    this.failures.set(method, queue);
  }

  setDown(down: boolean): void {
    this.down = down;
  }

  setHanging(hanging: boolean): void {
    this.hanging = hanging;
    if (hanging) return;
    for (const res of this.held) this.sendJson(res, 503, { ok: false, error: 'service_unavailable' });
    this.held.clear();
  }

  async waitFor<T>(predicate: () => T, timeoutMs = 3000, label?: string): Promise<Truthy<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = predicate();
      if (value) return value as Truthy<T>;
      if (Date.now() >= deadline) {
        throw new Error(`fake Slack: timed out after ${timeoutMs} ms waiting for ${label ?? predicate.toString()}`);
      }
      await sleep(10);
    }
  }

  async waitForSocket(timeoutMs = 3000): Promise<void> {
    await this.waitFor(
      () => [...this.sockets].some((ws) => ws.readyState === WebSocket.OPEN && this.helloSent.has(ws)),
      timeoutMs,
      'a Socket Mode connection',
    );
  }

  async waitForSocketClosed(timeoutMs = 3000): Promise<void> {
    await this.waitFor(() => this.sockets.size === 0, timeoutMs, 'the Socket Mode connection to close');
  }

  // ----- Socket Mode ----------------------------------------------------------------------------------------------

  private onSocket(ws: WebSocket): void {
    this.totalSockets += 1;
    this.sockets.add(ws);
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (!isBinary) this.onSocketMessage(data);
    });
    ws.on('close', () => this.sockets.delete(ws));
    ws.on('error', () => this.sockets.delete(ws));
    const hello = {
      type: 'hello',
      num_connections: this.openSockets,
      debug_info: {
        host: 'applink-fake-127.0.0.1',
        build_number: 1,
        approximate_connection_time: 18060,
      },
      connection_info: { app_id: this.appId },
    };
    ws.send(JSON.stringify(hello), () => this.helloSent.add(ws));
  }

  private onSocketMessage(data: RawData): void {
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (msg === null || typeof msg !== 'object') return;
    const { envelope_id: id, payload } = msg as { envelope_id?: unknown; payload?: unknown };
    if (typeof id !== 'string') return;
    const now = Date.now();
    const pending = this.pending.get(id);
    const ack: FakeAck = {
      envelopeId: id,
      type: pending?.type,
      payload: payload !== null && typeof payload === 'object' ? (payload as Record<string, unknown>) : undefined,
      ms: pending !== undefined ? now - pending.sentAt : 0,
      at: now,
    };
    this.acks.push(ack);
    if (pending !== undefined) {
      this.pending.delete(id);
      clearTimeout(pending.timer);
      pending.resolve(ack);
    }
  }

  private newestSocket(): WebSocket | undefined {
    let newest: WebSocket | undefined;
    for (const ws of this.sockets) if (ws.readyState === WebSocket.OPEN) newest = ws;
    return newest;
  }

  sendSocketMessage(message: unknown): void {
    const ws = this.newestSocket();
    if (ws === undefined) throw new Error('fake Slack: no open Socket Mode connection (await app.start() first)');
    ws.send(JSON.stringify(message));
  }

  private pushWithId(id: string, type: string, payload: Record<string, unknown>, opts: PushOptions): Promise<FakeAck> {
    const ws = this.newestSocket();
    if (ws === undefined) {
      return Promise.reject(new Error('fake Slack: no open Socket Mode connection (await app.start() first)'));
    }
    const timeoutMs = opts.ackTimeoutMs ?? this.ackTimeoutMs;
    return new Promise<FakeAck>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`fake Slack: ${type} envelope ${id} was not acked within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { type, sentAt: Date.now(), timer, resolve, reject });
      const envelope: Record<string, unknown> = { envelope_id: id, type, payload };
      if (opts.acceptsResponsePayload !== undefined) envelope['accepts_response_payload'] = opts.acceptsResponsePayload;
      ws.send(JSON.stringify(envelope), (err) => {
        if (err === undefined || err === null) return;
        clearTimeout(timer);
        this.pending.delete(id);
        reject(err);
      });
    });
  }

  pushEnvelope(type: string, payload: Record<string, unknown>, opts: PushOptions = {}): Promise<FakeAck> {
    return this.pushWithId(newEnvelopeId(), type, payload, opts);
  }

  private newTarget(
    kind: FakeResponse['kind'],
    envelopeId: string,
    channelId: string,
    messageTs?: string,
  ): ResponseTarget {
    const id = randomUUID().replaceAll('-', '');
    const target: ResponseTarget = {
      id,
      url: `${this.baseUrl}/respond/${id}`,
      kind,
      envelopeId,
      channelId,
      messageTs,
      list: [],
    };
    this.targets.set(id, target);
    return target;
  }

  private async settle(
    target: ResponseTarget,
    opts: { waitForResponses?: number; responseTimeoutMs?: number; settleMs?: number },
  ): Promise<void> {
    const want = opts.waitForResponses ?? 0;
    if (want > 0) {
      await this.waitFor(
        () => target.list.length >= want,
        opts.responseTimeoutMs ?? 3000,
        `${want} response_url post(s) for envelope ${target.envelopeId}`,
      );
    }
    const settleMs = opts.settleMs ?? 50;
    if (settleMs > 0) await sleep(settleMs);
  }

  private workspace(): Workspace {
    return {
      teamId: this.teamId,
      teamDomain: this.teamDomain,
      appId: this.appId,
      botUserId: this.botUserId,
      botId: this.botId,
      verificationToken: 'fake-verification-token',
    };
  }

  private userName(userId: string): string {
    return this.users[userId]?.name ?? `user-${userId.toLowerCase()}`;
  }

  async slashCommand(opts: SlashCommandOptions): Promise<InteractionResult> {
    const id = newEnvelopeId();
    const channelId = opts.channelId ?? this.channelId;
    const target = this.newTarget('slash_commands', id, channelId);
    const userId = opts.userId ?? 'U0HUMAN1';
    const payload = slashCommandPayload(
      { ...this.workspace(), ...(opts.teamId ? { teamId: opts.teamId } : {}) },
      {
        command: opts.command,
        text: opts.text ?? '',
        userId,
        userName: opts.userName ?? this.userName(userId),
        channelId,
        channelName: opts.channelName ?? (channelId === this.channelId ? this.channelName : channelId.toLowerCase()),
        responseUrl: target.url,
      },
    );
    const ack = await this.pushWithId(id, 'slash_commands', payload, {
      acceptsResponsePayload: true,
      ackTimeoutMs: opts.ackTimeoutMs,
    });
    await this.settle(target, opts);
    return { envelopeId: id, payload, ack, responses: target.list, responseUrl: target.url };
  }

  async blockAction(opts: BlockActionOptions): Promise<InteractionResult> {
    const id = newEnvelopeId();
    const messageTs = opts.messageTs ?? this.nextTs();
    const msg = opts.ephemeral ? undefined : this.messages.get(messageTs);
    const channelId = opts.channelId ?? msg?.channel ?? this.channelId;
    const target = this.newTarget('interactive', id, channelId, messageTs);
    const userId = opts.userId ?? 'U0HUMAN1';
    const found = locateAction(
      opts.ephemeral ? arr(opts.ephemeral.body['blocks']) : (msg?.blocks ?? []),
      opts.actionId,
    );
    const payload = blockActionPayload(this.workspace(), {
      actionId: opts.actionId,
      blockId: opts.blockId ?? found.blockId ?? 'actions',
      value: opts.value ?? found.value,
      actionType: opts.actionType ?? found.type ?? 'button',
      actionText: found.text ?? opts.actionId,
      userId,
      userName: opts.userName ?? this.userName(userId),
      channelId,
      channelName: channelId === this.channelId ? this.channelName : channelId.toLowerCase(),
      messageTs,
      message: {
        text: msg?.text ?? '',
        blocks: msg?.blocks ?? [],
        user: msg?.user,
        botId: msg?.botId,
        threadTs: msg?.threadTs,
      },
      responseUrl: target.url,
    });
    if (opts.ephemeral) {
      payload['container'] = { ...(payload['container'] as object), is_ephemeral: true };
      delete payload['message'];
    }
    const ack = await this.pushWithId(id, 'interactive', payload, {
      acceptsResponsePayload: false,
      ackTimeoutMs: opts.ackTimeoutMs,
    });
    await this.settle(target, opts);
    return { envelopeId: id, payload, ack, responses: target.list, responseUrl: target.url };
  }

  // ----- messages -------------------------------------------------------------------------------------------------

  private nextTs(): string {
    this.tsCounter += 1;
    const sec = this.tsBase + Math.floor(this.tsCounter / 1_000_000);
    return `${sec}.${String(this.tsCounter % 1_000_000).padStart(6, '0')}`;
  }

  private resolveChannel(channel: string): string {
    if (channel === `#${this.channelName}` || channel === this.channelName) return this.channelId;
    return channel;
  }

  private addMessage(m: Omit<FakeMessage, 'ts' | 'edits' | 'history'>): FakeMessage {
    const msg: FakeMessage = { ...m, ts: this.nextTs(), edits: 0, history: [] };
    this.messages.set(msg.ts, msg);
    return msg;
  }

  seedMessage(m: { channel?: string; text?: string; blocks?: unknown[]; user?: string; threadTs?: string }): string {
    return this.addMessage({
      channel: m.channel ?? this.channelId,
      text: m.text ?? '',
      blocks: m.blocks ?? [],
      attachments: [],
      threadTs: m.threadTs,
      user: m.user ?? 'U0HUMAN1',
      botId: undefined,
      files: [],
      source: 'seed',
    }).ts;
  }

  private editMessage(msg: FakeMessage, text: string | undefined, blocks: unknown[] | undefined): void {
    msg.history.push({ text: msg.text, blocks: msg.blocks });
    if (text !== undefined) msg.text = text;
    if (blocks !== undefined) msg.blocks = blocks;
    msg.edits += 1;
  }

  private wireMessage(msg: FakeMessage): Record<string, unknown> {
    const out: Record<string, unknown> = {
      type: 'message',
      text: msg.text,
      user: msg.user,
      ts: msg.ts,
      team: this.teamId,
      blocks: msg.blocks,
    };
    if (msg.botId !== undefined) {
      out['bot_id'] = msg.botId;
      out['app_id'] = this.appId;
    }
    if (msg.attachments.length > 0) out['attachments'] = msg.attachments;
    if (msg.threadTs !== undefined) out['thread_ts'] = msg.threadTs;
    if (msg.edits > 0) out['edited'] = { user: msg.user, ts: this.nextTs() };
    return out;
  }

  // ----- HTTP -----------------------------------------------------------------------------------------------------

  private sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    });
    res.end(text);
  }

  private takeFailure(method: string): ApiResult | undefined {
    const queue = this.failures.get(method);
    const spec = queue?.shift();
    if (spec === undefined) return undefined;
    if (queue !== undefined && queue.length === 0) this.failures.delete(method);
    const status = spec.status ?? (spec.error !== undefined ? 200 : 500);
    if (status === 429) {
      return {
        status,
        headers: { 'retry-after': String(spec.retryAfter ?? 1) },
        body: { ok: false, error: spec.error ?? 'ratelimited' },
      };
    }
    return { status, body: { ok: false, error: spec.error ?? 'internal_error' } };
  }

  private record(method: string, parsed: ParsedBody, token: string | undefined, at: number, result: ApiResult): void {
    const args = { ...parsed.args };
    delete args['token'];
    const ok = result.body['ok'];
    this.calls.push({
      method,
      args,
      token,
      at,
      status: result.status ?? 200,
      error: ok === false && typeof result.body['error'] === 'string' ? result.body['error'] : undefined,
      contentType: parsed.contentType,
    });
  }

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const url = new URL(req.url ?? '/', this.baseUrl);
    const raw = await readBody(req);
    const parsed = parseBody(req.headers['content-type'], raw, url.searchParams);
    const token = requestToken(req, parsed.args);
    const [, root, rest] = /^\/([^/]+)\/?(.*)$/.exec(url.pathname) ?? [];

    let result: ApiResult;
    let method: string;
    if (root === 'api' && rest !== undefined && rest !== '' && this.hanging) {
      this.record(rest, parsed, token, at, { status: 0, body: {} });
      this.held.add(res);
      res.once('close', () => this.held.delete(res));
      return;
    }
    if (root === 'api' && rest !== undefined && rest !== '') {
      method = rest;
      if (this.down) result = { status: 503, body: { ok: false, error: 'service_unavailable' } };
      else result = this.takeFailure(method) ?? this.callApi(method, parsed, token);
    } else if (root === 'upload' && req.method === 'POST') {
      method = 'upload';
      result = this.takeFailure(method) ?? this.receiveUpload(rest ?? '', parsed);
    } else if (root === 'respond' && req.method === 'POST') {
      method = 'response_url';
      result = this.takeFailure(method) ?? this.receiveResponse(rest ?? '', parsed, at);
    } else {
      this.sendJson(res, 404, { ok: false, error: 'not_found' });
      return;
    }
    this.record(method, parsed, token, at, result);
    if (method === 'upload' && (result.status ?? 200) === 200) {
      // files.slack.com answers the upload with plain text
      const text = `OK - ${String(result.body['length'] ?? 0)}`;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(text)) });
      res.end(text);
      return;
    }
    const scopes: Record<string, string> =
      this.scopes && token === this.botToken ? { 'x-oauth-scopes': this.scopes.join(',') } : {};
    this.sendJson(res, result.status ?? 200, result.body, { ...result.headers, ...scopes });
  }

  private checkToken(method: string, token: string | undefined): string | undefined {
    if (token === undefined) return 'not_authed';
    if (method === 'apps.connections.open') {
      if (token === this.appToken) return undefined;
      return token === this.botToken ? 'not_allowed_token_type' : 'invalid_auth';
    }
    if (token === this.botToken) return undefined;
    if (token === this.appToken) return method === 'auth.test' ? undefined : 'not_allowed_token_type';
    return 'invalid_auth';
  }

  private callApi(method: string, parsed: ParsedBody, token: string | undefined): ApiResult {
    const tokenError = this.checkToken(method, token);
    if (tokenError !== undefined) return { body: { ok: false, error: tokenError } };
    const a = parsed.args;
    const ok = (extra: Record<string, unknown> = {}): ApiResult => ({ body: { ok: true, ...extra } });
    const fail = (error: string): ApiResult => ({ body: { ok: false, error } });

    switch (method) {
      case 'auth.test':
        return ok({
          url: `https://${this.teamDomain}.slack.com/`,
          team: 'rlwatch test',
          user: 'rlwatch',
          team_id: this.teamId,
          user_id: this.botUserId,
          bot_id: this.botId,
          app_id: this.appId,
          is_enterprise_install: false,
        });

      case 'apps.connections.open': {
        const ticket = randomUUID();
        this.tickets.add(ticket);
        return ok({ url: `ws://127.0.0.1:${this.port}/socket?ticket=${ticket}&app_id=${this.appId}` });
      }

      case 'chat.postMessage': {
        const channel = str(a['channel']);
        if (channel === undefined || channel === '') return fail('channel_not_found');
        const text = str(a['text']) ?? '';
        const blocks = arr(a['blocks']);
        const attachments = arr(a['attachments']);
        if (text === '' && blocks.length === 0 && attachments.length === 0) return fail('no_text');
        const msg = this.addMessage({
          channel: this.resolveChannel(channel),
          text,
          blocks,
          attachments,
          threadTs: str(a['thread_ts']),
          user: this.botUserId,
          botId: this.botId,
          files: [],
          source: 'chat.postMessage',
        });
        return ok({ channel: msg.channel, ts: msg.ts, message: this.wireMessage(msg) });
      }

      case 'chat.update': {
        const channel = str(a['channel']);
        const ts = str(a['ts']);
        if (channel === undefined || channel === '') return fail('channel_not_found');
        const msg = ts !== undefined ? this.messages.get(ts) : undefined;
        if (msg === undefined || msg.channel !== this.resolveChannel(channel)) return fail('message_not_found');
        if (msg.botId === undefined) return fail('cant_update_message');
        const text = str(a['text']);
        const blocks = a['blocks'] !== undefined ? arr(a['blocks']) : undefined;
        if (a['attachments'] !== undefined) msg.attachments = arr(a['attachments']);
        this.editMessage(msg, text, blocks);
        return ok({ channel: msg.channel, ts: msg.ts, text: msg.text, message: this.wireMessage(msg) });
      }

      case 'chat.delete': {
        const ts = str(a['ts']);
        const msg = ts !== undefined ? this.messages.get(ts) : undefined;
        if (msg === undefined) return fail('message_not_found');
        this.messages.delete(msg.ts);
        return ok({ channel: msg.channel, ts: msg.ts });
      }

      case 'chat.postEphemeral': {
        const channel = str(a['channel']);
        const user = str(a['user']);
        if (channel === undefined || channel === '') return fail('channel_not_found');
        if (user === undefined || user === '') return fail('user_not_in_channel');
        const text = str(a['text']) ?? '';
        const blocks = arr(a['blocks']);
        if (text === '' && blocks.length === 0 && arr(a['attachments']).length === 0) return fail('no_text');
        const messageTs = this.nextTs();
        this.ephemerals.push({
          channel: this.resolveChannel(channel),
          user,
          text,
          blocks,
          threadTs: str(a['thread_ts']),
          messageTs,
        });
        return ok({ message_ts: messageTs });
      }

      case 'chat.getPermalink': {
        const channel = str(a['channel']);
        const ts = str(a['message_ts']);
        if (channel === undefined || ts === undefined) return fail('invalid_arguments');
        return ok({
          channel,
          permalink: `https://${this.teamDomain}.slack.com/archives/${channel}/p${ts.replace('.', '')}`,
        });
      }

      case 'conversations.info': {
        const channel = str(a['channel']);
        if (channel === undefined || channel === '') return fail('channel_not_found');
        const id = this.resolveChannel(channel);
        return ok({
          channel: {
            id,
            name: id === this.channelId ? this.channelName : id.toLowerCase(),
            is_channel: true,
            is_group: false,
            is_im: false,
            is_private: false,
            is_archived: false,
            is_member: true,
            created: this.tsBase,
            context_team_id: this.teamId,
          },
        });
      }

      case 'users.info': {
        const user = str(a['user']);
        if (user === undefined || !/^[UW]/.test(user)) return fail('user_not_found');
        const known = this.users[user];
        const name = this.userName(user);
        return ok({
          user: {
            id: user,
            team_id: this.teamId,
            name,
            real_name: known?.realName ?? name,
            is_bot: user === this.botUserId,
            is_admin: known?.isAdmin ?? false,
            deleted: false,
            tz: known?.tz ?? 'Europe/Paris',
            profile: { display_name: name, real_name: known?.realName ?? name },
          },
        });
      }

      case 'usergroups.users.list': {
        const group = str(a['usergroup']);
        const members = group !== undefined ? this.usergroups.get(group) : undefined;
        if (members === undefined) return fail('no_such_subteam');
        return ok({ users: [...members] });
      }

      case 'files.getUploadURLExternal': {
        const filename = str(a['filename']);
        const length = Number(str(a['length']));
        if (filename === undefined || filename === '') return fail('invalid_arguments');
        if (!Number.isFinite(length) || length <= 0) return fail('invalid_arguments');
        this.fileCounter += 1;
        const fileId = `F0FAKE${String(this.fileCounter).padStart(5, '0')}`;
        const uploadUrl = `${this.baseUrl}/upload/${fileId}`;
        this.uploads.push({
          fileId,
          filename,
          length,
          altText: str(a['alt_text']),
          uploadUrl,
          bytes: undefined,
          uploadedAt: undefined,
          completed: false,
          title: undefined,
          channelId: undefined,
          initialComment: undefined,
          threadTs: undefined,
        });
        return ok({ upload_url: uploadUrl, file_id: fileId });
      }

      case 'files.completeUploadExternal': {
        const files = arr(a['files']);
        if (files.length === 0) return fail('invalid_arguments');
        const channelId = str(a['channel_id']) ?? str(a['channels']);
        const initialComment = str(a['initial_comment']);
        const threadTs = str(a['thread_ts']);
        const done: FakeUpload[] = [];
        for (const f of files) {
          const id = f !== null && typeof f === 'object' ? str((f as { id?: unknown }).id) : undefined;
          const up = this.uploads.find((u) => u.fileId === id);
          if (up === undefined || up.bytes === undefined) return fail('file_not_found');
          const title = str((f as { title?: unknown }).title);
          up.title = title ?? up.filename;
          done.push(up);
        }
        for (const up of done) {
          up.completed = true;
          up.channelId = channelId;
          up.initialComment = initialComment;
          up.threadTs = threadTs;
        }
        if (channelId !== undefined && channelId !== '') {
          this.addMessage({
            channel: this.resolveChannel(channelId),
            text: initialComment ?? '',
            blocks: arr(a['blocks']),
            attachments: [],
            threadTs,
            user: this.botUserId,
            botId: this.botId,
            files: done.map((u) => u.fileId),
            source: 'files.completeUploadExternal',
          });
        }
        return ok({
          files: done.map((u) => ({
            id: u.fileId,
            name: u.filename,
            title: u.title,
            ...mimeOf(u.filename),
            size: u.bytes?.length ?? u.length,
            user: this.botUserId,
            url_private: `${this.baseUrl}/files/${u.fileId}/${encodeURIComponent(u.filename)}`,
            permalink: `https://${this.teamDomain}.slack.com/files/${this.botUserId}/${u.fileId}/${u.filename}`,
          })),
        });
      }

      default:
        return fail('unknown_method');
    }
  }

  private receiveUpload(fileId: string, parsed: ParsedBody): ApiResult {
    const up = this.uploads.find((u) => u.fileId === fileId);
    if (up === undefined) return { status: 404, body: { ok: false, error: 'file_not_found' } };
    // WebClient: multipart with a single binary part named `body`; a raw POST body is accepted too.
    const part = parsed.files['body'] ?? parsed.files['file'] ?? Object.values(parsed.files)[0];
    up.bytes = part !== undefined ? part.data : parsed.raw;
    up.uploadedAt = Date.now();
    parsed.args['file_id'] = fileId;
    parsed.args['bytes'] = up.bytes.length;
    return { body: { ok: true, length: up.bytes.length } };
  }

  private receiveResponse(id: string, parsed: ParsedBody, at: number): ApiResult {
    const target = this.targets.get(id);
    if (target === undefined) return { status: 404, body: { ok: false, error: 'expired_url' } };
    const body = { ...parsed.args };
    const response: FakeResponse = { id, url: target.url, kind: target.kind, envelopeId: target.envelopeId, body, at };
    this.responses.push(response);
    target.list.push(response);

    const text = str(body['text']);
    const blocks = body['blocks'] !== undefined ? arr(body['blocks']) : undefined;
    const original = target.messageTs !== undefined ? this.messages.get(target.messageTs) : undefined;
    if (bool(body['delete_original']) && original !== undefined) {
      this.messages.delete(original.ts);
    } else if (bool(body['replace_original']) && original !== undefined) {
      this.editMessage(original, text, blocks);
    } else if (body['response_type'] === 'in_channel') {
      this.addMessage({
        channel: target.channelId,
        text: text ?? '',
        blocks: blocks ?? [],
        attachments: arr(body['attachments']),
        threadTs: str(body['thread_ts']),
        user: this.botUserId,
        botId: this.botId,
        files: [],
        source: 'response_url',
      });
    }
    return { body: { ok: true } };
  }

  // ----- shutdown -------------------------------------------------------------------------------------------------

  close(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.waitForSocketClosed(opts.timeoutMs ?? 3000);
      } catch {
        // the client did not close (app not stopped?): terminate below
      }
      for (const ws of this.sockets) ws.terminate();
      this.sockets.clear();
      for (const [id, p] of this.pending) {
        clearTimeout(p.timer);
        p.reject(new Error(`fake Slack closed before envelope ${id} was acked`));
      }
      this.pending.clear();
      await new Promise<void>((resolve) => this.wss.close(() => resolve()));
      await new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        this.server.closeAllConnections();
      });
    })();
    return this.closing;
  }
}

/** Start a fake Slack on 127.0.0.1 (ephemeral port). Always `await fake.close()` (after `await app.stop()`). */
/** The environment that points rlwatch's Slack settings (Socket Mode) at `fake`. */
export const slackEnv = (fake: FakeSlack): Record<string, string> => ({
  SLACK_BOT_TOKEN: fake.botToken,
  SLACK_APP_TOKEN: fake.appToken,
  SLACK_API_URL: fake.apiUrl,
  SLACK_CHANNEL_ID: fake.channelId,
});

export async function startFakeSlack(opts: FakeSlackOptions = {}): Promise<FakeSlack> {
  const fake = new FakeSlackServer(opts);
  await fake.listen();
  return fake;
}
