import { PermissionFlagsBits } from 'discord.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { COMMANDS } from '../../src/interact/registry.ts';

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
    const rows = [...page.matchAll(/^\| ([A-Z][A-Za-z ]+) \| (\d+) \|/gm)].map((m) => ({ name: m[1]!, value: BigInt(m[2]!) }));
    expect(rows.map((r) => r.name)).toEqual([
      'View Channel', 'Send Messages', 'Embed Links', 'Attach Files', 'Read Message History', 'Use Application Commands',
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
