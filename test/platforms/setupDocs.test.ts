import { PermissionFlagsBits } from 'discord.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigSchema } from '../../src/config/schema.ts';
import { COMMANDS } from '../../src/interact/registry.ts';
import { PLATFORMS } from '../../src/platforms/index.ts';
import { sectionOf, type Platform } from '../../src/platforms/platform.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

describe('the Slack app manifest', () => {
  const manifest = parse(read('slack-app-manifest.yaml')) as {
    features: { slash_commands: Array<{ command: string; description: string }> };
    oauth_config: { scopes: { bot: string[] } };
    settings: { socket_mode_enabled: boolean; interactivity: { is_enabled: boolean } };
  };

  it('declares one slash command per top-level command of the registry, the ones the bot listens for', () => {
    const registry = [...new Set(COMMANDS.map((c) => `/${c.path[0]}`))].sort();
    expect(manifest.features.slash_commands.map((c) => c.command).sort()).toEqual(registry);
  });

  it('turns on Socket Mode and interactivity (the buttons), and asks for the bot scopes the setup page explains', () => {
    expect(manifest.settings.socket_mode_enabled).toBe(true);
    expect(manifest.settings.interactivity.is_enabled).toBe(true);
    const documented = [...read('docs/platforms/slack.md').matchAll(/^\| `([a-z.:]+)` \|/gm)].map((m) => m[1]);
    expect(manifest.oauth_config.scopes.bot.sort()).toEqual(documented.sort());
  });
});

describe('the Discord setup page', () => {
  const page = read('docs/platforms/discord.md');

  it("the invite link's permission integer is the sum of the permissions its table names, at discord.js's values", () => {
    const rows = [...page.matchAll(/^\| ([A-Z][A-Za-z ]+) \| (\d+) \|/gm)].map((m) => ({
      name: m[1]!,
      value: BigInt(m[2]!),
    }));
    expect(rows.map((r) => r.name)).toEqual([
      'View Channel',
      'Send Messages',
      'Embed Links',
      'Attach Files',
      'Read Message History',
      'Use Application Commands',
    ]);
    let bits = 0n;
    for (const { name, value } of rows) {
      const flag = PermissionFlagsBits[name.replaceAll(' ', '') as keyof typeof PermissionFlagsBits];
      expect(flag, name).toBe(value);
      bits |= flag;
    }
    const links = [...page.matchAll(/oauth2\/authorize\?client_id=APPLICATION_ID&scope=([^&\s]+)&permissions=(\d+)/g)];
    expect(links).toHaveLength(1);
    expect(decodeURIComponent(links[0]![1]!).split(' ').sort()).toEqual(['applications.commands', 'bot']);
    expect(BigInt(links[0]![2]!)).toBe(bits);
    // the sentence under the link says the same number
    expect(page).toContain(`\`${bits}\``);
  });
});

/**
 * The variables a platform's settings read, as its code reads them: `settings()` is given an environment where every
 * name has a value (a URL where the name ends in _URL, else a number, which every setting accepts), so each branch
 * that reads one more variable when another is set is taken, and every name it asks for is recorded.
 */
function variablesRead(platform: Platform): string[] {
  const read = new Set<string>();
  const env = new Proxy({} as NodeJS.ProcessEnv, {
    get(_, name) {
      if (typeof name !== 'string') return undefined;
      read.add(name);
      return name.endsWith('_URL') ? 'https://chat.example.test/hook' : '1';
    },
  });
  expect(platform.settings(sectionOf(ConfigSchema.parse({}), platform), env), platform.id).not.toBeNull();
  return [...read].sort();
}

describe('a setup page per chat platform', () => {
  it('reads the variables of .env.example, each platform its own', () => {
    // the recorder itself: every name it sees is one .env.example documents, and no two platforms share one
    const example = new Set([...read('.env.example').matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
    const all = PLATFORMS.flatMap(variablesRead);
    expect(all.length).toBeGreaterThanOrEqual(PLATFORMS.length * 2);
    expect(all.filter((name) => !example.has(name))).toEqual([]);
    expect(new Set(all).size).toBe(all.length);
    expect(variablesRead(PLATFORMS.find((p) => p.id === 'email')!)).toEqual([
      'EMAIL_FROM',
      'EMAIL_TO',
      'SMTP_HOST',
      'SMTP_PASS',
      'SMTP_PORT',
      'SMTP_SECURE',
      'SMTP_USER',
    ]);
  });

  it.each(PLATFORMS.map((p) => [p.id, p] as const))(
    'docs/platforms/%s.md exists and names every variable its settings read',
    (id, platform) => {
      const path = join(ROOT, 'docs', 'platforms', `${id}.md`);
      expect(existsSync(path), `docs/platforms/${id}.md`).toBe(true);
      const page = readFileSync(path, 'utf8');
      expect(variablesRead(platform).filter((name) => !new RegExp(`\\b${name}\\b`).test(page))).toEqual([]);
    },
  );

  it('each page is linked from docs/platforms.md and from docs/first-hour.md', () => {
    const index = read('docs/platforms.md');
    const firstHour = read('docs/first-hour.md');
    for (const { id } of PLATFORMS) {
      expect(index, id).toContain(`(platforms/${id}.md)`);
      expect(firstHour, id).toContain(`(platforms/${id}.md)`);
    }
  });
});
