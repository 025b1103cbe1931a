/**
 * What `rlwatch doctor` asks of each configured platform, without posting anything: its token, its channels and the
 * bot's rights there, its commands. Each check is ok, warn or fail; a failure says what to do about it. Network
 * checks give up after `t` milliseconds.
 */

import type { Config } from '../config/schema.ts';
import { UserError } from '../lib/errors.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// static: a dynamic import of this CommonJS package, in the bundle, yields only its default export
import { parse } from 'yaml';
import { PACKAGE_ROOT } from '../lib/paths.ts';
import { sectionOf, type Platform, type Route } from './platform.ts';

export type Status = 'ok' | 'warn' | 'fail';

export interface Check {
  /** what was checked: `config`, `database`, `discord channel 123...` */
  check: string;
  status: Status;
  detail: string;
  /** what to do about a failure or a warning, in plain words; null when there is nothing to do */
  fix: string | null;
}

export const ok = (check: string, detail: string): Check => ({ check, status: 'ok', detail, fix: null });
export const warn = (check: string, detail: string, fix: string | null): Check => ({
  check,
  status: 'warn',
  detail,
  fix,
});
export const fail = (check: string, detail: string, fix: string): Check => ({ check, status: 'fail', detail, fix });

/** At most a token's first 4 characters (its kind: `xoxb`, a Discord bot id's first digits) are ever shown. */
const hint = (secret: string): string => `${secret.slice(0, 4)}…`;

/** Why a request got no answer: a refused connection, a name that does not resolve, a timeout. */
function netReason(err: unknown, t: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${t / 1000} s`;
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

const channelsOf = (fallback: string | undefined, routes: readonly Route[]): string[] => [
  ...new Set([...(fallback ? [fallback] : []), ...routes.map((r) => r.channel)]),
];

/** A platform's checks, given its settings and its config section. */
// biome-ignore lint/suspicious/noExplicitAny: each probe takes its own platform's settings type
type Probe = (settings: any, config: Config, t: number, section: { routes: Route[] }) => Promise<Check[]>;

/** Each configured platform's checks, side by side. */
export async function platformChecks(
  platforms: readonly Platform[],
  config: Config,
  env: NodeJS.ProcessEnv,
  t: number,
): Promise<Check[]> {
  const runs: Array<Promise<Check[]>> = [];
  for (const p of platforms) {
    let settings: unknown;
    try {
      settings = p.settings(sectionOf(config, p), env);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      runs.push(
        Promise.resolve([
          fail(p.id, err.message, 'set what it names, in .env or rlwatch.yaml (.env.example lists every variable)'),
        ]),
      );
      continue;
    }
    if (settings === null) continue;
    const probe = PROBES[p.id];
    runs.push(
      probe
        ? probe(settings, config, t, sectionOf(config, p) as { routes: Route[] })
        : Promise.resolve([
            warn(
              p.id,
              'configured; doctor has no check of its own for it',
              `rlwatch notify --test ${p.id} sends a test card`,
            ),
          ]),
    );
  }
  if (runs.length === 0) {
    return [
      warn(
        'chat',
        'no chat platform configured: alerts go to the terminal only',
        'fill in the variables in .env (rlwatch init --slack or --discord writes them, each with where to get it)',
      ),
    ];
  }
  return (await Promise.all(runs)).flat();
}

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: a platform API's JSON answer, read field by field as each probe expects
  body: any;
}

async function request(url: string, init: RequestInit, t: number): Promise<Answer> {
  const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(t) });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the status says enough
  }
  return { status: res.status, headers: res.headers, body };
}

// ----- Discord

interface DiscordSettings {
  token: string;
  apiUrl?: string;
  guildId?: string;
  channel?: string;
}
interface Overwrite {
  id: string;
  type: number;
  allow: string;
  deny: string;
}

/** The bot's permissions in a channel, as Discord works them out: the owner and Administrator have all; else
 * @everyone's and the member's roles, then the channel's overwrites for @everyone, for the roles, for the member. */
function channelPermissions(
  guild: { id: string; owner_id: string; roles: Array<{ id: string; permissions: string }> },
  member: { roles: string[] },
  overwrites: readonly Overwrite[],
  userId: string,
  admin: bigint,
): bigint {
  const all = (1n << 64n) - 1n;
  if (guild.owner_id === userId) return all;
  const rolePerms = new Map(guild.roles.map((r) => [r.id, BigInt(r.permissions)]));
  let perms = rolePerms.get(guild.id) ?? 0n;
  for (const r of member.roles) perms |= rolePerms.get(r) ?? 0n;
  if (perms & admin) return all;
  const byId = new Map(overwrites.map((o) => [o.id, o]));
  const apply = (allow: bigint, deny: bigint): void => {
    perms = (perms & ~deny) | allow;
  };
  const everyone = byId.get(guild.id);
  if (everyone) apply(BigInt(everyone.allow), BigInt(everyone.deny));
  let allow = 0n;
  let deny = 0n;
  for (const r of member.roles) {
    const o = byId.get(r);
    if (o) (allow |= BigInt(o.allow)), (deny |= BigInt(o.deny));
  }
  apply(allow, deny);
  const own = byId.get(userId);
  if (own) apply(BigInt(own.allow), BigInt(own.deny));
  return perms;
}

/** Channel types a bot can post a card in: text, announcement, and threads. */
const POSTABLE = new Set([0, 5, 10, 11, 12]);
const THREADS = new Set([10, 11, 12]);

async function discordProbe(
  s: DiscordSettings,
  _config: Config,
  t: number,
  section: { routes: Route[] },
): Promise<Check[]> {
  const base = `${(s.apiUrl ?? 'https://discord.com/api').replace(/\/+$/, '')}/v10`;
  const get = (path: string): Promise<Answer> =>
    request(base + path, { headers: { authorization: `Bot ${s.token}` } }, t);
  let me: Answer;
  try {
    me = await get('/users/@me');
  } catch (err) {
    return [
      fail(
        'discord',
        `cannot reach Discord at ${new URL(base).host}: ${netReason(err, t)}`,
        "check this machine's network to Discord (a proxy, a firewall), and DISCORD_API_URL if set",
      ),
    ];
  }
  if (me.status === 401) {
    return [
      fail(
        'discord token',
        `Discord refused DISCORD_TOKEN (${hint(s.token)})`,
        'copy the bot token again from the Developer Portal (your application > Bot > Reset Token) into DISCORD_TOKEN in .env',
      ),
    ];
  }
  if (me.status !== 200)
    return [
      fail(
        'discord token',
        `Discord answered HTTP ${me.status} to GET /users/@me`,
        'try again in a minute; if it stays, check DISCORD_API_URL',
      ),
    ];
  const botId = String(me.body.id);
  const checks = [ok('discord token', `accepted: the bot is ${String(me.body.username)} (${botId})`)];

  const { PermissionFlagsBits: P } = await import('discord.js');
  const needed: Array<[string, bigint]> = [
    ['View Channel', P.ViewChannel],
    ['Send Messages', P.SendMessages],
    ['Embed Links', P.EmbedLinks],
    ['Attach Files', P.AttachFiles],
    ['Read Message History', P.ReadMessageHistory],
  ];
  const bits = needed.reduce((b, [, bit]) => b | bit, P.UseApplicationCommands);
  const app = await get('/applications/@me').catch(() => null);
  const appId = app?.status === 200 ? String(app.body.id) : botId;
  const invite = `https://discord.com/oauth2/authorize?client_id=${appId}&scope=bot%20applications.commands&permissions=${bits}`;
  const reinvite = `invite the bot with this link (it asks for the rights rlwatch needs): ${invite}`;

  const { discordAdvice } = await import('./discord/advice.ts');
  const channelCheck = async (id: string): Promise<Check> => {
    const label = `discord channel ${id}`;
    const c = await get(`/channels/${encodeURIComponent(id)}`);
    if (c.status === 404)
      return fail(
        label,
        'no channel has this id (Unknown Channel)',
        discordAdvice(new Error('Unknown Channel')) as string,
      );
    if (c.status === 403)
      return fail(
        label,
        'the bot cannot see this channel (Missing Access)',
        `${discordAdvice(new Error('Missing Access'))}; or ${reinvite}`,
      );
    if (c.status !== 200)
      return fail(
        label,
        `Discord answered HTTP ${c.status} to GET /channels/${id}`,
        'check the id in DISCORD_CHANNEL_ID or discord.channel',
      );
    const name = `#${String(c.body.name ?? id)}`;
    if (!POSTABLE.has(c.body.type))
      return fail(label, `${name} is not a text channel`, discordAdvice(new Error('not a text channel')) as string);
    const guildId = String(c.body.guild_id);
    // a thread takes its rights from the channel it is in
    const parent = THREADS.has(c.body.type) && c.body.parent_id ? await get(`/channels/${c.body.parent_id}`) : c;
    const [g, m] = await Promise.all([get(`/guilds/${guildId}`), get(`/guilds/${guildId}/members/${botId}`)]);
    if (m.status === 404) return fail(label, `the bot is not a member of ${name}'s server`, reinvite);
    if (g.status !== 200 || m.status !== 200 || parent.status !== 200) {
      return warn(
        label,
        `${name} found, but its server's roles could not be read (HTTP ${g.status}/${m.status}): the bot's rights are not checked`,
        'rlwatch notify --test discord posts a test card there',
      );
    }
    const perms = channelPermissions(g.body, m.body, parent.body.permission_overwrites ?? [], botId, P.Administrator);
    const missing = needed.filter(([, bit]) => (perms & bit) === 0n).map(([n]) => n);
    if (missing.length > 0) {
      return fail(
        label,
        `the bot lacks ${missing.join(', ')} in ${name}`,
        `give the bot's role ${missing.join(', ')} in ${name} (Edit Channel > Permissions), or ${reinvite}`,
      );
    }
    return ok(label, `${name}: the bot can view, send, embed links and attach files there`);
  };
  const channels = channelsOf(s.channel, section.routes);
  try {
    checks.push(...(await Promise.all(channels.map(channelCheck))));
    checks.push(await discordCommandsCheck(get, appId, s.guildId, reinvite));
  } catch (err) {
    checks.push(
      fail(
        'discord',
        `Discord stopped answering: ${netReason(err, t)}`,
        'run rlwatch doctor again; if it stays, check the network to Discord',
      ),
    );
  }
  checks.push(ok('discord invite', invite));
  return checks;
}

async function discordCommandsCheck(
  get: (path: string) => Promise<Answer>,
  appId: string,
  guildId: string | undefined,
  reinvite: string,
): Promise<Check> {
  const { COMMANDS } = await import('../interact/registry.ts');
  const expected = [...new Set(COMMANDS.map((c) => c.path[0]))];
  const r = await get(
    guildId ? `/applications/${appId}/guilds/${guildId}/commands` : `/applications/${appId}/commands`,
  );
  if (r.status === 403 && guildId)
    return fail(
      'discord commands',
      `the bot is not in the server DISCORD_GUILD_ID names (${guildId})`,
      `copy the server's id again (right-click the server > Copy Server ID), or ${reinvite}`,
    );
  if (r.status !== 200 || !Array.isArray(r.body))
    return warn('discord commands', `the slash commands could not be listed (HTTP ${r.status})`, null);
  const have = new Set((r.body as Array<{ name: string }>).map((c) => c.name));
  const missing = expected.filter((n) => !have.has(n));
  if (missing.length === 0)
    return ok(
      'discord commands',
      `the ${expected.length} slash commands are registered ${guildId ? 'in the server' : 'globally'}`,
    );
  const later = guildId
    ? ''
    : '; global commands can take up to an hour to show: set DISCORD_GUILD_ID to register them in your server at once';
  return warn(
    'discord commands',
    `${missing.length} of ${expected.length} slash commands not registered yet (${missing.map((n) => `/${n}`).join(' ')})`,
    `rlwatch start registers them when it connects${later}`,
  );
}

// ----- Slack

interface SlackSettings {
  botToken: string;
  appToken?: string;
  signingSecret?: string;
  apiUrl?: string;
  channel?: string;
}

/** The bot scopes slack-app-manifest.yaml asks for. */
function manifestScopes(): string[] {
  const manifest = parse(readFileSync(join(PACKAGE_ROOT, 'slack-app-manifest.yaml'), 'utf8')) as {
    oauth_config: { scopes: { bot: string[] } };
  };
  return manifest.oauth_config.scopes.bot;
}

async function slackProbe(
  s: SlackSettings,
  _config: Config,
  t: number,
  section: { routes: Route[] },
): Promise<Check[]> {
  const base = (s.apiUrl ?? 'https://slack.com/api/').replace(/\/*$/, '/');
  const call = (method: string, token: string, args: Record<string, string> = {}): Promise<Answer> =>
    request(
      base + method,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(args).toString(),
      },
      t,
    );
  let auth: Answer;
  try {
    auth = await call('auth.test', s.botToken);
  } catch (err) {
    return [
      fail(
        'slack',
        `cannot reach Slack at ${new URL(base).host}: ${netReason(err, t)}`,
        "check this machine's network to Slack (a proxy, a firewall), and SLACK_API_URL if set",
      ),
    ];
  }
  if (auth.body?.ok !== true) {
    const error = String(auth.body?.error ?? `HTTP ${auth.status}`);
    return [
      fail(
        'slack token',
        `Slack refused SLACK_BOT_TOKEN (${hint(s.botToken)}): ${error}`,
        "copy the Bot User OAuth Token (xoxb-...) from your app's OAuth & Permissions page into SLACK_BOT_TOKEN in .env (a reinstalled or deleted app's old token is void)",
      ),
    ];
  }
  const checks = [ok('slack token', `accepted: ${String(auth.body.user ?? '?')} in ${String(auth.body.team ?? '?')}`)];

  const granted = auth.headers.get('x-oauth-scopes');
  if (granted === null) {
    checks.push(
      warn(
        'slack scopes',
        "Slack did not list the token's scopes",
        'rlwatch notify --test slack posts a card and an upload, which need them',
      ),
    );
  } else {
    const have = new Set(granted.split(',').map((x) => x.trim()));
    const missing = manifestScopes().filter((x) => !have.has(x));
    checks.push(
      missing.length > 0
        ? fail(
            'slack scopes',
            `the bot token lacks ${missing.join(', ')}`,
            'add them under OAuth & Permissions > Bot Token Scopes (slack-app-manifest.yaml lists every scope rlwatch uses), then reinstall the app to the workspace',
          )
        : ok('slack scopes', `the bot token has every scope slack-app-manifest.yaml asks for (${have.size} in all)`),
    );
  }

  const slack = section as { routes: Route[]; mode?: 'socket' | 'http' };
  const { slackAdvice } = await import('./slack/advice.ts');
  const channelCheck = async (id: string): Promise<Check> => {
    const label = `slack channel ${id}`;
    const r = await call('conversations.info', s.botToken, { channel: id });
    const error = r.body?.ok === true ? null : String(r.body?.error ?? `HTTP ${r.status}`);
    if (error === 'missing_scope') {
      return warn(
        label,
        'not looked up: that needs channels:read, which rlwatch does not otherwise need',
        'rlwatch notify --test slack posts there, and says if the app is not in the channel',
      );
    }
    if (error === 'channel_not_found')
      return fail(
        label,
        'no channel with this id that the app can see',
        slackAdvice(new Error('Slack: channel_not_found')) as string,
      );
    if (error !== null) return warn(label, `not looked up: ${error}`, 'rlwatch notify --test slack posts there');
    const name = `#${String(r.body.channel?.name ?? id)}`;
    if (r.body.channel?.is_archived)
      return fail(label, `${name} is archived`, slackAdvice(new Error('Slack: is_archived')) as string);
    if (r.body.channel?.is_member === false)
      return fail(label, `the app is not in ${name}`, slackAdvice(new Error('Slack: not_in_channel')) as string);
    return ok(label, `${name}: found, and the app is in it`);
  };
  try {
    checks.push(...(await Promise.all(channelsOf(s.channel, slack.routes).map(channelCheck))));
    checks.push(await slackReceiverCheck(s, slack.mode ?? 'socket', call));
  } catch (err) {
    checks.push(
      fail(
        'slack',
        `Slack stopped answering: ${netReason(err, t)}`,
        'run rlwatch doctor again; if it stays, check the network to Slack',
      ),
    );
  }
  return checks;
}

/** Socket Mode's app-level token (asked for a socket URL, which is not dialled), or HTTP mode's signing secret. */
async function slackReceiverCheck(
  s: SlackSettings,
  mode: 'socket' | 'http',
  call: (method: string, token: string) => Promise<Answer>,
): Promise<Check> {
  if (mode === 'http') {
    return s.signingSecret
      ? ok('slack app', "slack.mode is http, with SLACK_SIGNING_SECRET (Slack must reach this machine's slack.port)")
      : fail(
          'slack app',
          'slack.mode is http but SLACK_SIGNING_SECRET is empty',
          'copy Basic Information > App Credentials > Signing Secret into SLACK_SIGNING_SECRET in .env',
        );
  }
  const fix =
    "in your app's Basic Information > App-Level Tokens, generate a token with connections:write and put it (xapp-...) in SLACK_APP_TOKEN in .env";
  if (!s.appToken) return fail('slack app token', 'SLACK_APP_TOKEN is empty: Socket Mode needs it', fix);
  const r = await call('apps.connections.open', s.appToken);
  if (r.body?.ok === true) return ok('slack app token', 'accepted: Socket Mode can connect');
  return fail(
    'slack app token',
    `Slack refused SLACK_APP_TOKEN (${hint(s.appToken)}): ${String(r.body?.error ?? `HTTP ${r.status}`)}`,
    fix,
  );
}

// ----- Telegram

interface TelegramSettings {
  token: string;
  apiUrl: string;
  chats: string[];
}

async function telegramProbe(s: TelegramSettings, _config: Config, t: number): Promise<Check[]> {
  // the token is in the path: no URL of these requests is ever shown
  const call = (method: string, args: Record<string, string> = {}): Promise<Answer> =>
    request(
      `${s.apiUrl}/bot${s.token}/${method}`,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) },
      t,
    );
  let me: Answer;
  try {
    me = await call('getMe');
  } catch (err) {
    return [
      fail(
        'telegram',
        `cannot reach Telegram at ${new URL(s.apiUrl).host}: ${netReason(err, t)}`,
        "check this machine's network to Telegram, and TELEGRAM_API_URL if set",
      ),
    ];
  }
  if (me.body?.ok !== true) {
    return [
      fail(
        'telegram token',
        `Telegram refused TELEGRAM_BOT_TOKEN (${hint(s.token)}): HTTP ${me.status}`,
        'copy the token @BotFather gave (/mybots > your bot > API Token) into TELEGRAM_BOT_TOKEN in .env',
      ),
    ];
  }
  const checks = [ok('telegram token', `accepted: the bot is @${String(me.body.result?.username ?? '?')}`)];
  try {
    checks.push(
      ...(await Promise.all(
        s.chats.map(async (chat) => {
          const r = await call('getChat', { chat_id: chat });
          if (r.body?.ok === true)
            return ok(
              `telegram chat ${chat}`,
              `found: ${String(r.body.result?.title ?? r.body.result?.username ?? chat)}`,
            );
          return fail(
            `telegram chat ${chat}`,
            `Telegram: ${String(r.body?.description ?? `HTTP ${r.status}`)}`,
            "add the bot to the chat and check the id in TELEGRAM_CHAT_ID or telegram.channel (a group's id starts with -)",
          );
        }),
      )),
    );
  } catch (err) {
    checks.push(fail('telegram', `Telegram stopped answering: ${netReason(err, t)}`, 'run rlwatch doctor again'));
  }
  return checks;
}

// ----- email

interface EmailSettings {
  host: string;
  port: number;
  secure: boolean;
  auth?: { user: string; pass: string };
}

async function emailProbe(s: EmailSettings, _config: Config, t: number): Promise<Check[]> {
  const { createTransport } = await import('nodemailer');
  const transport = createTransport({
    host: s.host,
    port: s.port,
    secure: s.secure,
    auth: s.auth,
    connectionTimeout: t,
    greetingTimeout: t,
    socketTimeout: t,
  });
  const where = `${s.host}:${s.port}`;
  try {
    await transport.verify();
    return [
      ok(
        'email',
        `${where} accepts a connection${s.auth ? ` and the login of ${s.auth.user}` : ' (no login configured)'}`,
      ),
    ];
  } catch (err) {
    const e = err as Error & { code?: string; response?: string };
    if (e.code === 'EAUTH') {
      return [
        fail(
          'email',
          `${where} refused the login of ${s.auth?.user ?? '(none)'}: ${e.response ?? e.message}`,
          'check SMTP_USER and SMTP_PASS in .env (many providers want an app password here)',
        ),
      ];
    }
    return [
      fail(
        'email',
        `cannot talk to ${where}: ${e.code ?? e.message}`,
        'check SMTP_HOST and SMTP_PORT, and SMTP_SECURE (true for port 465, false for 587 with STARTTLS)',
      ),
    ];
  } finally {
    transport.close();
  }
}

// ----- webhooks

const URL_VARIABLE: Record<string, string> = {
  webhook: 'WEBHOOK_URL',
  teams: 'TEAMS_WEBHOOK_URL',
  mattermost: 'MATTERMOST_WEBHOOK_URL',
  feishu: 'FEISHU_WEBHOOK_URL',
};

/** Each URL answers a HEAD request (nothing is posted); any HTTP status counts, as the host is reached. The URL is
 * a credential (whoever has it may post), so only its host is shown. */
function hookProbe(id: string): Probe {
  return (s: { urls: Map<string, string> }, _config, t) =>
    Promise.all(
      [...s.urls].map(async ([name, url]): Promise<Check> => {
        const label = `${id} ${name}`;
        const where = name === 'default' ? (URL_VARIABLE[id] ?? `${id}.urls`) : `${id}.urls.${name}`;
        let host: string;
        try {
          host = new URL(url).host;
        } catch {
          return fail(label, 'not a URL', `check ${where}`);
        }
        try {
          const res = await fetch(url, { method: 'HEAD', redirect: 'manual', signal: AbortSignal.timeout(t) });
          await res.body?.cancel();
          return ok(label, `${host} answers (HTTP ${res.status} to a HEAD request; nothing was posted)`);
        } catch (err) {
          return fail(
            label,
            `${host} does not answer: ${netReason(err, t)}`,
            `check the URL in ${where}, and that this machine can reach ${host} (a proxy, a firewall)`,
          );
        }
      }),
    );
}

const PROBES: Record<string, Probe> = {
  discord: discordProbe,
  slack: slackProbe,
  telegram: telegramProbe,
  email: emailProbe,
  webhook: hookProbe('webhook'),
  teams: hookProbe('teams'),
  mattermost: hookProbe('mattermost'),
  feishu: hookProbe('feishu'),
};

// ---------------------------------------------------------------------------------------------------- output
