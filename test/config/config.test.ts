import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/loadConfig.ts';
import { resolveDbPath } from '../../src/config/load.ts';
import { MAX_CONFIG_BYTES } from '../../src/config/readYaml.ts';
import { UserError } from '../../src/lib/errors.ts';
import { tempDir } from '../helpers.ts';

function configFile(text: string): string {
  const path = join(tempDir(), 'rlwatch.yaml');
  writeFileSync(path, text);
  return path;
}

describe('loadConfig', () => {
  it('resolves roots and db against the config file', async () => {
    const path = configFile('db: data/x.db\nwatch:\n  roots: [runs]\n  poll: true\n');
    const { config } = await loadConfig(path, {});
    const dir = join(path, '..');
    expect(config.watch).toMatchObject({ roots: [join(dir, 'runs')], poll: true, pollIntervalMs: 2000 });
    expect(config.db).toBe(join(dir, 'data/x.db'));
    expect(config.ingest.examplesPerStep).toBe(2);
  });

  it('names the file, the field and what was expected', async () => {
    const path = configFile('watch:\n  roots: runs\n');
    await expect(loadConfig(path, {})).rejects.toThrow(UserError);
    await expect(loadConfig(path, {})).rejects.toThrow(new RegExp(`^${path}: watch\\.roots: .*array`, 'i'));
  });

  it('names the cap when a duration is longer than a year', async () => {
    const path = configFile('alerts:\n  repeatInterval: 400d\n');
    await expect(loadConfig(path, {})).rejects.toThrow(new RegExp(`^${path}: alerts\\.repeatInterval: .*at most 365d`));
  });

  it("names a bad rule by its place in the file's rules", async () => {
    const path = configFile(
      'alerts:\n  rules:\n    - id: mode_collapse\n      value: 0.7\n    - id: mode_collapse\n      for: 0\n',
    );
    await expect(loadConfig(path, {})).rejects.toThrow(UserError);
    await expect(loadConfig(path, {})).rejects.toThrow(new RegExp(`^${path}: alerts\\.rules\\[1\\]\\.for: `));
  });

  it('rejects unknown fields, so a typo is not silently ignored', async () => {
    const path = configFile('watch:\n  rots: [runs]\n');
    await expect(loadConfig(path, {})).rejects.toThrow(`${path}: watch: unknown field 'rots'`);
  });

  it('reports YAML syntax errors with the file name', async () => {
    const path = configFile('watch: [unclosed\n');
    await expect(loadConfig(path, {})).rejects.toThrow(new RegExp(`^${path}: not valid YAML`));
  });

  it('takes RLWATCH_CONFIG when --config is absent', async () => {
    const path = configFile('ingest:\n  examplesPerStep: 3\n');
    expect((await loadConfig(undefined, { RLWATCH_CONFIG: path })).config.ingest.examplesPerStep).toBe(3);
  });

  it('picks the database: --db, then RLWATCH_DB, then the config, then ./rlwatch.db', async () => {
    const { config } = await loadConfig(configFile('db: /tmp/from-config.db\n'), {});
    expect(resolveDbPath('/tmp/flag.db', config, { RLWATCH_DB: '/tmp/env.db' })).toBe('/tmp/flag.db');
    expect(resolveDbPath(undefined, config, { RLWATCH_DB: '/tmp/env.db' })).toBe('/tmp/env.db');
    expect(resolveDbPath(undefined, config, {})).toBe('/tmp/from-config.db');
    expect(resolveDbPath(undefined, { ...config, db: undefined }, {})).toBe(join(process.cwd(), 'rlwatch.db'));
  });

  it('refuses a PostgreSQL URL by where it came from, instead of making a SQLite file under ./postgres:', async () => {
    const { config } = await loadConfig(configFile('db: postgres://u:p@db:5432/x\n'), {});
    expect(config.db).toBe('postgres://u:p@db:5432/x'); // not resolved against the config's folder
    expect(() => resolveDbPath('postgresql://db/x', config, {})).toThrow(/^--db: PostgreSQL is not yet a store/);
    expect(() => resolveDbPath(undefined, config, { RLWATCH_DB: 'postgres://db/x' })).toThrow(/^RLWATCH_DB: /);
    expect(() => resolveDbPath(undefined, config, {})).toThrow(/^the config's db: /);
    expect(() => resolveDbPath(undefined, config, {})).toThrow(UserError);
  });

  it('takes watch.prefix as written, unset when absent; a bad one names the field', async () => {
    expect((await loadConfig(configFile('watch:\n  prefix: site/gpu-a\n'), {})).config.watch.prefix).toBe('site/gpu-a');
    expect((await loadConfig(configFile('watch:\n  prefix: ""\n'), {})).config.watch.prefix).toBe('');
    expect((await loadConfig(configFile('watch:\n  poll: true\n'), {})).config.watch.prefix).toBeUndefined();
    for (const bad of ['/gpu-a', 'gpu-a/', 'a//b', 'gpu a', '"a\\nb"', '7']) {
      const path = configFile(`watch:\n  prefix: ${bad}\n`);
      await expect(loadConfig(path, {}), bad).rejects.toThrow(new RegExp(`^${path}: watch\\.prefix: `));
    }
  });

  it('refuses a config file over 1 MB in one line naming the file and the limit, and reads one at the limit', async () => {
    const line = `# ${'x'.repeat(98)}\n`; // 101 bytes
    const body = (bytes: number) =>
      `watch:\n  poll: true\n${line.repeat(Math.ceil(bytes / line.length))}`.slice(0, bytes);
    const over = configFile(body(MAX_CONFIG_BYTES + 1));
    await expect(loadConfig(over, {})).rejects.toThrow(UserError);
    await expect(loadConfig(over, {})).rejects.toThrow(`${over}: is over 1 MB, the most a config file may be`);
    expect((await loadConfig(configFile(body(MAX_CONFIG_BYTES)), {})).config.watch.poll).toBe(true);
  });

  it('warns once when a config holding a secret is readable by others, naming the fix', async () => {
    const secrets = [
      'webhook:\n  urls:\n    ops: https://hooks.slack.com/services/T000/B000/XXXX\n',
      'teams:\n  urls:\n    ops: https://example.com/workflows/1/run?api-version=1&sig=abc\n',
      'db: postgres://u:p@db:5432/x\n',
    ];
    for (const text of secrets) {
      const path = configFile(text);
      chmodSync(path, 0o644);
      const warned: string[] = [];
      await loadConfig(path, {}, (l) => warned.push(l));
      await loadConfig(path, {}, (l) => warned.push(l));
      expect(warned, text).toEqual([
        `warning: ${path} holds a secret and is readable by every user of this machine: chmod 600 ${path}`,
      ]);
    }
    // a token where no field takes it: refused by the schema, and warned of all the same
    const stray = configFile('slack:\n  bot_token: abc\n');
    chmodSync(stray, 0o644);
    const warned: string[] = [];
    await expect(loadConfig(stray, {}, (l) => warned.push(l))).rejects.toThrow(/unknown field 'bot_token'/);
    expect(warned).toEqual([
      `warning: ${stray} holds a secret and is readable by every user of this machine: chmod 600 ${stray}`,
    ]);
    const quiet: string[] = [];
    const mine = configFile(secrets[0]!);
    chmodSync(mine, 0o600);
    await loadConfig(mine, {}, (l) => quiet.push(l));
    const plain = configFile('webhook:\n  urls:\n    ops: https://example.com/alerts\nwatch:\n  poll: true\n');
    chmodSync(plain, 0o644);
    await loadConfig(plain, {}, (l) => quiet.push(l));
    expect(quiet).toEqual([]);
  });
});
