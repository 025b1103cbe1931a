/**
 * The Slack bot (Bolt, over HTTP or Socket Mode): posts and edits alert cards, uploads charts, and answers the slash
 * commands and buttons through the one interaction path.
 */
import {
  App,
  HTTPModuleFunctions,
  HTTPReceiver,
  isValidSlackRequest,
  LogLevel,
  SocketModeReceiver,
  type RespondFn,
  type SlashCommand,
} from '@slack/bolt';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebClient } from '@slack/web-api';
import { UserError } from '../../lib/errors.ts';
import { COMMANDS } from '../../interact/registry.ts';
import type { Reply } from '../../render/reply.ts';
import type { Notification } from '../../engine/notification.ts';
import type { Log } from '../../lib/log.ts';
import { BUTTON_ID } from '../../notify/buttons.ts';
import { noteParts, resolvedReply, type AlertCard } from '../../notify/cards.ts';
import { keepConnecting, type ConnectHooks, type Connector } from '../../notify/connect.ts';
import { deliverCards, recapture, shownNow } from '../../notify/delivery.ts';
import { mentionOf } from '../../notify/mentions.ts';
import { DeliveryError, type Target } from '../../notify/dispatcher.ts';
import { buttonRequest, changedSomething, interact, mayAct, type Asker } from '../../interact/interaction.ts';
import { codeBlock, cut, joinWithin, tailBlock } from '../../notify/limits.ts';
import { allDestinations, commandPlaces, NOT_HERE, quietOf, targetName, type Place } from '../../notify/routing.ts';
import { renderLineChart } from '../../render/chart.ts';
import { alertChartPng, warmCardCharts } from '../../render/chartOnce.ts';
import type { Config } from '../../config/schema.ts';
import type { StoreContract } from '../../store/contract.ts';
import type { SlackMention, SlackSection, SlackSettings } from './index.ts';
import { slackEscape } from './mrkdwn.ts';
import { slackAdvice } from './advice.ts';
import { HeldReplies, HOLD_MS, SHARE_ID, withWhat } from './share.ts';

/** Block Kit's limits (https://api.slack.com/reference/block-kit/blocks). */
const LIMIT = { header: 150, section: 3000, fields: 10, field: 2000, blocks: 50, context: 2000 };
/** how long a user-group membership lookup is trusted */
const GROUP_CACHE_MS = 5 * 60_000;

export interface SlackOptions extends SlackSettings {
  section: SlackSection;
  store: StoreContract;
  /** the loaded config: commands answer with its report ranges and rule overrides */
  config?: Config;
  log: Log;
  /** an ack or a mute queued edits of its cards: deliver them now (PlatformContext.deliverNow) */
  deliverNow?: () => void;
}

/** Slack errors no retry can heal: the channel, the bot's membership, its scopes or its token. */
const PERMANENT = new Set([
  'channel_not_found',
  'not_in_channel',
  'is_archived',
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'no_permission',
  'missing_scope',
  'restricted_action',
  'invalid_blocks',
  'invalid_arguments',
  'msg_too_long',
  'no_text',
  'not_allowed_token_type',
  'team_access_not_granted',
]);
/** Of those, the ones that mean the token itself is refused: fatal at start-up. */
const TOKEN_REFUSED = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'not_allowed_token_type',
]);

/** How far ahead of the clock a request's X-Slack-Request-Timestamp may be (Bolt refuses those over 5 min old). */
const FUTURE_S = 60;
/** How long a signature is remembered, to refuse a replay of it: Bolt's window for a request's age, plus the future. */
const REPLAY_WINDOW_MS = (5 * 60 + FUTURE_S) * 1000;
/** Signatures remembered at most: past it the oldest is forgotten (10,000 requests in 6 min is not one team's use). */
const REPLAY_MEMORY = 10_000;

/**
 * Bolt's HTTP receiver with two more refusals (401, before Bolt reads the request): a timestamp more than FUTURE_S
 * ahead of the clock, and an exact replay of a correctly signed request within the window. A signature is
 * remembered only once it is checked, so that forged ones cannot crowd out the real ones.
 */
function guardedReceiver(signingSecret: string, log: Log): HTTPReceiver {
  const receiver = new HTTPReceiver({ signingSecret, logLevel: LogLevel.ERROR });
  const seen = new Map<string, number>(); // signature -> when it may be forgotten
  const bolt = receiver.requestListener;
  const refuse = (res: ServerResponse, why: string): void => {
    log.warn(`slack: request refused: ${why}`);
    res.writeHead(401).end();
  };
  receiver.requestListener = (req: IncomingMessage, res: ServerResponse) => {
    const signature = req.headers['x-slack-signature'];
    const stamp = Number(req.headers['x-slack-request-timestamp']);
    if (req.method !== 'POST' || typeof signature !== 'string') return bolt(req, res);
    if (stamp > Date.now() / 1000 + FUTURE_S) return refuse(res, 'its timestamp is in the future');
    void (async () => {
      const buffered = await HTTPModuleFunctions.bufferIncomingMessage(req); // Bolt reads it from there
      const now = Date.now();
      const headers = { 'x-slack-signature': signature, 'x-slack-request-timestamp': stamp };
      if (isValidSlackRequest({ signingSecret, body: buffered.rawBody.toString(), headers, nowMilliseconds: now })) {
        // oldest first (all are kept as long): the expired, and the oldest when full, are forgotten
        for (const [sig, until] of seen) {
          if (until > now && seen.size < REPLAY_MEMORY) break;
          seen.delete(sig);
        }
        if (seen.has(signature)) return refuse(res, 'a replay of a request already answered');
        seen.set(signature, now + REPLAY_WINDOW_MS);
      }
      bolt(buffered, res);
    })().catch((err: Error) => {
      log.warn(`slack: request failed: ${err.message}`);
      if (!res.headersSent) res.writeHead(400).end();
    });
  };
  return receiver;
}

/** A Block Kit block, loosely typed: the layouts here are checked by the tests against what Slack accepts. */
interface Block {
  type: string;
  [key: string]: unknown;
}
/** A button click, as the handlers need it. */
interface Click {
  actionId: string;
  value: string;
  user: { id: string; name: string };
  place: Place;
  channel: string;
  /** the message the button is on (none for a private answer's) */
  ts: string;
  respond: RespondFn;
  client: WebClient;
}

/** Show examples on an alert card: `examples:<alertId>` */
const EXAMPLES_ID = /^examples:(\d+)$/;

/** Says `text` (mrkdwn, escaped by the caller) to the clicker alone, leaving the message clicked as it is. */
const whisper = async (respond: RespondFn, text: string): Promise<void> =>
  void (await respond({ response_type: 'ephemeral', replace_original: false, text: cut(text, LIMIT.section) }));

const mrkdwn = (text: string): Block => ({ type: 'section', text: { type: 'mrkdwn', text: cut(text, LIMIT.section) } });

/** A Reply as Block Kit: header, fields, text, code blocks. */
export function replyBlocks(reply: Reply): Block[] {
  const blocks: Block[] = [{ type: 'header', text: { type: 'plain_text', text: cut(reply.title, LIMIT.header) } }];
  if (reply.fields.length > 0) {
    for (let i = 0; i < reply.fields.length; i += LIMIT.fields) {
      blocks.push({
        type: 'section',
        fields: reply.fields.slice(i, i + LIMIT.fields).map((f) => ({
          type: 'mrkdwn',
          text: cut(`*${slackEscape(f.name)}*\n${slackEscape(f.value)}`, LIMIT.field),
        })),
      });
    }
  }
  // lines that name people are plain_text, which Slack never parses: mrkdwn has no escape for emphasis
  const plain = (reply.names ?? []).some((n) => n !== '' && reply.lines.some((l) => l.includes(n)));
  const text = joinWithin(
    reply.lines.map((l) => cut(plain ? l : slackEscape(l), 500)),
    '\n',
    LIMIT.section,
  );
  const plainText = { type: 'section', text: { type: 'plain_text', text: cut(text, LIMIT.section), emoji: false } };
  if (text) blocks.push(plain ? plainText : mrkdwn(text));
  for (const b of reply.blocks ?? []) {
    const code = slackEscape(b.code);
    blocks.push(
      mrkdwn(
        `${cut(slackEscape(b.title), 300)}\n${b.tail ? tailBlock(code.split('\n'), 2500) : codeBlock(code, 1500)}`,
      ),
    );
  }
  return blocks.slice(0, LIMIT.blocks);
}

/** A card's note as context elements. A Slack user who acked is shown by their mention (`<@U…>`, written by
 * rlwatch from Slack's user id), which Slack renders as their current name. Any other acker's name is a
 * plain_text element: mrkdwn has no escape for emphasis, and `*boss*` must not show as the bold word boss.
 * An ack comment, and the rest of the note, are untrusted text like any other. */
function noteElements(c: AlertCard): Array<{ type: 'mrkdwn' | 'plain_text'; text: string; emoji?: boolean }> {
  const { before, name, after } = noteParts(c);
  const bold = (t: string): string => (t.trim() === '' ? '' : `*${slackEscape(t.trim())}*`);
  if (name !== null && c.ackedBy && /^<@[A-Z0-9]+>$/.test(c.ackedBy)) {
    return [{ type: 'mrkdwn', text: `*${slackEscape(before)}${c.ackedBy}${slackEscape(after)}*` }];
  }
  return [
    { type: 'mrkdwn' as const, text: bold(before) },
    ...(name === null ? [] : [{ type: 'plain_text' as const, text: name, emoji: false }]),
    { type: 'mrkdwn' as const, text: bold(after) },
  ].filter((e) => e.text !== '');
}

/** Alert cards as Block Kit, each with its buttons (or, once acked or resolved, a note instead). */
export function cardBlocks(cards: readonly AlertCard[]): Block[] {
  const blocks: Block[] = [];
  for (const c of cards) {
    if (blocks.length > 0) blocks.push({ type: 'divider' });
    blocks.push({ type: 'header', text: { type: 'plain_text', text: cut(c.title, LIMIT.header) } });
    blocks.push(mrkdwn(slackEscape(c.summary)));
    if (c.evidence)
      blocks.push(
        mrkdwn(`${cut(slackEscape(c.evidence.title), 200)}\n${tailBlock(c.evidence.lines.map(slackEscape), 2500)}`),
      );
    blocks.push({
      type: 'section',
      fields: c.fields
        .slice(0, LIMIT.fields)
        .map((f) => ({ type: 'mrkdwn', text: `*${f.name}*\n${slackEscape(f.value)}` })),
    });
    const context = [
      ...(c.sparkline ? [{ type: 'mrkdwn' as const, text: `\`${slackEscape(c.sparkline)}\`` }] : []),
      ...(c.note ? noteElements(c) : []),
    ];
    const elements = context.map((e) => ({ ...e, text: cut(e.text, LIMIT.context) }));
    if (elements.length > 0) blocks.push({ type: 'context', elements });
    // the generations are behind a button (two code blocks per alert are a screen of scrolling on a phone): the
    // card says they exist, with their rewards
    if (c.examples.length > 0) {
      const line = `Generations: ${c.examples.map((e) => e.title).join(' · ')}`;
      blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: cut(slackEscape(line), LIMIT.context) }] });
    }
    const live = c.buttons.filter((b) => !b.disabled);
    const show = c.examples.length > 0 ? [{ id: `examples:${c.alertId}`, label: 'Show examples' }] : [];
    if (live.length + show.length > 0) {
      blocks.push({
        type: 'actions',
        block_id: `alert-${c.alertId}`,
        elements: [...live, ...show].map((b) => ({
          type: 'button',
          action_id: b.id,
          value: b.id,
          text: { type: 'plain_text', text: b.label },
          ...(b.id.startsWith('ack') ? { style: 'primary' } : {}),
        })),
      });
    }
  }
  return blocks.slice(0, LIMIT.blocks);
}

/** A card's generations, for the one who pressed Show examples. */
export function exampleBlocks(c: AlertCard): Block[] {
  return c.examples.map((e) => mrkdwn(`${cut(slackEscape(e.title), 300)}\n${codeBlock(slackEscape(e.code), 1500)}`));
}

/** A read command's answer, to the caller alone, with the button that posts it to the channel. */
export function privateBlocks(reply: Reply, token: string): Block[] {
  const note = `Only you can see this. Post to channel shows it to everyone${withWhat(reply)}.`;
  return [
    ...replyBlocks(reply).slice(0, LIMIT.blocks - 2),
    { type: 'context', elements: [{ type: 'mrkdwn', text: note }] },
    {
      type: 'actions',
      block_id: 'share',
      elements: [
        { type: 'button', action_id: SHARE_ID, value: token, text: { type: 'plain_text', text: 'Post to channel' } },
      ],
    },
  ];
}

/** The answer as posted for everyone, saying who shared it (`<@U…>`, Slack's id of the clicker). */
export function sharedBlocks(reply: Reply, userId: string): Block[] {
  return [
    ...replyBlocks(reply).slice(0, LIMIT.blocks - 1),
    { type: 'context', elements: [{ type: 'mrkdwn', text: `shared by <@${userId}>` }] },
  ];
}

/** The reply in a resolved alert's thread, escaped: a run name or summary pings no one. */
export const resolvedText = (cards: readonly AlertCard[]): string =>
  cards.map((c) => slackEscape(resolvedReply(c))).join('\n');

/** The text a notification (and a lock screen) shows: each card's title, which says "resolved" when it is. */
export const fallback = (cards: readonly AlertCard[]): string =>
  cards.map((c) => slackEscape(`${c.title}: ${c.summary}`)).join('\n');

/** The control sequences of a configured mention: the only ones a message's text and blocks hold unescaped. */
export function mentionText(m: SlackMention): string {
  return [
    ...m.users.map((id) => `<@${id}>`),
    ...m.groups.map((id) => `<!subteam^${id}>`),
    ...(m.here ? ['<!here>'] : []),
    ...(m.channel ? ['<!channel>'] : []),
  ].join(' ');
}

/** A message's text and blocks with the mention, when one pages: first in the text (the push notification) and as a
 * block of its own above the cards (what the channel shows). */
export function pagedMessage(cards: readonly AlertCard[], m: SlackMention | null): { text: string; blocks: Block[] } {
  if (!m) return { text: fallback(cards), blocks: cardBlocks(cards) };
  const who = mentionText(m);
  return { text: `${who} ${fallback(cards)}`, blocks: [mrkdwn(who), ...cardBlocks(cards)].slice(0, LIMIT.blocks) };
}

interface WebApiError {
  code?: string;
  retryAfter?: number;
  statusCode?: number;
  message?: string;
  data?: { error?: string };
}

const isClientError = (status: number | undefined): boolean =>
  status !== undefined && status >= 400 && status < 500 && status !== 429;

/** An HTTP 4xx (other than 429) or one of the PERMANENT error codes: retrying cannot help. */
const isPermanent = (e: WebApiError): boolean =>
  (e.code === 'slack_webapi_platform_error' && PERMANENT.has(e.data?.error ?? '')) ||
  (e.code === 'slack_webapi_http_error' && isClientError(e.statusCode));

/** A Web API failure as a delivery error: a rate limit carries Slack's Retry-After; a permanent one says so. */
function deliveryError(err: unknown): Error {
  const e = err as WebApiError;
  if (e.code === 'slack_webapi_rate_limited_error')
    return new DeliveryError('Slack rate limit', (e.retryAfter ?? 1) * 1000);
  if (e.code?.startsWith('slack_webapi_')) {
    return new DeliveryError(`Slack: ${e.data?.error ?? e.message ?? e.code}`, undefined, isPermanent(e));
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** A refused token at start-up, as the one line the user needs. */
function tokenRefused(err: Error): Error | null {
  const e = err as WebApiError;
  const refused =
    (e.code === 'slack_webapi_platform_error' && TOKEN_REFUSED.has(e.data?.error ?? '')) ||
    (e.code === 'slack_webapi_http_error' && (e.statusCode === 401 || e.statusCode === 403));
  if (!refused) return null;
  return new UserError(
    `Slack refused the token (${e.data?.error ?? `HTTP ${e.statusCode}`}): check SLACK_BOT_TOKEN and SLACK_APP_TOKEN, then start again`,
  );
}

/**
 * The Slack bot: Bolt in Socket Mode (outbound only) or with its HTTP receiver; slash commands from the
 * shared tree, alert messages with buttons that update in place, charts uploaded with files.uploadV2.
 */
export class SlackBot {
  readonly app: App;
  private readonly channels: string[];
  /** where commands are taken from, and what each channel sees */
  private readonly places: (channel: string) => Place;
  /** the workspace of the token (auth.test): commands from another are refused */
  private team: string | undefined;
  private readonly groupCache = new Map<string, { users: string[]; at: number }>();
  /** auth.test passed: alerts can be posted */
  private connected = false;
  private listening = false;
  private connector: Connector | null = null;
  /** read commands' private answers, until posted to the channel */
  private readonly held = new HeldReplies();

  constructor(private readonly opts: SlackOptions) {
    const api = opts.apiUrl ? { slackApiUrl: opts.apiUrl } : {};
    const clientOptions = {
      ...api,
      // bounded: one delivery never sits inside the client's own retries (10 over ~30 min by default);
      // the outbox retries it
      retryConfig: { retries: opts.retries ?? 0 },
      timeout: opts.timeoutMs ?? 10_000,
      // rate limits go back to the dispatcher, which keeps the row and waits Retry-After
      rejectRateLimitedCalls: true,
    };
    const socket = opts.section.mode === 'socket';
    if (socket && !opts.appToken)
      throw new UserError(
        'SLACK_APP_TOKEN is needed for Socket Mode (or set slack.mode: http with SLACK_SIGNING_SECRET)',
      );
    if (!socket && !opts.signingSecret) throw new UserError('SLACK_SIGNING_SECRET is needed for slack.mode: http');
    // The socket's own client keeps redialling after an outage (a failed redial is an unhandled rejection in
    // @slack/socket-mode), so it gets its own patient retries, unlike the calls that deliver alerts.
    const receiver = socket
      ? new SocketModeReceiver({
          appToken: opts.appToken!,
          logLevel: LogLevel.ERROR,
          installerOptions: {
            clientOptions: { ...api, retryConfig: { retries: 10_000, factor: 1.5, maxTimeout: 60_000 } },
          },
        })
      : guardedReceiver(opts.signingSecret!, opts.log);
    this.app = new App({
      token: opts.botToken,
      receiver,
      logLevel: LogLevel.ERROR,
      clientOptions,
      // checked in start(), where a failure is an error we can report, not an unhandled rejection
      tokenVerificationEnabled: false,
    });
    this.channels = allDestinations(opts.section, opts.channel);
    this.places = commandPlaces(opts.section, opts.channel);
    for (const word of new Set(COMMANDS.map((c) => c.path[0]))) {
      this.app.command(`/${word}`, async ({ command, ack, respond, client }) => {
        await ack(); // within Slack's 3 s, before any work
        await this.onCommand(word, command, respond, client).catch((err: Error) =>
          this.opts.log.warn(`slack: /${word} failed: ${err.message}`),
        );
      });
    }
    this.onClick(BUTTON_ID, (click) => this.onButton(click));
    this.onClick(EXAMPLES_ID, (click) => this.onExamples(click));
    this.onClick(SHARE_ID, (click) => this.onShare(click));
    this.app.error(async (err) => this.opts.log.warn(`slack: ${err.message}`));
  }

  /** Checks the token (auth.test: from then on alerts can be posted), then opens the socket or the HTTP port. */
  async start(): Promise<void> {
    await this.checkToken();
    await this.listen();
  }

  /**
   * Starts in the background, retrying while Slack is unreachable; `onUp` as soon as alerts can be posted
   * (the socket may still be dialling). A refused token is fatal: retrying cannot help.
   */
  connect(hooks: ConnectHooks): void {
    void warmCardCharts();
    this.connector = keepConnecting({
      platform: 'Slack',
      attempt: async () => {
        if (!this.connected) {
          await this.checkToken();
          hooks.onUp();
        }
        await this.listen();
      },
      fatal: tokenRefused,
      onFatal: hooks.onFatal,
      log: this.opts.log,
    });
  }

  /** connected and listening for commands (alerts may go out earlier: once the token is checked) */
  get ready(): boolean {
    return this.listening;
  }

  async stop(): Promise<void> {
    this.connector?.stop();
    // the HTTP receiver refuses to stop if it never started; the socket one just gives up dialling
    if (this.opts.section.mode === 'socket' || this.listening) await this.app.stop();
  }

  private async checkToken(): Promise<void> {
    const auth = await this.app.client.auth.test();
    this.team = auth.team_id;
    this.connected = true;
    this.opts.log.info(
      `slack: connected as ${auth.user ?? auth.user_id} (${this.opts.section.mode}); alerts to ${this.channels.join(', ') || 'no channel'}`,
    );
  }

  private async listen(): Promise<void> {
    if (this.opts.section.mode === 'socket') await this.app.start();
    else await this.app.start(this.opts.section.port);
    this.listening = true;
  }

  targets(): Target[] {
    return this.channels.map((channel) => ({
      name: targetName('slack', channel),
      deliver: (n, key, runId, urgency) => this.deliver(channel, n, key, runId, urgency),
      edits: true,
      quiet: quietOf(this.opts.section, channel),
    }));
  }

  private async deliver(channel: string, n: Notification, key: string, runId: number, urgency: number): Promise<void> {
    if (!this.connected) throw new DeliveryError('not connected to Slack yet');
    const client = this.app.client;
    const paging = (cards: readonly AlertCard[]): SlackMention | null => mentionOf(this.opts.section, channel, cards);
    try {
      await deliverCards(
        this.opts.store.chat,
        targetName('slack', channel),
        n,
        { key, runId },
        {
          // an edit never touches the charts: they were uploaded once, with the post
          edit: async (ts, cards) =>
            void (await client.chat.update({ channel, ts, ...pagedMessage(cards, paging(cards)) })),
          post: async (cards) =>
            String((await client.chat.postMessage({ channel, ...pagedMessage(cards, paging(cards)) })).ts),
          afterPost: (ts, cards) => this.uploadCharts(channel, ts, cards, urgency),
          replyResolved: async (ts, cards) =>
            String((await client.chat.postMessage({ channel, thread_ts: ts, text: resolvedText(cards) })).ts),
        },
      );
    } catch (err) {
      throw deliveryError(err);
    }
  }

  /** The burst's charts, rendered once, as one message in the alert's thread: in the channel every alert was two
   * posts. Charts that cannot be uploaded are not worth re-posting the alert for: they are logged and skipped. */
  private async uploadCharts(channel: string, ts: string, cards: readonly AlertCard[], urgency: number): Promise<void> {
    const charted = cards.filter((c) => c.chart);
    if (charted.length === 0) return;
    try {
      const file_uploads = await Promise.all(
        charted.map(async (c) => ({
          file: await alertChartPng(c.chart!, urgency),
          filename: `chart-${c.alertId}.png`,
          title: c.chart!.title,
          alt_text: `chart of ${c.chart!.title}`,
        })),
      );
      const names = charted.map((c) => `#${c.alertId} ${c.chart!.title}`).join(', ');
      const initial_comment = slackEscape(`${charted.length > 1 ? 'Charts' : 'Chart'} of ${names}`);
      await this.app.client.files.uploadV2({ channel_id: channel, thread_ts: ts, initial_comment, file_uploads });
    } catch (err) {
      const ids = charted.map((c) => `#${c.alertId}`).join(', ');
      this.opts.log.warn(`slack: charts of alerts ${ids} not uploaded: ${(err as Error).message}`);
    }
  }

  /** The caller, for the shared interaction path: recorded as their mention, shown by the name the payload
   * carries (a slash command's `user_name`, an action's `user.username`). */
  private asker(user: { id: string; name: string }, place: Place, client: WebClient): Asker {
    const { store, log } = this.opts;
    const config = this.opts.config;
    const mayWrite = () => this.allowed(user.id, client);
    const rightsHint = 'slack.allow in rlwatch.yaml';
    return { store, config, log, user: `<@${user.id}>`, userName: user.name, mayWrite, rightsHint, ...place };
  }

  /** What a command from `channel` of workspace `team` may do: none from another workspace, a DM or a channel not
   * taken from. The workspace is the token's, known once auth.test has answered (before commands are heard). */
  private place(team: string | undefined, channel: string): Place {
    if (this.team === undefined || team !== this.team) return { refused: NOT_HERE };
    return this.places(channel);
  }

  private async onCommand(word: string, command: SlashCommand, respond: RespondFn, client: WebClient): Promise<void> {
    const words = [word, ...command.text.trim().split(/\s+/).filter(Boolean)];
    const place = this.place(command.team_id, command.channel_id);
    const answer = await interact(
      { words },
      this.asker({ id: command.user_id, name: command.user_name }, place, client),
    );
    if (changedSomething(answer)) this.opts.deliverNow?.();
    if (!answer.ok)
      return void (await respond({
        response_type: 'ephemeral',
        text: cut(slackEscape(answer.message), LIMIT.section),
      }));
    const reply = answer.reply;
    if (answer.spec.access === 'read') {
      // to the caller alone; the button posts it for everyone
      const token = this.held.keep({ reply, user: command.user_id, channel: command.channel_id });
      return void (await respond({
        response_type: 'ephemeral',
        text: slackEscape(reply.title),
        blocks: privateBlocks(reply, token),
      }));
    }
    // an ack or a mute is said where it was asked: the team sees who silenced what
    await respond({ response_type: 'in_channel', text: slackEscape(reply.title), blocks: replyBlocks(reply) });
    await this.uploadFiles(client, command.channel_id, reply);
  }

  /** A reply's chart and report file, in `thread` when given. */
  private async uploadFiles(client: WebClient, channel: string, reply: Reply, thread?: string): Promise<void> {
    const where = thread ? { channel_id: channel, thread_ts: thread } : { channel_id: channel };
    if (reply.chart) {
      await client.files.uploadV2({
        ...where,
        file: await renderLineChart(reply.chart),
        filename: 'chart.png',
        title: reply.chart.title,
      });
    }
    if (reply.attachment)
      await client.files.uploadV2({
        ...where,
        file: Buffer.from(reply.attachment.content),
        filename: reply.attachment.name,
        title: 'full report',
      });
  }

  /** Button clicks of `actionId`s matching `pattern`: acked at once; a click that fails is said to the clicker. */
  private onClick(pattern: RegExp | string, handle: (click: Click) => Promise<void>): void {
    this.app.action(pattern, async ({ ack, body, action, respond: say, client }) => {
      await ack();
      // the clicker is told of a failure only when they heard nothing: after "Acked", a card edit that failed is
      // the log's business
      let answered = false;
      const respond: RespondFn = async (message) => {
        const sent: unknown = await say(message);
        answered = true;
        return sent;
      };
      const b = body as {
        user: { id: string; username?: string; name?: string; team_id?: string };
        team?: { id: string } | null;
        channel?: { id: string };
        message?: { ts: string };
      };
      const a = action as { action_id: string; value?: string };
      const channel = b.channel?.id ?? '';
      const click: Click = {
        actionId: a.action_id,
        value: a.value ?? '',
        user: { id: b.user.id, name: b.user.username ?? b.user.name ?? '' },
        place: this.place(b.team?.id ?? b.user.team_id, channel),
        channel,
        ts: b.message?.ts ?? '',
        respond,
        client,
      };
      await handle(click).catch(async (err: Error) => {
        this.opts.log.warn(`slack: button ${a.action_id} failed: ${err.message}`);
        if (!answered)
          await whisper(say, "Sorry, that click failed on rlwatch's side; its log says why.").catch(() => {});
      });
    });
  }

  private async onButton({ actionId, user, place, channel, ts, respond, client }: Click): Promise<void> {
    const request = buttonRequest(actionId);
    if (!request) return;
    const answer = await interact(request, this.asker(user, place, client));
    if (!answer.ok) return whisper(respond, slackEscape(answer.message));
    // the clicker hears what their click did (the card's change is for everyone, and a mute changes no card
    // that is already muted); then the card is captured anew and re-rendered, its chart left as uploaded, and its
    // other cards (other channels, other platforms) are edited from the outbox
    await whisper(respond, slackEscape([answer.reply.title, ...answer.reply.lines].join('\n')));
    try {
      const cards = await recapture(this.opts.store, targetName('slack', channel), ts);
      if (cards) await client.chat.update({ channel, ts, text: fallback(cards), blocks: cardBlocks(cards) });
    } finally {
      this.opts.deliverNow?.();
    }
  }

  /** Show examples: the card's generations, as posted (redacted), to the clicker alone. */
  private async onExamples({ actionId, place, channel, ts, respond }: Click): Promise<void> {
    if (place.refused !== undefined) return whisper(respond, slackEscape(place.refused));
    const id = Number(EXAMPLES_ID.exec(actionId)?.[1]);
    const card = (await shownNow(this.opts.store.chat, targetName('slack', channel), ts))?.find(
      (c) => c.alertId === id,
    );
    if (!card || card.examples.length === 0 || !place.seesRun(card.run)) {
      return whisper(respond, 'This card no longer holds its generations: /examples reads them from the run.');
    }
    const text = slackEscape(`Generations of alert #${id} (${card.run})`);
    await respond({ response_type: 'ephemeral', replace_original: false, text, blocks: exampleBlocks(card) });
  }

  /** Post to channel: the held answer, for everyone, attributed; its chart and file in the post's thread. */
  private async onShare({ value, user, place, channel, respond, client }: Click): Promise<void> {
    if (place.refused !== undefined) return whisper(respond, slackEscape(place.refused));
    const held = this.held.get(value);
    // the answer went to its asker alone, in one channel: anything else is not a click on it
    if (!held || held.user !== user.id || held.channel !== channel || !/^[UW][A-Z0-9]+$/.test(user.id)) {
      return whisper(
        respond,
        `This answer is no longer held (for ${HOLD_MS / 60_000} min, and not across a restart): ask again.`,
      );
    }
    const { reply } = held;
    let ts: string;
    try {
      const text = `${slackEscape(reply.title)} (shared by <@${user.id}>)`;
      ts = String((await client.chat.postMessage({ channel, text, blocks: sharedBlocks(reply, user.id) })).ts);
    } catch (err) {
      const e = deliveryError(err);
      const advice = slackAdvice(e);
      return whisper(respond, slackEscape(`Not posted: ${e.message}${advice ? `: ${advice}` : ''}`));
    }
    this.held.drop(value);
    // the private answer becomes the acknowledgement: no button left to post it twice
    await respond({ response_type: 'ephemeral', replace_original: true, text: 'Posted to the channel.' });
    await this.uploadFiles(client, channel, reply, ts);
  }

  /** Listed by user id, or a member of a listed user group (looked up, and cached for a few minutes). */
  private async allowed(userId: string, client: WebClient): Promise<boolean> {
    const { users, groups } = this.opts.section.allow;
    if (users.length === 0 && groups.length === 0) return true;
    if (users.includes(userId)) return true;
    const mine: string[] = [];
    for (const g of groups) {
      let cached = this.groupCache.get(g);
      if (!cached || Date.now() - cached.at > GROUP_CACHE_MS) {
        const r = await client.usergroups.users.list({ usergroup: g });
        cached = { users: (r.users as string[] | undefined) ?? [], at: Date.now() };
        this.groupCache.set(g, cached);
      }
      if (cached.users.includes(userId)) mine.push(g);
    }
    return mayAct(users, groups, userId, mine);
  }
}
