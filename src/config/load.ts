/**
 * Finds and reads the config (`--config`, RLWATCH_CONFIG, ./rlwatch.yaml or the defaults), validates its shape, and
 * resolves the database path. Its rules are checked against the rule book where it is loaded (app/loadConfig.ts).
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { ConfigSchema, type Config } from './schema.ts';
import { isPostgresUrl } from './storeSettings.ts';
import type * as z from '../lib/zod.ts';

export interface LoadedConfig {
  config: Config;
  /** the file read, or null when running on defaults */
  file: string | null;
}

/** Config files warned of as readable by others: said once per process, not at each load. */
const warnedReadable = new Set<string>();

/** `--config`, else RLWATCH_CONFIG, else ./rlwatch.yaml if present, else the defaults. Paths inside the
 * file are resolved against its directory. */
export async function readConfig(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
  warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<LoadedConfig> {
  const given = explicit ?? env.RLWATCH_CONFIG;
  const file = given ? resolve(given) : existsSync('rlwatch.yaml') ? resolve('rlwatch.yaml') : null;
  if (file === null) return { config: ConfigSchema.parse({}), file: null };
  const { readYaml, holdsSecret } = await import('./readYaml.ts');
  const { raw, mode } = readYaml(file);
  if (mode & 0o004 && !warnedReadable.has(file) && holdsSecret(raw)) {
    warnedReadable.add(file);
    warn(`warning: ${file} holds a secret and is readable by every user of this machine: chmod 600 ${file}`);
  }
  const parsed = ConfigSchema.safeParse(raw ?? {});
  if (!parsed.success) throw new UserError(`${file}: ${describeIssue(parsed.error)}`);
  const base = dirname(file);
  const config = parsed.data;
  config.watch.roots = config.watch.roots.map((r) => resolve(base, r));
  if (config.db && !isPostgresUrl(config.db)) config.db = resolve(base, config.db);
  return { config, file };
}

/** The first problem, as `field.path: what was expected`. */
function describeIssue(error: z.core.$ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid configuration';
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    return `${where}unknown field ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
  }
  const field = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  return `${field}: ${issue.message}`;
}

/** --db, else RLWATCH_DB, else the config's `db`, else ./rlwatch.db. A PostgreSQL URL is refused by name: taken as
 * a path it would have made a SQLite file in a folder called `postgres:`. */
export function resolveDbPath(flag: string | undefined, config: Config, env: NodeJS.ProcessEnv = process.env): string {
  const db = flag ?? env.RLWATCH_DB ?? config.db ?? 'rlwatch.db';
  if (isPostgresUrl(db)) {
    const from = flag !== undefined ? '--db' : env.RLWATCH_DB !== undefined ? 'RLWATCH_DB' : "the config's db";
    throw new UserError(
      `${from}: PostgreSQL is not yet a store for this command (only \`rlwatch migrate --to\` writes to it); ` +
        'give a SQLite file',
    );
  }
  return resolve(db);
}
