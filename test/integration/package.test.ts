/**
 * The npm package as a user installs it: `npm pack` of this checkout, `npm install <tarball>` into an empty folder,
 * then the installed `rlwatch` runs the bundle it ships (no TypeScript, no tsx, no sources).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startFakeSlack } from '../fakes/slackServer.ts';
import { tempDir } from '../helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

let tarball: string;
let files: string[];
let app: string;

beforeAll(() => {
  const out = tempDir();
  // --ignore-scripts: pack the dist/ that `npm ci` built; prepack would rebuild it under the other tests' feet
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
      cwd: ROOT,
      encoding: 'utf8',
    }),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(out, packed[0]!.filename);
  files = packed[0]!.files.map((f) => f.path);

  app = tempDir();
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'uses-rlwatch', private: true }));
  // from npm's cache (`npm ci` filled it); install scripts off: better-sqlite3's would compile its addon for minutes
  // on this machine (no prebuilt binary can be fetched here), so the checkout's build of the same version stands in
  execFileSync('npm', ['install', tarball, '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: app,
    stdio: 'pipe',
  });
  const addon = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
  mkdirSync(join(app, addon, '..'), { recursive: true });
  copyFileSync(join(ROOT, addon), join(app, addon));
}, 180_000);

const installed = (args: string[]) =>
  spawnSync(join(app, 'node_modules', '.bin', 'rlwatch'), args, { cwd: app, encoding: 'utf8', timeout: 60_000 });

/** The installed `rlwatch ARGS` in the background, with no platform variable but `env`'s: a fake answers meanwhile. */
function installedAsync(
  args: string[],
  env: Record<string, string>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const platformVars = Object.keys(process.env).filter((k) =>
    /^(DISCORD|SLACK|TELEGRAM|SMTP|EMAIL|WEBHOOK|TEAMS|MATTERMOST|FEISHU)_/.test(k),
  );
  const child = spawn(join(app, 'node_modules', '.bin', 'rlwatch'), args, {
    cwd: app,
    env: { ...process.env, ...Object.fromEntries(platformVars.map((k) => [k, undefined])), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout, stderr })));
}

describe('the npm package', () => {
  it('ships the bundle, the migrations, the samples and the docs, and no sources, tests or bench', () => {
    const top = new Set(files.map((f) => f.split('/')[0]));
    for (const want of ['bin', 'dist', 'migrations', 'samples', 'docs', 'package.json', 'README.md'])
      expect(top).toContain(want);
    for (const never of ['src', 'test', 'bench', '.ci', 'scripts', 'node_modules']) expect(top).not.toContain(never);
    expect(files).toContain('dist/cli.js');
    // every SQLite migration of the checkout is in the package
    const migrations = readdirSync(join(ROOT, 'migrations'))
      .filter((f) => f.endsWith('.sql'))
      .map((f) => `migrations/${f}`);
    expect(migrations.length).toBeGreaterThan(0);
    for (const m of migrations) expect(files).toContain(m);
  });

  it('installs without the build tools and runs the bundle: --version, then the demo end to end', () => {
    const root = join(app, 'node_modules', pkg.name);
    expect(existsSync(join(root, 'src'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'tsx'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'esbuild'))).toBe(false);

    const version = installed(['--version']);
    expect(version.stderr).toBe('');
    expect(version.stdout.trim()).toBe(pkg.version);

    const db = join(app, 'demo.db');
    const demo = installed(['demo', '--pace', '0', '--db', db]);
    expect(demo.status, demo.stderr).toBe(0);
    // the sample's last step, read from its learning.log by counting its epoch lines
    const sample = readFileSync(join(ROOT, 'samples', 'grpo-demo', 'learning.log'), 'utf8');
    const steps = sample.split('\n').filter((l) => l.startsWith('[Epoch ')).length;
    expect(demo.stdout).toContain(`grpo-demo: step ${steps},`);
    // the hint names the command as this user can type it
    expect(demo.stdout).toMatch(/Try: npx rlwatch reward history grpo-demo/);
    const runs = JSON.parse(installed(['runs', '--db', db, '--json']).stdout) as Array<{ name: string }>;
    expect(runs.map((r) => r.name)).toEqual(['grpo-demo']);
  }, 120_000);

  it('backfill on a terminal draws its progress bar (stderr a TTY, as an interactive user has it)', () => {
    const runs = join(app, 'runs', 'grpo-a');
    mkdirSync(runs, { recursive: true });
    copyFileSync(join(ROOT, 'samples', 'grpo-demo', 'learning.log'), join(runs, 'learning.log'));
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'data:text/javascript,process.stderr.isTTY=true', // what a terminal gives; the pipe then records it
        join(app, 'node_modules', '.bin', 'rlwatch'),
        'backfill',
        join(app, 'runs'),
        '--db',
        join(app, 'backfill.db'),
      ],
      { cwd: app, encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.stderr).not.toContain('internal error');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('backfill [');
  }, 60_000);

  it("doctor reads the Slack app's scopes from the manifest it ships, and names the one the token lacks", async () => {
    const manifest = parse(readFileSync(join(ROOT, 'slack-app-manifest.yaml'), 'utf8')) as {
      oauth_config: { scopes: { bot: string[] } };
    };
    const scopes = manifest.oauth_config.scopes.bot;
    expect(scopes).toContain('files:write');
    const slack = await startFakeSlack({ scopes: scopes.filter((x) => x !== 'files:write') });
    try {
      const r = await installedAsync(['doctor', '--json'], {
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_APP_TOKEN: slack.appToken,
        SLACK_API_URL: slack.apiUrl,
        SLACK_CHANNEL_ID: slack.channelId,
      });
      expect(r.stderr).toBe('');
      const checks = JSON.parse(r.stdout) as Array<{ check: string; status: string; detail: string }>;
      expect(checks.find((c) => c.check === 'slack scopes')).toMatchObject({
        status: 'fail',
        detail: 'the bot token lacks files:write',
      });
      expect(r.status).toBe(1);
    } finally {
      await slack.close();
    }
  }, 60_000);
});
