/**
 * `rlwatch doctor`: what a first `start` depends on, checked without posting anything anywhere: the config file, the
 * database, the watch roots (and the inotify budget), and each configured chat platform's token, channel and rights.
 * Each check is ok, warn or fail; a failure says what to do about it. Network checks give up after `timeoutMs`.
 */
import { accessSync, constants, existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { UserError } from '../errors.ts';
import { discover, isIgnoredDir } from '../ingest/discover/discover.ts';
import { locateRun, visibleName } from '../ingest/discover/runLocator.ts';
import { MIGRATIONS_DIR, PACKAGE_ROOT } from '../paths.ts';
import { PLATFORMS } from '../platforms/index.ts';
import { sectionOf, type Route } from '../platforms/platform.ts';
import { databaseError } from '../store/dbErrors.ts';
import { dbLocation, isPostgresUrl } from '../store/open.ts';
import { redactUrl } from '../store/pg/url.ts';

export type Status = 'ok' | 'warn' | 'fail';

export interface Check {
  /** what was checked: `config`, `database`, `discord channel 123...` */
  check: string;
  status: Status;
  detail: string;
  /** what to do about a failure or a warning, in plain words; null when there is nothing to do */
  fix: string | null;
}

export interface DoctorOptions {
  /** `--config` */
  config?: string;
  /** `--db` */
  db?: string;
  env?: NodeJS.ProcessEnv;
  /** how long each network check may take */
  timeoutMs?: number;
  /** where the kernel says how many inotify watches a user may hold */
  watchesFile?: string;
}

const NET_TIMEOUT_MS = 5000;
const WATCHES_FILE = '/proc/sys/fs/inotify/max_user_watches';

const ok = (check: string, detail: string): Check => ({ check, status: 'ok', detail, fix: null });
const warn = (check: string, detail: string, fix: string | null): Check => ({ check, status: 'warn', detail, fix });
const fail = (check: string, detail: string, fix: string): Check => ({ check, status: 'fail', detail, fix });

/** At most a token's first 4 characters (its kind: `xoxb`, a Discord bot id's first digits) are ever shown. */
const hint = (secret: string): string => `${secret.slice(0, 4)}…`;

/** Runs every check; the platforms' network checks run side by side. */
export async function doctor(opts: DoctorOptions = {}): Promise<Check[]> {
  const env = opts.env ?? process.env;
  const t = opts.timeoutMs ?? NET_TIMEOUT_MS;
  const { checks, config } = await configChecks(opts.config, env);
  // without a config that loads, `start` stops there: what follows would be checked against the wrong settings
  if (!config) return checks;
  checks.push(await databaseCheck(dbLocation(opts.db, config, env), t));
  checks.push(...rootChecks(config, opts.watchesFile ?? WATCHES_FILE));
  checks.push(...(await platformChecks(config, env, t)));
  return checks;
}

async function configChecks(explicit: string | undefined, env: NodeJS.ProcessEnv): Promise<{ checks: Check[]; config: Config | null }> {
  const warnings: string[] = [];
  try {
    const { config, file } = await loadConfig(explicit, env, (line) => warnings.push(line));
    const checks = [file
      ? ok('config', `${file} loads`)
      : warn('config', 'no rlwatch.yaml here (nor --config, RLWATCH_CONFIG): running on the defaults', 'rlwatch init writes one')];
    for (const w of warnings) checks.push(warn('config', w.replace(/^warning: /, ''), null));
    return { checks, config };
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    return {
      checks: [fail('config', err.message, 'correct the field named (rlwatch.example.yaml and docs/configuration.md describe each), then run rlwatch doctor again')],
      config: null,
    };
  }
}

// ---------------------------------------------------------------------------------------------------- database

const WHERE_DB = 'choose another place with --db, RLWATCH_DB or db: in rlwatch.yaml';

async function databaseCheck(where: string, t: number): Promise<Check> {
  return isPostgresUrl(where) ? postgresCheck(where, t) : sqliteCheck(where);
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** The versions of the numbered migration files in `dir`. */
function migrationVersions(dir: string): number[] {
  return readdirSync(dir).map((n) => /^(\d+)_.*\.sql$/.exec(n)?.[1]).filter((v) => v !== undefined).map(Number);
}

/** Where the schema of a database with `applied` stands against the migration files of `dir`. */
function schemaCheck(label: string, applied: readonly number[], dir: string): Check {
  const known = migrationVersions(dir);
  const newer = applied.filter((v) => !known.includes(v));
  if (newer.length > 0) {
    return fail('database', `${label} was written by a newer rlwatch (schema changes ${newer.join(', ')} unknown to this one)`, 'upgrade rlwatch, or give this one a database of its own');
  }
  const pending = known.filter((v) => !applied.includes(v)).length;
  if (applied.length === 0) return ok('database', `${label}: a new database; start creates its tables`);
  return ok('database', pending > 0
    ? `${label}: ${pending} schema change${pending === 1 ? '' : 's'} to apply, which start does`
    : `${label}: schema current (version ${Math.max(...known)})`);
}

async function sqliteCheck(path: string): Promise<Check> {
  if (!existsSync(path)) {
    let dir = dirname(path);
    while (!existsSync(dir)) dir = dirname(dir);
    return writable(dir)
      ? ok('database', `${path} does not exist yet: start creates it`)
      : fail('database', `cannot create ${path}: ${dir} is not writable`, WHERE_DB);
  }
  if (!writable(path) || !writable(dirname(path))) {
    return fail('database', `${path} is not writable (SQLite writes the file and its -wal beside it)`, `give yourself write access to ${path} and its folder, or ${WHERE_DB}`);
  }
  const [{ default: Database }, { SQLITE_ADDON }] = await Promise.all([import('better-sqlite3'), import('../store/sqliteAddon.ts')]);
  let db;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 5000, nativeBinding: SQLITE_ADDON });
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    const applied = table ? (db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]) : [];
    return schemaCheck(path, applied, MIGRATIONS_DIR);
  } catch (err) {
    return fail('database', databaseError(err, path)?.message ?? `${path}: ${(err as Error).message}`, WHERE_DB);
  } finally {
    db?.close();
  }
}

async function postgresCheck(url: string, t: number): Promise<Check> {
  const [{ default: pg }, { PG_MIGRATIONS_DIR }] = await Promise.all([import('pg'), import('../store/pg/connect.ts')]);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: t, query_timeout: t });
  client.on('error', () => {}); // a connection dropped after the answer: the result is in already
  const label = redactUrl(url);
  try {
    await client.connect();
    const table = await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations') AS t");
    const applied = table.rows[0]?.t
      ? (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version))
      : [];
    return schemaCheck(label, applied, PG_MIGRATIONS_DIR);
  } catch (err) {
    return fail('database', `cannot use PostgreSQL at ${label}: ${(err as Error).message}`, 'check that the server is up and reachable from here, and the URL\'s host, port, user, password and database');
  } finally {
    await client.end().catch(() => {});
  }
}

// ------------------------------------------------------------------------------------------------- watch roots

/** The directories `start` would watch below `root` (one inotify watch each), walked as TreeWatch walks them. */
function countDirs(root: string, depth: number, ignore: readonly string[]): number {
  const seen = new Set<string>();
  const walk = (dir: string, level: number): void => {
    let entries;
    try {
      const real = realpathSync.native(dir);
      if (seen.has(real)) return;
      seen.add(real);
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory() && level < depth && !isIgnoredDir(e.name, ignore)) walk(join(dir, e.name), level + 1);
    }
  };
  walk(root, 0);
  return seen.size;
}

function rootChecks(config: Config, watchesFile: string): Check[] {
  const { roots, depth, ignore, poll } = config.watch;
  if (roots.length === 0) {
    return [warn('watch roots', 'watch.roots is empty: start then needs the directories on its command line (rlwatch start DIR)', 'set watch.roots in rlwatch.yaml to the folder(s) your trainers write their logs under')];
  }
  const checks: Check[] = [];
  let dirs = 0;
  for (const root of roots) {
    const label = `watch root ${root}`;
    try {
      if (!statSync(root).isDirectory()) {
        checks.push(fail(label, 'not a directory', 'set watch.roots to the folder above your runs'));
        continue;
      }
      readdirSync(root);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      checks.push(code === 'ENOENT'
        ? fail(label, 'does not exist', `create it (mkdir -p ${root}), or set watch.roots in rlwatch.yaml to where your trainers write logs`)
        : fail(label, `cannot read it (${code ?? (err as Error).message})`, `give yourself read access to ${root}`));
      continue;
    }
    const { files } = discover(root, depth, ignore, roots);
    const runs = new Set(files.map((f) => locateRun(root, f).name)).size;
    const n = countDirs(root, depth, ignore);
    dirs += n;
    checks.push(files.length === 0
      ? warn(label, `no log file here yet (${n} director${n === 1 ? 'y' : 'ies'} looked at)`, 'nothing to do if no run has started: start picks runs up as they appear (docs/formats.md lists the files rlwatch reads)')
      : ok(label, `${runs} run${runs === 1 ? '' : 's'}, ${files.length} file${files.length === 1 ? '' : 's'} named like logs, ${n} director${n === 1 ? 'y' : 'ies'}`));
  }
  if (poll) {
    checks.push(ok('inotify', 'watch.poll is on: no inotify watches used'));
    return checks;
  }
  let max: number;
  try {
    max = Number(readFileSync(watchesFile, 'utf8').trim());
  } catch {
    return checks; // not Linux: no such budget
  }
  const raise = 'raise it: sudo sysctl fs.inotify.max_user_watches=524288 (and the same line in /etc/sysctl.d/ to keep it), or set watch.poll: true';
  if (dirs > max) checks.push(fail('inotify', `${dirs} directories to watch, over fs.inotify.max_user_watches (${max})`, raise));
  else if (dirs > max / 2) checks.push(warn('inotify', `${dirs} directories to watch, more than half of fs.inotify.max_user_watches (${max}), which every program of this user shares`, raise));
  else checks.push(ok('inotify', `${dirs} directories to watch, within fs.inotify.max_user_watches (${max})`));
  return checks;
}

// --------------------------------------------------------------------------------------------------- platforms

/** Why a request got no answer: a refused connection, a name that does not resolve, a timeout. */
function netReason(err: unknown, t: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${t / 1000} s`;
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

const channelsOf = (fallback: string | undefined, routes: readonly Route[]): string[] =>
  [...new Set([...(fallback ? [fallback] : []), ...routes.map((r) => r.channel)])];

type Probe = (settings: any, config: Config, t: number) => Promise<Check[]>;

async function platformChecks(config: Config, env: NodeJS.ProcessEnv, t: number): Promise<Check[]> {
  const runs: Array<Promise<Check[]>> = [];
  for (const p of PLATFORMS) {
    let settings: unknown;
    try {
      settings = p.settings(sectionOf(config, p), env);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      runs.push(Promise.resolve([fail(p.id, err.message, 'set what it names, in .env or rlwatch.yaml (.env.example lists every variable)')]));
      continue;
    }
    if (settings === null) continue;
    const probe = PROBES[p.id];
    runs.push(probe
      ? probe(settings, config, t)
      : Promise.resolve([warn(p.id, 'configured; doctor has no check of its own for it', `rlwatch notify --test ${p.id} sends a test card`)]));
  }
  if (runs.length === 0) {
    return [warn('chat', 'no chat platform configured: alerts go to the terminal only', 'fill in the variables in .env (rlwatch init --slack or --discord writes them, each with where to get it)')];
  }
  return (await Promise.all(runs)).flat();
}

interface Answer {
  status: number;
  headers: Headers;
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

interface DiscordSettings { token: string; apiUrl?: string; guildId?: string; channel?: string }
interface Overwrite { id: string; type: number; allow: string; deny: string }

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

async function discordProbe(s: DiscordSettings, config: Config, t: number): Promise<Check[]> {
  const base = `${(s.apiUrl ?? 'https://discord.com/api').replace(/\/+$/, '')}/v10`;
  const get = (path: string): Promise<Answer> => request(base + path, { headers: { authorization: `Bot ${s.token}` } }, t);
  let me: Answer;
  try {
    me = await get('/users/@me');
  } catch (err) {
    return [fail('discord', `cannot reach Discord at ${new URL(base).host}: ${netReason(err, t)}`, 'check this machine\'s network to Discord (a proxy, a firewall), and DISCORD_API_URL if set')];
  }
  if (me.status === 401) {
    return [fail('discord token', `Discord refused DISCORD_TOKEN (${hint(s.token)})`, 'copy the bot token again from the Developer Portal (your application > Bot > Reset Token) into DISCORD_TOKEN in .env')];
  }
  if (me.status !== 200) return [fail('discord token', `Discord answered HTTP ${me.status} to GET /users/@me`, 'try again in a minute; if it stays, check DISCORD_API_URL')];
  const botId = String(me.body.id);
  const checks = [ok('discord token', `accepted: the bot is ${visibleName(String(me.body.username))} (${botId})`)];

  const { PermissionFlagsBits: P } = await import('discord.js');
  const needed: Array<[string, bigint]> = [
    ['View Channel', P.ViewChannel], ['Send Messages', P.SendMessages], ['Embed Links', P.EmbedLinks],
    ['Attach Files', P.AttachFiles], ['Read Message History', P.ReadMessageHistory],
  ];
  const bits = needed.reduce((b, [, bit]) => b | bit, P.UseApplicationCommands);
  const app = await get('/applications/@me').catch(() => null);
  const appId = app?.status === 200 ? String(app.body.id) : botId;
  const invite = `https://discord.com/oauth2/authorize?client_id=${appId}&scope=bot%20applications.commands&permissions=${bits}`;
  const reinvite = `invite the bot with this link (it asks for the rights rlwatch needs): ${invite}`;

  const { discordAdvice } = await import('../platforms/discord/advice.ts');
  const channelCheck = async (id: string): Promise<Check> => {
    const label = `discord channel ${id}`;
    const c = await get(`/channels/${encodeURIComponent(id)}`);
    if (c.status === 404) return fail(label, 'no channel has this id (Unknown Channel)', discordAdvice(new Error('Unknown Channel')) as string);
    if (c.status === 403) return fail(label, 'the bot cannot see this channel (Missing Access)', `${discordAdvice(new Error('Missing Access'))}; or ${reinvite}`);
    if (c.status !== 200) return fail(label, `Discord answered HTTP ${c.status} to GET /channels/${id}`, 'check the id in DISCORD_CHANNEL_ID or discord.channel');
    const name = `#${visibleName(String(c.body.name ?? id))}`;
    if (!POSTABLE.has(c.body.type)) return fail(label, `${name} is not a text channel`, discordAdvice(new Error('not a text channel')) as string);
    const guildId = String(c.body.guild_id);
    // a thread takes its rights from the channel it is in
    const parent = THREADS.has(c.body.type) && c.body.parent_id ? await get(`/channels/${c.body.parent_id}`) : c;
    const [g, m] = await Promise.all([get(`/guilds/${guildId}`), get(`/guilds/${guildId}/members/${botId}`)]);
    if (m.status === 404) return fail(label, `the bot is not a member of ${name}'s server`, reinvite);
    if (g.status !== 200 || m.status !== 200 || parent.status !== 200) {
      return warn(label, `${name} found, but its server's roles could not be read (HTTP ${g.status}/${m.status}): the bot's rights are not checked`, 'rlwatch notify --test discord posts a test card there');
    }
    const perms = channelPermissions(g.body, m.body, parent.body.permission_overwrites ?? [], botId, P.Administrator);
    const missing = needed.filter(([, bit]) => (perms & bit) === 0n).map(([n]) => n);
    if (missing.length > 0) {
      return fail(label, `the bot lacks ${missing.join(', ')} in ${name}`, `give the bot's role ${missing.join(', ')} in ${name} (Edit Channel > Permissions), or ${reinvite}`);
    }
    return ok(label, `${name}: the bot can view, send, embed links and attach files there`);
  };
  const channels = channelsOf(s.channel, sectionOf(config, PLATFORM_BY_ID.discord!).routes as Route[]);
  try {
    checks.push(...(await Promise.all(channels.map(channelCheck))));
    checks.push(await discordCommandsCheck(get, appId, s.guildId, reinvite));
  } catch (err) {
    checks.push(fail('discord', `Discord stopped answering: ${netReason(err, t)}`, 'run rlwatch doctor again; if it stays, check the network to Discord'));
  }
  checks.push(ok('discord invite', invite));
  return checks;
}

async function discordCommandsCheck(get: (path: string) => Promise<Answer>, appId: string, guildId: string | undefined, reinvite: string): Promise<Check> {
  const { COMMANDS } = await import('../commands/registry.ts');
  const expected = [...new Set(COMMANDS.map((c) => c.path[0]))];
  const r = await get(guildId ? `/applications/${appId}/guilds/${guildId}/commands` : `/applications/${appId}/commands`);
  if (r.status === 403 && guildId) return fail('discord commands', `the bot is not in the server DISCORD_GUILD_ID names (${guildId})`, `copy the server's id again (right-click the server > Copy Server ID), or ${reinvite}`);
  if (r.status !== 200 || !Array.isArray(r.body)) return warn('discord commands', `the slash commands could not be listed (HTTP ${r.status})`, null);
  const have = new Set((r.body as Array<{ name: string }>).map((c) => c.name));
  const missing = expected.filter((n) => !have.has(n));
  if (missing.length === 0) return ok('discord commands', `the ${expected.length} slash commands are registered ${guildId ? 'in the server' : 'globally'}`);
  const later = guildId ? '' : '; global commands can take up to an hour to show: set DISCORD_GUILD_ID to register them in your server at once';
  return warn('discord commands', `${missing.length} of ${expected.length} slash commands not registered yet (${missing.map((n) => `/${n}`).join(' ')})`, `rlwatch start registers them when it connects${later}`);
}

// ----- Slack

interface SlackSettings { botToken: string; appToken?: string; signingSecret?: string; apiUrl?: string; channel?: string }

/** The bot scopes slack-app-manifest.yaml asks for. */
async function manifestScopes(): Promise<string[]> {
  const { parse } = await import('yaml');
  const manifest = parse(readFileSync(join(PACKAGE_ROOT, 'slack-app-manifest.yaml'), 'utf8')) as { oauth_config: { scopes: { bot: string[] } } };
  return manifest.oauth_config.scopes.bot;
}

async function slackProbe(s: SlackSettings, config: Config, t: number): Promise<Check[]> {
  const base = (s.apiUrl ?? 'https://slack.com/api/').replace(/\/*$/, '/');
  const call = (method: string, token: string, args: Record<string, string> = {}): Promise<Answer> =>
    request(base + method, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(args).toString(),
    }, t);
  let auth: Answer;
  try {
    auth = await call('auth.test', s.botToken);
  } catch (err) {
    return [fail('slack', `cannot reach Slack at ${new URL(base).host}: ${netReason(err, t)}`, 'check this machine\'s network to Slack (a proxy, a firewall), and SLACK_API_URL if set')];
  }
  if (auth.body?.ok !== true) {
    const error = String(auth.body?.error ?? `HTTP ${auth.status}`);
    return [fail('slack token', `Slack refused SLACK_BOT_TOKEN (${hint(s.botToken)}): ${visibleName(error)}`, 'copy the Bot User OAuth Token (xoxb-...) from your app\'s OAuth & Permissions page into SLACK_BOT_TOKEN in .env (a reinstalled or deleted app\'s old token is void)')];
  }
  const checks = [ok('slack token', `accepted: ${visibleName(String(auth.body.user ?? '?'))} in ${visibleName(String(auth.body.team ?? '?'))}`)];

  const granted = auth.headers.get('x-oauth-scopes');
  if (granted === null) {
    checks.push(warn('slack scopes', 'Slack did not list the token\'s scopes', 'rlwatch notify --test slack posts a card and an upload, which need them'));
  } else {
    const have = new Set(granted.split(',').map((x) => x.trim()));
    const missing = (await manifestScopes()).filter((x) => !have.has(x));
    checks.push(missing.length > 0
      ? fail('slack scopes', `the bot token lacks ${missing.join(', ')}`, 'add them under OAuth & Permissions > Bot Token Scopes (slack-app-manifest.yaml lists every scope rlwatch uses), then reinstall the app to the workspace')
      : ok('slack scopes', `the bot token has every scope slack-app-manifest.yaml asks for (${have.size} in all)`));
  }

  const section = sectionOf(config, PLATFORM_BY_ID.slack!) as { routes: Route[]; mode: 'socket' | 'http' };
  const { slackAdvice } = await import('../platforms/slack/advice.ts');
  const channelCheck = async (id: string): Promise<Check> => {
    const label = `slack channel ${id}`;
    const r = await call('conversations.info', s.botToken, { channel: id });
    const error = r.body?.ok === true ? null : String(r.body?.error ?? `HTTP ${r.status}`);
    if (error === 'missing_scope') {
      return warn(label, 'not looked up: that needs channels:read, which rlwatch does not otherwise need', 'rlwatch notify --test slack posts there, and says if the app is not in the channel');
    }
    if (error === 'channel_not_found') return fail(label, 'no channel with this id that the app can see', slackAdvice(new Error('Slack: channel_not_found')) as string);
    if (error !== null) return warn(label, `not looked up: ${visibleName(error)}`, 'rlwatch notify --test slack posts there');
    const name = `#${visibleName(String(r.body.channel?.name ?? id))}`;
    if (r.body.channel?.is_archived) return fail(label, `${name} is archived`, slackAdvice(new Error('Slack: is_archived')) as string);
    if (r.body.channel?.is_member === false) return fail(label, `the app is not in ${name}`, slackAdvice(new Error('Slack: not_in_channel')) as string);
    return ok(label, `${name}: found, and the app is in it`);
  };
  try {
    checks.push(...(await Promise.all(channelsOf(s.channel, section.routes).map(channelCheck))));
    checks.push(await slackReceiverCheck(s, section.mode, call));
  } catch (err) {
    checks.push(fail('slack', `Slack stopped answering: ${netReason(err, t)}`, 'run rlwatch doctor again; if it stays, check the network to Slack'));
  }
  return checks;
}

/** Socket Mode's app-level token (asked for a socket URL, which is not dialled), or HTTP mode's signing secret. */
async function slackReceiverCheck(
  s: SlackSettings, mode: 'socket' | 'http', call: (method: string, token: string) => Promise<Answer>,
): Promise<Check> {
  if (mode === 'http') {
    return s.signingSecret
      ? ok('slack app', 'slack.mode is http, with SLACK_SIGNING_SECRET (Slack must reach this machine\'s slack.port)')
      : fail('slack app', 'slack.mode is http but SLACK_SIGNING_SECRET is empty', 'copy Basic Information > App Credentials > Signing Secret into SLACK_SIGNING_SECRET in .env');
  }
  const fix = 'in your app\'s Basic Information > App-Level Tokens, generate a token with connections:write and put it (xapp-...) in SLACK_APP_TOKEN in .env';
  if (!s.appToken) return fail('slack app token', 'SLACK_APP_TOKEN is empty: Socket Mode needs it', fix);
  const r = await call('apps.connections.open', s.appToken);
  if (r.body?.ok === true) return ok('slack app token', 'accepted: Socket Mode can connect');
  return fail('slack app token', `Slack refused SLACK_APP_TOKEN (${hint(s.appToken)}): ${visibleName(String(r.body?.error ?? `HTTP ${r.status}`))}`, fix);
}

// ----- Telegram

interface TelegramSettings { token: string; apiUrl: string; chats: string[] }

async function telegramProbe(s: TelegramSettings, _config: Config, t: number): Promise<Check[]> {
  // the token is in the path: no URL of these requests is ever shown
  const call = (method: string, args: Record<string, string> = {}): Promise<Answer> =>
    request(`${s.apiUrl}/bot${s.token}/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) }, t);
  let me: Answer;
  try {
    me = await call('getMe');
  } catch (err) {
    return [fail('telegram', `cannot reach Telegram at ${new URL(s.apiUrl).host}: ${netReason(err, t)}`, 'check this machine\'s network to Telegram, and TELEGRAM_API_URL if set')];
  }
  if (me.body?.ok !== true) {
    return [fail('telegram token', `Telegram refused TELEGRAM_BOT_TOKEN (${hint(s.token)}): HTTP ${me.status}`, 'copy the token @BotFather gave (/mybots > your bot > API Token) into TELEGRAM_BOT_TOKEN in .env')];
  }
  const checks = [ok('telegram token', `accepted: the bot is @${visibleName(String(me.body.result?.username ?? '?'))}`)];
  try {
    checks.push(...(await Promise.all(s.chats.map(async (chat) => {
      const r = await call('getChat', { chat_id: chat });
      if (r.body?.ok === true) return ok(`telegram chat ${chat}`, `found: ${visibleName(String(r.body.result?.title ?? r.body.result?.username ?? chat))}`);
      return fail(`telegram chat ${chat}`, `Telegram: ${visibleName(String(r.body?.description ?? `HTTP ${r.status}`))}`, 'add the bot to the chat and check the id in TELEGRAM_CHAT_ID or telegram.channel (a group\'s id starts with -)');
    }))));
  } catch (err) {
    checks.push(fail('telegram', `Telegram stopped answering: ${netReason(err, t)}`, 'run rlwatch doctor again'));
  }
  return checks;
}

// ----- email

interface EmailSettings { host: string; port: number; secure: boolean; auth?: { user: string; pass: string } }

async function emailProbe(s: EmailSettings, _config: Config, t: number): Promise<Check[]> {
  const { createTransport } = await import('nodemailer');
  const transport = createTransport({
    host: s.host, port: s.port, secure: s.secure, auth: s.auth, connectionTimeout: t, greetingTimeout: t, socketTimeout: t,
  });
  const where = `${s.host}:${s.port}`;
  try {
    await transport.verify();
    return [ok('email', `${where} accepts a connection${s.auth ? ` and the login of ${s.auth.user}` : ' (no login configured)'}`)];
  } catch (err) {
    const e = err as Error & { code?: string; response?: string };
    if (e.code === 'EAUTH') {
      return [fail('email', `${where} refused the login of ${s.auth?.user ?? '(none)'}: ${visibleName(e.response ?? e.message)}`, 'check SMTP_USER and SMTP_PASS in .env (many providers want an app password here)')];
    }
    return [fail('email', `cannot talk to ${where}: ${visibleName(e.code ?? e.message)}`, 'check SMTP_HOST and SMTP_PORT, and SMTP_SECURE (true for port 465, false for 587 with STARTTLS)')];
  } finally {
    transport.close();
  }
}

// ----- webhooks

const URL_VARIABLE: Record<string, string> = {
  webhook: 'WEBHOOK_URL', teams: 'TEAMS_WEBHOOK_URL', mattermost: 'MATTERMOST_WEBHOOK_URL', feishu: 'FEISHU_WEBHOOK_URL',
};

/** Each URL answers a HEAD request (nothing is posted); any HTTP status counts, as the host is reached. The URL is
 * a credential (whoever has it may post), so only its host is shown. */
function hookProbe(id: string): Probe {
  return (s: { urls: Map<string, string> }, _config, t) => Promise.all([...s.urls].map(async ([name, url]): Promise<Check> => {
    const label = `${id} ${name}`;
    const where = name === 'default' ? URL_VARIABLE[id] ?? `${id}.urls` : `${id}.urls.${name}`;
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
      return fail(label, `${host} does not answer: ${netReason(err, t)}`, `check the URL in ${where}, and that this machine can reach ${host} (a proxy, a firewall)`);
    }
  }));
}

const PLATFORM_BY_ID = Object.fromEntries(PLATFORMS.map((p) => [p.id, p]));

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

const MARK: Record<Status, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };

/** One line per check, a fix under each that has one, then the count and what to do next. Every text shown is
 * inert: a name read from a server or a folder cannot move the cursor or recolour the terminal. */
export function describeChecks(checks: readonly Check[]): string {
  const width = Math.min(32, Math.max(...checks.map((c) => c.check.length)));
  const lines = checks.flatMap((c) => [
    visibleName(`${MARK[c.status]}  ${c.check.padEnd(width)}  ${c.detail}`),
    ...(c.fix && c.status !== 'ok' ? [visibleName(`      fix: ${c.fix}`)] : []),
  ]);
  const failed = checks.filter((c) => c.status === 'fail').length;
  const warned = checks.filter((c) => c.status === 'warn').length;
  const warnings = `${warned} warning${warned === 1 ? '' : 's'}`;
  lines.push('', failed > 0
    ? `${failed} failed, ${warnings}: fix the failures above, then run rlwatch doctor again`
    : `nothing failed (${warnings}): next, rlwatch notify --test sends a test card, then rlwatch start`);
  return lines.join('\n');
}
