import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, resolveDbPath } from '../src/config/load.ts';
import { UserError } from '../src/errors.ts';
import { tempDir } from './helpers.ts';

function configFile(text: string): string {
  const path = join(tempDir(), 'rlwatch.yaml');
  writeFileSync(path, text);
  return path;
}

describe('loadConfig', () => {
  it('resolves roots and db against the config file', () => {
    const path = configFile('db: data/x.db\nwatch:\n  roots: [runs]\n  poll: true\n');
    const { config } = loadConfig(path, {});
    const dir = join(path, '..');
    expect(config.watch).toMatchObject({ roots: [join(dir, 'runs')], poll: true, pollIntervalMs: 2000 });
    expect(config.db).toBe(join(dir, 'data/x.db'));
    expect(config.ingest.examplesPerStep).toBe(2);
  });

  it('names the file, the field and what was expected', () => {
    const path = configFile('watch:\n  roots: runs\n');
    expect(() => loadConfig(path, {})).toThrow(UserError);
    expect(() => loadConfig(path, {})).toThrow(new RegExp(`^${path}: watch\\.roots: .*array`, 'i'));
  });

  it('names the cap when a duration is longer than a year', () => {
    const path = configFile('alerts:\n  repeatInterval: 400d\n');
    expect(() => loadConfig(path, {})).toThrow(new RegExp(`^${path}: alerts\\.repeatInterval: .*at most 365d`));
  });

  it('rejects unknown fields, so a typo is not silently ignored', () => {
    const path = configFile('watch:\n  rots: [runs]\n');
    expect(() => loadConfig(path, {})).toThrow(`${path}: watch: unknown field 'rots'`);
  });

  it('reports YAML syntax errors with the file name', () => {
    const path = configFile('watch: [unclosed\n');
    expect(() => loadConfig(path, {})).toThrow(new RegExp(`^${path}: not valid YAML`));
  });

  it('takes RLWATCH_CONFIG when --config is absent', () => {
    const path = configFile('ingest:\n  examplesPerStep: 3\n');
    expect(loadConfig(undefined, { RLWATCH_CONFIG: path }).config.ingest.examplesPerStep).toBe(3);
  });

  it('picks the database: --db, then RLWATCH_DB, then the config, then ./rlwatch.db', () => {
    const { config } = loadConfig(configFile('db: /tmp/from-config.db\n'), {});
    expect(resolveDbPath('/tmp/flag.db', config, { RLWATCH_DB: '/tmp/env.db' })).toBe('/tmp/flag.db');
    expect(resolveDbPath(undefined, config, { RLWATCH_DB: '/tmp/env.db' })).toBe('/tmp/env.db');
    expect(resolveDbPath(undefined, config, {})).toBe('/tmp/from-config.db');
    expect(resolveDbPath(undefined, { ...config, db: undefined }, {})).toBe(join(process.cwd(), 'rlwatch.db'));
  });

  it('refuses a PostgreSQL URL by where it came from, instead of making a SQLite file under ./postgres:', () => {
    const config = loadConfig(configFile('db: postgres://u:p@db:5432/x\n'), {}).config;
    expect(config.db).toBe('postgres://u:p@db:5432/x'); // not resolved against the config's folder
    expect(() => resolveDbPath('postgresql://db/x', config, {})).toThrow(/^--db: PostgreSQL is not yet a store/);
    expect(() => resolveDbPath(undefined, config, { RLWATCH_DB: 'postgres://db/x' })).toThrow(/^RLWATCH_DB: /);
    expect(() => resolveDbPath(undefined, config, {})).toThrow(/^the config's db: /);
    expect(() => resolveDbPath(undefined, config, {})).toThrow(UserError);
  });

  it('takes watch.prefix as written, unset when absent; a bad one names the field', () => {
    expect(loadConfig(configFile('watch:\n  prefix: site/gpu-a\n'), {}).config.watch.prefix).toBe('site/gpu-a');
    expect(loadConfig(configFile('watch:\n  prefix: ""\n'), {}).config.watch.prefix).toBe('');
    expect(loadConfig(configFile('watch:\n  poll: true\n'), {}).config.watch.prefix).toBeUndefined();
    for (const bad of ['/gpu-a', 'gpu-a/', 'a//b', 'gpu a', '"a\\nb"', '7']) {
      const path = configFile(`watch:\n  prefix: ${bad}\n`);
      expect(() => loadConfig(path, {}), bad).toThrow(new RegExp(`^${path}: watch\\.prefix: `));
    }
  });
});
