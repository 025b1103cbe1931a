import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { doctor, type Check } from '../../src/app/doctor.ts';
import { init } from '../../src/app/init.ts';
import { discordEnv, snowflake, startFakeDiscord } from '../fakes/discordServer.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { FakeTelegram } from '../fakes/telegramServer.ts';
import { slackEnv, startFakeSlack } from '../fakes/slackServer.ts';
import { learningLine, tempDir } from '../helpers.ts';
import { BIN, type CliResult } from '../integration/cli.ts';

/** Every platform's variables, so that none of the developer's leaks into a case. */
const PLATFORM_VARS = /^(DISCORD|SLACK|TELEGRAM|SMTP|EMAIL|WEBHOOK|TEAMS|MATTERMOST|FEISHU)_/;
const bare = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.keys(process.env)
      .filter((k) => PLATFORM_VARS.test(k))
      .map((k) => [k, undefined]),
  );

/** A folder as a user has it after `init`: an rlwatch.yaml watching ./runs, which holds one run's learning.log. */
function project(yaml = 'watch:\n  roots: [./runs]\n'): string {
  const dir = tempDir();
  mkdirSync(join(dir, 'runs', 'grpo-a'), { recursive: true });
  writeFileSync(join(dir, 'runs', 'grpo-a', 'learning.log'), `${[1, 2].map((i) => learningLine(i)).join('\n')}\n`);
  writeFileSync(join(dir, 'rlwatch.yaml'), yaml);
  return dir;
}

/** `bin/rlwatch doctor --json` in `cwd`, in the background: the fakes answer from this process meanwhile. */
function doctorCli(cwd: string, env: Record<string, string>, json = true): Promise<CliResult & { checks: Check[] }> {
  const child = spawn(BIN, ['doctor', ...(json ? ['--json'] : [])], {
    cwd,
    env: { ...process.env, RLWATCH_DB: undefined, RLWATCH_CONFIG: undefined, ...bare(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) =>
    child.once('close', (status) =>
      done({ status, stdout, stderr, checks: json ? (JSON.parse(stdout) as Check[]) : [] }),
    ),
  );
}

const byName = (checks: readonly Check[], name: string): Check | undefined => checks.find((c) => c.check === name);
const failed = (checks: readonly Check[]): string[] => checks.filter((c) => c.status === 'fail').map((c) => c.check);

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

/** Discord's permission bits (discord.com/developers/docs/topics/permissions): Embed Links is 1 << 14. */
const EMBED_LINKS = 1n << 14n;

describe('rlwatch doctor: Discord', () => {
  it('a good setup passes, posts nothing, and prints the invite link with the rights rlwatch needs', async () => {
    const fake = await startFakeDiscord();
    open.push(fake);
    const r = await doctorCli(project(), discordEnv(fake));
    expect(failed(r.checks)).toEqual([]);
    expect(r.status).toBe(0);
    expect(byName(r.checks, 'config')?.status).toBe('ok');
    expect(byName(r.checks, 'database')?.status).toBe('ok');
    expect(r.checks.find((c) => c.check.startsWith('watch root'))?.detail).toMatch(
      /^1 run, 1 file named like logs, 2 directories$/,
    );
    expect(byName(r.checks, 'discord token')).toMatchObject({ status: 'ok' });
    expect(byName(r.checks, `discord channel ${fake.channelId}`)).toMatchObject({ status: 'ok' });
    // nothing registered them yet: `start` does, so it is a warning, not a failure
    expect(byName(r.checks, 'discord commands')).toMatchObject({
      status: 'warn',
      fix: expect.stringContaining('rlwatch start registers them'),
    });
    // View Channel, Send Messages, Embed Links, Attach Files, Read Message History, Use Application Commands: the
    // number .env.example and docs/platforms/discord.md give
    expect(byName(r.checks, 'discord invite')?.detail).toBe(
      `https://discord.com/oauth2/authorize?client_id=${fake.applicationId}&scope=bot%20applications.commands&permissions=2147601408`,
    );
    expect(fake.requests.filter((q) => q.method !== 'GET')).toEqual([]);
    expect(r.stdout).not.toContain(fake.token);
  });

  it('slash commands registered in the server are said to be', async () => {
    const fake = await startFakeDiscord();
    open.push(fake);
    const { COMMANDS } = await import('../../src/interact/registry.ts');
    const names = [...new Set(COMMANDS.map((c) => c.path[0]))];
    const put = await fetch(`${fake.apiUrl}/v10/applications/${fake.applicationId}/guilds/${fake.guildId}/commands`, {
      method: 'PUT',
      headers: { authorization: `Bot ${fake.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(names.map((name) => ({ name, description: name, type: 1 }))),
    });
    expect(put.status).toBe(200);
    const r = await doctorCli(project(), discordEnv(fake));
    expect(byName(r.checks, 'discord commands')).toMatchObject({
      status: 'ok',
      detail: `the ${names.length} slash commands are registered in the server`,
    });
  });

  it('a wrong token is named, shown by its first 4 characters at most, with its fix; exit 1', async () => {
    const fake = await startFakeDiscord();
    open.push(fake);
    const wrong = 'MTIzwrong-token-that-is-secret';
    const r = await doctorCli(project(), { ...discordEnv(fake), DISCORD_TOKEN: wrong }, false);
    expect(r.status).toBe(1);
    const lines = r.stdout.trimEnd().split('\n');
    const at = lines.findIndex((l) => /^FAIL {2}discord token +Discord refused DISCORD_TOKEN \(MTIz…\)$/.test(l));
    expect(at).toBeGreaterThan(-1);
    expect(lines[at + 1]).toMatch(
      /^ {6}fix: copy the bot token again from the Developer Portal .*into DISCORD_TOKEN in \.env$/,
    );
    expect(r.stdout).not.toContain('wrong-token');
    expect(lines.at(-1)).toBe('1 failed, 0 warnings: fix the failures above, then run rlwatch doctor again');
  });

  it('a channel id that names no channel is named with its fix; exit 1', async () => {
    const fake = await startFakeDiscord();
    open.push(fake);
    const wrong = snowflake();
    const r = await doctorCli(project(), discordEnv(fake, wrong));
    expect(r.status).toBe(1);
    expect(failed(r.checks)).toEqual([`discord channel ${wrong}`]);
    expect(byName(r.checks, `discord channel ${wrong}`)).toMatchObject({
      detail: 'no channel has this id (Unknown Channel)',
      fix: expect.stringContaining('Copy Channel ID) into DISCORD_CHANNEL_ID or discord.channel'),
    });
  });

  it("a permission the channel's overwrites take from @everyone is named with its fix; exit 1", async () => {
    // the @everyone overwrite's id is the guild's own
    const guildId = snowflake();
    const denied = await startFakeDiscord({
      guildId,
      overwrites: [{ id: guildId, type: 0, allow: '0', deny: EMBED_LINKS.toString() }],
    });
    open.push(denied);
    const r = await doctorCli(project(), discordEnv(denied));
    expect(r.status).toBe(1);
    expect(failed(r.checks)).toEqual([`discord channel ${denied.channelId}`]);
    const check = byName(r.checks, `discord channel ${denied.channelId}`)!;
    expect(check.detail).toBe('the bot lacks Embed Links in #alerts');
    expect(check.fix).toMatch(
      /^give the bot's role Embed Links in #alerts \(Edit Channel > Permissions\), or invite the bot/,
    );
  });
});

describe('rlwatch doctor: Slack', () => {
  const MANIFEST_SCOPES = ['chat:write', 'files:write', 'commands', 'usergroups:read'];

  it('a token with every scope the manifest asks for, and the app in the channel, passes', async () => {
    const fake = await startFakeSlack({ scopes: MANIFEST_SCOPES });
    open.push(fake);
    const r = await doctorCli(project(), slackEnv(fake));
    expect(failed(r.checks)).toEqual([]);
    expect(r.status).toBe(0);
    expect(r.checks.filter((c) => c.check.startsWith('slack')).map((c) => [c.check, c.status])).toEqual([
      ['slack token', 'ok'],
      ['slack scopes', 'ok'],
      [`slack channel ${fake.channelId}`, 'ok'],
      ['slack app token', 'ok'],
    ]);
    // nothing posted
    expect(fake.calls.map((c) => c.method).sort()).toEqual([
      'apps.connections.open',
      'auth.test',
      'conversations.info',
    ]);
  });

  it('a wrong bot token is named with its fix; exit 1', async () => {
    const fake = await startFakeSlack({ scopes: MANIFEST_SCOPES });
    open.push(fake);
    const r = await doctorCli(project(), { ...slackEnv(fake), SLACK_BOT_TOKEN: 'xoxb-not-the-one' });
    expect(r.status).toBe(1);
    expect(failed(r.checks)).toEqual(['slack token']);
    expect(byName(r.checks, 'slack token')).toMatchObject({
      detail: 'Slack refused SLACK_BOT_TOKEN (xoxb…): invalid_auth',
      fix: expect.stringContaining('into SLACK_BOT_TOKEN in .env'),
    });
    expect(r.stdout).not.toContain('not-the-one');
  });

  it("the .env init wrote with Slack filled in and Discord left empty: Slack's checks pass and Discord is said to be off", async () => {
    const slack = await startFakeSlack({ scopes: ['chat:write', 'files:write', 'commands', 'usergroups:read'] });
    open.push(slack);
    const dir = project();
    const made = await init({ dir, platforms: ['discord', 'slack'], force: true });
    expect(made.kept).toEqual([]);
    const filled = Object.entries(slackEnv(slack)).reduce(
      (text, [name, value]) =>
        text.includes(`\n${name}=\n`)
          ? text.replace(`\n${name}=\n`, `\n${name}=${value}\n`)
          : `${text}${name}=${value}\n`,
      readFileSync(join(dir, '.env'), 'utf8'),
    );
    writeFileSync(join(dir, '.env'), filled);
    const r = await doctorCli(dir, {}); // the variables come from the folder's .env alone
    expect(failed(r.checks)).toEqual([]);
    expect(byName(r.checks, 'slack token')?.status).toBe('ok');
    expect(byName(r.checks, 'discord')).toEqual({
      check: 'discord',
      status: 'warn',
      detail: `${join(dir, 'rlwatch.yaml')} has a discord section, but DISCORD_TOKEN, DISCORD_CHANNEL_ID, DISCORD_GUILD_ID are not set: discord is off`,
      fix: `fill them in, in ${join(dir, '.env')} (a comment above each says where to get it), or remove the section`,
    });
    expect(byName(r.checks, 'slack')).toBeUndefined();
  });

  it('a scope the token lacks is named with its fix; exit 1', async () => {
    const fake = await startFakeSlack({ scopes: ['chat:write', 'commands', 'usergroups:read', 'channels:read'] });
    open.push(fake);
    const r = await doctorCli(project(), slackEnv(fake));
    expect(r.status).toBe(1);
    expect(failed(r.checks)).toEqual(['slack scopes']);
    expect(byName(r.checks, 'slack scopes')).toMatchObject({
      detail: 'the bot token lacks files:write',
      fix: expect.stringContaining('then reinstall the app to the workspace'),
    });
  });
});

describe('rlwatch doctor: Telegram and email', () => {
  it('Telegram: the token accepted and the chat found pass; a chat the bot is not in fails with its fix', async () => {
    const tg = await FakeTelegram.start();
    open.push(tg);
    tg.unknownChats.add(-100222);
    const r = await doctorCli(
      project('watch:\n  roots: [./runs]\ntelegram:\n  routes: [{ runs: "b-*", channel: "-100222" }]\n'),
      {
        TELEGRAM_BOT_TOKEN: tg.token,
        TELEGRAM_API_URL: tg.apiUrl,
        TELEGRAM_CHAT_ID: '-100111',
      },
    );
    expect(r.status).toBe(1);
    expect(r.checks.filter((c) => c.check.startsWith('telegram')).map((c) => [c.check, c.status])).toEqual([
      ['telegram token', 'ok'],
      ['telegram chat -100111', 'ok'],
      ['telegram chat -100222', 'fail'],
    ]);
    expect(byName(r.checks, 'telegram chat -100222')).toMatchObject({
      detail: 'Telegram: Bad Request: chat not found',
      fix: expect.stringContaining('add the bot to the chat'),
    });
    expect(tg.calls).not.toContain('sendMessage');
    expect(r.stdout).not.toContain(tg.token.slice(4));
  });

  it('Telegram: a wrong token fails with its fix', async () => {
    const tg = await FakeTelegram.start();
    open.push(tg);
    const r = await doctorCli(project(), {
      TELEGRAM_BOT_TOKEN: '999:not-it',
      TELEGRAM_API_URL: tg.apiUrl,
      TELEGRAM_CHAT_ID: '-100111',
    });
    expect(r.status).toBe(1);
    expect(byName(r.checks, 'telegram token')).toMatchObject({
      status: 'fail',
      detail: 'Telegram refused TELEGRAM_BOT_TOKEN (999:…): HTTP 401',
      fix: expect.stringContaining('@BotFather'),
    });
  });

  it('email: a login the SMTP server takes passes; a wrong password fails with its fix', async () => {
    const server = new SMTPServer({
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth(auth, _session, done) {
        if (auth.username === 'rlwatch' && auth.password === 'pw') done(null, { user: 'rlwatch' });
        else done(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      },
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    open.push({ close: () => new Promise<void>((done) => server.close(() => done())) });
    const port = (server.server.address() as AddressInfo).port;
    const env = {
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(port),
      SMTP_USER: 'rlwatch',
      SMTP_PASS: 'pw',
      EMAIL_FROM: 'a@lab.example',
      EMAIL_TO: 'b@lab.example',
    };
    const good = await doctor({ config: join(project(), 'rlwatch.yaml'), env });
    expect(byName(good, 'email')).toMatchObject({
      status: 'ok',
      detail: `127.0.0.1:${port} accepts a connection and the login of rlwatch`,
    });
    const bad = await doctor({ config: join(project(), 'rlwatch.yaml'), env: { ...env, SMTP_PASS: 'wrong' } });
    expect(byName(bad, 'email')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        new RegExp(`^127\\.0\\.0\\.1:${port} refused the login of rlwatch: 535 Invalid username or password`),
      ),
      fix: expect.stringContaining('check SMTP_USER and SMTP_PASS'),
    });
  });
});

/** A port nothing listens on: one the kernel gave and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

describe('rlwatch doctor: webhooks', () => {
  it('a URL on a closed port fails with its fix; one that answers passes, asked with a HEAD and nothing posted', async () => {
    const hooks = await HttpReceiver.start();
    open.push(hooks);
    hooks.fallback = () => ({ status: 405 }); // a hook that takes only POST still answers: the host is reached
    const port = await closedPort();
    const r = await doctorCli(project(), {
      WEBHOOK_URL: `http://127.0.0.1:${port}/hook?token=s3cret`,
      TEAMS_WEBHOOK_URL: hooks.url('/teams/s3cret'),
    });
    expect(r.status).toBe(1);
    expect(failed(r.checks)).toEqual(['webhook default']);
    expect(byName(r.checks, 'webhook default')).toMatchObject({
      detail: `127.0.0.1:${port} does not answer: ECONNREFUSED`,
      fix: expect.stringContaining('check the URL in WEBHOOK_URL'),
    });
    expect(byName(r.checks, 'teams default')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('HTTP 405'),
    });
    expect(hooks.received.map((q) => q.path)).toEqual(['/teams/s3cret']);
    expect(hooks.received[0]!.raw).toBe('');
    expect(r.stdout).not.toContain('s3cret');
  });
});

describe('rlwatch doctor: config, database, roots', () => {
  it('a field the config does not have is named; nothing else is checked against it; exit 1', async () => {
    const r = await doctorCli(project('watch:\n  rots: [./runs]\n'), {});
    expect(r.status).toBe(1);
    expect(r.checks).toHaveLength(1);
    expect(r.checks[0]).toMatchObject({
      check: 'config',
      status: 'fail',
      detail: expect.stringContaining("watch: unknown field 'rots'"),
    });
  });

  it('a missing root fails with its fix; no platform is a warning', async () => {
    const dir = project('watch:\n  roots: [./runs, ./elsewhere]\n');
    const r = await doctorCli(dir, {});
    expect(r.status).toBe(1);
    expect(failed(r.checks)).toEqual([`watch root ${join(dir, 'elsewhere')}`]);
    expect(byName(r.checks, `watch root ${join(dir, 'elsewhere')}`)?.fix).toContain(
      `mkdir -p ${join(dir, 'elsewhere')}`,
    );
    expect(byName(r.checks, 'chat')).toMatchObject({
      status: 'warn',
      detail: 'no chat platform configured: alerts go to the terminal only',
    });
  });

  it('a database file that is not one fails', async () => {
    const dir = project('db: ./rlwatch.db\nwatch:\n  roots: [./runs]\n');
    writeFileSync(
      join(dir, 'rlwatch.db'),
      'not a database, at all: some text long enough to be read as a header'.repeat(20),
    );
    const r = await doctorCli(dir, {});
    expect(failed(r.checks)).toEqual(['database']);
    expect(byName(r.checks, 'database')?.detail).toContain('is not an rlwatch database or is damaged');
  });

  it('more directories than the inotify budget fail, unless watch.poll is on', async () => {
    const dir = project(); // runs/ and runs/grpo-a
    const limit = join(dir, 'max_user_watches');
    writeFileSync(limit, '1\n');
    const checks = await doctor({ config: join(dir, 'rlwatch.yaml'), env: {}, watchesFile: limit });
    expect(byName(checks, 'inotify')).toMatchObject({
      status: 'fail',
      detail: '2 directories to watch, over fs.inotify.max_user_watches (1)',
      fix: expect.stringContaining('watch.poll: true'),
    });
    writeFileSync(join(dir, 'rlwatch.yaml'), 'watch:\n  roots: [./runs]\n  poll: true\n');
    const polling = await doctor({ config: join(dir, 'rlwatch.yaml'), env: {}, watchesFile: limit });
    expect(byName(polling, 'inotify')?.status).toBe('ok');
  });

  it('a root just created, with no run yet: one directory to watch, said in the singular', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'runs'));
    writeFileSync(join(dir, 'rlwatch.yaml'), 'watch:\n  roots: [./runs]\n');
    const limit = join(dir, 'max_user_watches');
    writeFileSync(limit, '8192\n');
    const checks = await doctor({ config: join(dir, 'rlwatch.yaml'), env: {}, watchesFile: limit });
    expect(byName(checks, 'inotify')).toMatchObject({
      status: 'ok',
      detail: '1 directory to watch, within fs.inotify.max_user_watches (8192)',
    });
  });
});
