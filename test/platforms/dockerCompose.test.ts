import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = join(import.meta.dirname, '..', '..');
// `<<: *rlwatch` is a YAML 1.1 merge key, as Compose reads it
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { command?: string[]; env_file?: unknown; environment?: Record<string, string> }>;
};
/** every variable .env.example names: what a user fills in and expects the containers to see */
const exampleVars = [...readFileSync(join(root, '.env.example'), 'utf8').matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map(
  (m) => m[1] as string,
);

describe('docker-compose.yml', () => {
  it('gives the watcher and the bot their roles, each reading .env, optional', () => {
    expect(compose.services.watcher?.command).toEqual(['start', '--role', 'watcher', '/runs']);
    expect(compose.services.bot?.command).toEqual(['start', '--role', 'bot']);
    for (const name of ['watcher', 'bot']) {
      expect(compose.services[name]?.env_file, name).toEqual([{ path: '.env', required: false }]);
    }
  });

  it('passes every platform variable of .env.example through .env, and pins only the database and config paths', () => {
    const platformVars = exampleVars.filter((v) => !v.startsWith('RLWATCH_'));
    expect(platformVars).toEqual(
      expect.arrayContaining([
        'DISCORD_TOKEN',
        'SLACK_BOT_TOKEN',
        'TELEGRAM_BOT_TOKEN',
        'SMTP_HOST',
        'WEBHOOK_URL',
        'TEAMS_WEBHOOK_URL',
        'MATTERMOST_WEBHOOK_URL',
        'FEISHU_WEBHOOK_URL',
      ]),
    );
    for (const name of ['watcher', 'bot']) {
      const pinned = Object.keys(compose.services[name]?.environment ?? {});
      // a variable in `environment` overrides .env: none of a platform's may be there
      expect(
        pinned.filter((v) => platformVars.includes(v)),
        name,
      ).toEqual([]);
      expect(pinned.sort(), name).toEqual(['RLWATCH_CONFIG', 'RLWATCH_DB']);
      expect(compose.services[name]?.environment?.RLWATCH_DB, name).toMatch(/^postgres:\/\/.*@postgres:5432\/rlwatch$/);
    }
  });
});
