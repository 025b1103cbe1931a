import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseEnv } from 'dotenv';
import { parse as parseYaml } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { init } from '../../src/app/init.ts';
import { loadConfig } from '../../src/app/loadConfig.ts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { tempDir } from '../helpers.ts';
import { BIN, rlwatch, type CliResult } from '../integration/cli.ts';

const ROOT = join(import.meta.dirname, '../..');
const mode = (path: string): number => statSync(path).mode & 0o777;

/** The variables a .env sets, in order. */
const keys = (text: string): string[] => Object.keys(parseEnv(text));

describe('rlwatch init', () => {
  it("writes a config that loads and a mode-600 .env holding the named platforms' variables, empty, each under its comment", async () => {
    const cwd = tempDir();
    const r = rlwatch(['init', '--slack', '--discord', '--dir', 'proj'], { cwd });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const dir = join(cwd, 'proj');
    expect(r.stdout.trimEnd().split('\n')).toEqual([
      `wrote ${dir}/rlwatch.yaml: the watch roots (./runs), the database (./rlwatch.db), discord, slack`,
      `wrote ${dir}/.env (mode 600): fill in DISCORD_TOKEN, DISCORD_CHANNEL_ID, DISCORD_GUILD_ID, SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_CHANNEL_ID`,
      `guides (docs/first-hour.md, docs/platforms/), rlwatch.example.yaml and slack-app-manifest.yaml: in ${ROOT}`,
      'next: fill in proj/.env, then cd proj && rlwatch doctor   (it checks the config, the database, the roots and each platform)',
    ]);
    // the folder named holds what the files' comments name (installed from npm, nothing else says where it is)
    for (const f of [
      'docs/first-hour.md',
      'docs/platforms/slack.md',
      'docs/platforms/discord.md',
      'docs/configuration.md',
      'rlwatch.example.yaml',
      'slack-app-manifest.yaml',
      '.env.example',
    ]) {
      expect(existsSync(join(ROOT, f)), f).toBe(true);
    }
    expect(mode(join(dir, '.env'))).toBe(0o600);

    const { config, file } = await loadConfig(join(dir, 'rlwatch.yaml'), {});
    expect(file).toBe(join(dir, 'rlwatch.yaml'));
    expect(config.watch.roots).toEqual([join(dir, 'runs')]);
    expect(config.db).toBe(join(dir, 'rlwatch.db'));
    expect(Object.keys(parseYaml(readFileSync(join(dir, 'rlwatch.yaml'), 'utf8')))).toEqual([
      'db',
      'watch',
      'alerts',
      'discord',
      'slack',
    ]);

    const env = readFileSync(join(dir, '.env'), 'utf8');
    const names = [
      'DISCORD_TOKEN',
      'DISCORD_CHANNEL_ID',
      'DISCORD_GUILD_ID',
      'SLACK_BOT_TOKEN',
      'SLACK_APP_TOKEN',
      'SLACK_CHANNEL_ID',
    ];
    expect(keys(env)).toEqual(names);
    expect(Object.values(parseEnv(env))).toEqual(names.map(() => ''));
    // the names rlwatch reads (.env.example lists every one), each with a line saying where to get it
    const example = keys(readFileSync(join(ROOT, '.env.example'), 'utf8'));
    const lines = env.split('\n');
    for (const name of names) {
      expect(example).toContain(name);
      expect(lines[lines.indexOf(`${name}=`) - 1]).toMatch(/^# \S/);
    }
  });

  it('the rule change it shows commented out loads as written once uncommented', async () => {
    const dir = tempDir();
    expect(rlwatch(['init', '--dir', dir]).status).toBe(0);
    const text = readFileSync(join(dir, 'rlwatch.yaml'), 'utf8')
      .replace(/^ {2}rules: \[\].*\n/m, '')
      .replace(/^ {2}# (rules:.*)\n {2}# {3}(- .*)$/m, '  $1\n    $2');
    expect(text).toMatch(/^ {2}rules: /m);
    writeFileSync(join(dir, 'uncommented.yaml'), text);
    const { config } = await loadConfig(join(dir, 'uncommented.yaml'), {});
    expect(config.alerts.rules).toEqual([{ id: 'mode_collapse', value: 0.9 }]);
  });

  it('with no platform named and no terminal, writes the terminal-only config and no .env', async () => {
    const dir = tempDir();
    const r = rlwatch(['init', '--dir', dir]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      `wrote ${dir}/rlwatch.yaml: the watch roots (./runs), the database (./rlwatch.db), the terminal only\n`,
    );
    expect(existsSync(join(dir, '.env'))).toBe(false);
    expect(Object.keys(parseYaml(readFileSync(join(dir, 'rlwatch.yaml'), 'utf8')))).toEqual(['db', 'watch', 'alerts']);
    await expect(loadConfig(join(dir, 'rlwatch.yaml'), {})).resolves.toMatchObject({ file: join(dir, 'rlwatch.yaml') });
  });

  it('keeps a file that exists (exit 1) and writes the other; --force replaces both, the .env back to mode 600', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'rlwatch.yaml'), 'watch:\n  roots: [/data/mine]\n');
    const r = rlwatch(['init', '--telegram', '--dir', dir]);
    expect(r.status).toBe(1);
    expect(readFileSync(join(dir, 'rlwatch.yaml'), 'utf8')).toBe('watch:\n  roots: [/data/mine]\n');
    expect(r.stdout).toContain(`kept ${dir}/rlwatch.yaml: it exists (rlwatch init --force replaces it)\n`);
    expect(keys(readFileSync(join(dir, '.env'), 'utf8'))).toEqual(['TELEGRAM_BOT_TOKEN', 'TELEGRAM_CHAT_ID']);

    chmodSync(join(dir, '.env'), 0o644);
    const forced = rlwatch(['init', '--email', '--dir', dir, '--force']);
    expect(forced.status).toBe(0);
    expect(readFileSync(join(dir, 'rlwatch.yaml'), 'utf8')).toMatch(/^email: \{\}/m);
    expect(keys(readFileSync(join(dir, '.env'), 'utf8'))).toEqual([
      'SMTP_HOST',
      'SMTP_PORT',
      'SMTP_SECURE',
      'SMTP_USER',
      'SMTP_PASS',
      'EMAIL_FROM',
      'EMAIL_TO',
    ]);
    expect(mode(join(dir, '.env'))).toBe(0o600);
  });

  it('on a terminal, asks which platforms (again after a name it does not know) and whether to replace each file', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'rlwatch.yaml'), 'mine\n');
    writeFileSync(join(dir, '.env'), 'MINE=1\n');
    const answers = ['pigeon', 'webhook, telegram', 'n', 'y'];
    const asked: string[] = [];
    const { kept } = await init({
      dir,
      platforms: [],
      force: false,
      ask: async (q) => (asked.push(q), answers.shift() ?? ''),
    });
    expect(asked[0]).toMatch(/^Which chat platforms should alerts go to\? discord, slack, telegram, email, webhook /);
    expect(asked[1]).toMatch(
      /^no platform 'pigeon': one of discord, slack, telegram, email, webhook\. Which chat platforms/,
    );
    expect(asked.slice(2)).toEqual([
      `${dir}/rlwatch.yaml exists: replace it? [y/N] `,
      `${dir}/.env exists: replace it? [y/N] `,
    ]);
    expect(kept).toEqual([join(dir, 'rlwatch.yaml')]);
    expect(readFileSync(join(dir, 'rlwatch.yaml'), 'utf8')).toBe('mine\n');
    expect(keys(readFileSync(join(dir, '.env'), 'utf8'))).toEqual([
      'TELEGRAM_BOT_TOKEN',
      'TELEGRAM_CHAT_ID',
      'WEBHOOK_URL',
      'WEBHOOK_SECRET',
    ]);
  });
});

describe('the first hour: init, fill in .env, doctor', () => {
  let fake: FakeDiscord | undefined;
  afterEach(async () => {
    await fake?.close();
  });

  it("the files init writes, filled in with a working bot's values, pass every check", async () => {
    fake = await startFakeDiscord();
    const dir = tempDir();
    expect(rlwatch(['init', '--discord'], { cwd: dir }).status).toBe(0);
    mkdirSync(join(dir, 'runs'));
    const values: Record<string, string> = {
      DISCORD_TOKEN: fake.token,
      DISCORD_CHANNEL_ID: fake.channelId,
      DISCORD_GUILD_ID: fake.guildId,
    };
    const env = readFileSync(join(dir, '.env'), 'utf8').replace(
      /^([A-Z_]+)=$/gm,
      (_, k: string) => `${k}=${values[k]}`,
    );
    writeFileSync(join(dir, '.env'), `${env}DISCORD_API_URL=${fake.apiUrl}\n`);
    // the .env of the folder rlwatch runs in is read as the environment; none of the developer's variables count
    const clean = Object.fromEntries(
      Object.keys(process.env)
        .filter((k) => /^(DISCORD|SLACK|TELEGRAM|SMTP|EMAIL|WEBHOOK|TEAMS|MATTERMOST|FEISHU|RLWATCH)_/.test(k))
        .map((k) => [k, undefined]),
    );
    const child = spawn(BIN, ['doctor', '--json'], {
      cwd: dir,
      env: { ...process.env, ...clean },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const r: CliResult = await new Promise((done) =>
      child.once('close', (status) => done({ status, stdout, stderr: '' })),
    );
    const checks = JSON.parse(r.stdout) as Array<{ check: string; status: string }>;
    expect(checks.filter((c) => c.status === 'fail')).toEqual([]);
    expect(r.status).toBe(0);
    expect(checks.map((c) => c.check)).toEqual(
      expect.arrayContaining(['discord token', `discord channel ${fake.channelId}`]),
    );
  });
});
