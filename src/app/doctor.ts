/**
 * `rlwatch doctor`: what a first `start` depends on, checked without posting anything anywhere: the config file, the
 * database, the watch roots (and the inotify budget), and each configured chat platform's token, channel and rights.
 * Each check is ok, warn or fail; a failure says what to do about it. Network checks give up after `timeoutMs`.
 */
import {
  accessSync,
  constants,
  type Dirent,
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from './loadConfig.ts';
import type { Config } from '../config/schema.ts';
import { UserError } from '../lib/errors.ts';
import { discover, isIgnoredDir } from '../ingest/discover/discover.ts';
import { locateRun, visibleName } from '../ingest/discover/runLocator.ts';
import { MIGRATIONS_DIR } from '../lib/paths.ts';
import {
  ENV_SECTIONS,
  fail,
  INIT_PLATFORMS,
  ok,
  PLATFORMS,
  platformChecks,
  warn,
  type Check,
  type Status,
} from '../platforms/index.ts';
import { sectionOf } from '../platforms/platform.ts';
import { databaseError } from '../store/dbErrors.ts';
import { dbLocation, isPostgresUrl } from '../store/open.ts';
import { redactUrl } from '../store/postgres/url.ts';

export type { Check };

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

/** Runs every check; the platforms' network checks run side by side. */
export async function doctor(opts: DoctorOptions = {}): Promise<Check[]> {
  const env = opts.env ?? process.env;
  const t = opts.timeoutMs ?? NET_TIMEOUT_MS;
  const { checks, config, file } = await configChecks(opts.config, env);
  // without a config that loads, `start` stops there: what follows would be checked against the wrong settings
  if (!config) return checks;
  checks.push(await databaseCheck(dbLocation(opts.db, config, env), t));
  checks.push(...rootChecks(config, opts.watchesFile ?? WATCHES_FILE));
  if (file) checks.push(...sectionsLeftOff(file, config, env));
  checks.push(...(await platformChecks(PLATFORMS, config, env, t)));
  return checks;
}

async function configChecks(
  explicit: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<{ checks: Check[]; config: Config | null; file: string | null }> {
  const warnings: string[] = [];
  try {
    const { config, file } = await loadConfig(explicit, env, (line) => warnings.push(line));
    const checks = [
      file
        ? ok('config', `${file} loads`)
        : warn(
            'config',
            'no rlwatch.yaml here (nor --config, RLWATCH_CONFIG): running on the defaults',
            'rlwatch init writes one',
          ),
    ];
    for (const w of warnings) checks.push(warn('config', w.replace(/^warning: /, ''), null));
    return { checks, config, file: file ?? null };
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    return {
      checks: [
        fail(
          'config',
          err.message,
          'correct the field named (rlwatch.example.yaml and docs/configuration.md describe each), then run rlwatch doctor again',
        ),
      ],
      config: null,
      file: null,
    };
  }
}

/** A platform whose section the config file has but whose token is not set is off, and nothing else would say so:
 * `init` writes the section and the platform's variables empty, and one left unfilled (one platform filled in,
 * another forgotten) would pass every other check. */
function sectionsLeftOff(file: string, config: Config, env: NodeJS.ProcessEnv): Check[] {
  const raw = parse(readFileSync(file, 'utf8')) as Record<string, unknown> | null;
  const dotenv = join(process.cwd(), '.env');
  const where = existsSync(dotenv) ? dotenv : '.env or the environment';
  return INIT_PLATFORMS.flatMap((id) => {
    const platform = PLATFORMS.find((p) => p.id === id);
    if (!platform || raw?.[id] === undefined) return [];
    try {
      if (platform.settings(sectionOf(config, platform), env) !== null) return [];
    } catch {
      return []; // set but incomplete: its own check names what is missing
    }
    const unset = [...ENV_SECTIONS[id].matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]!).filter((name) => !env[name]);
    return [
      warn(
        id,
        `${file} has a ${id} section, but ${unset.join(', ')} ${unset.length === 1 ? 'is' : 'are'} not set: ${id} is off`,
        `fill ${unset.length === 1 ? 'it' : 'them'} in, in ${where} (a comment above each says where to get it), or remove the section`,
      ),
    ];
  });
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
  return readdirSync(dir)
    .map((n) => /^(\d+)_.*\.sql$/.exec(n)?.[1])
    .filter((v) => v !== undefined)
    .map(Number);
}

/** Where the schema of a database with `applied` stands against the migration files of `dir`. */
function schemaCheck(label: string, applied: readonly number[], dir: string): Check {
  const known = migrationVersions(dir);
  const newer = applied.filter((v) => !known.includes(v));
  if (newer.length > 0) {
    return fail(
      'database',
      `${label} was written by a newer rlwatch (schema changes ${newer.join(', ')} unknown to this one)`,
      'upgrade rlwatch, or give this one a database of its own',
    );
  }
  const pending = known.filter((v) => !applied.includes(v)).length;
  if (applied.length === 0) return ok('database', `${label}: a new database; start creates its tables`);
  return ok(
    'database',
    pending > 0
      ? `${label}: ${pending} schema change${pending === 1 ? '' : 's'} to apply, which start does`
      : `${label}: schema current (version ${Math.max(...known)})`,
  );
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
    return fail(
      'database',
      `${path} is not writable (SQLite writes the file and its -wal beside it)`,
      `give yourself write access to ${path} and its folder, or ${WHERE_DB}`,
    );
  }
  const [{ default: Database }, { SQLITE_ADDON }] = await Promise.all([
    import('better-sqlite3'),
    import('../store/sqlite/sqliteAddon.ts'),
  ]);
  let db: InstanceType<typeof Database> | undefined;
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
  const [{ default: pg }, { PG_MIGRATIONS_DIR }] = await Promise.all([
    import('pg'),
    import('../store/postgres/connect.ts'),
  ]);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: t, query_timeout: t });
  client.on('error', () => {}); // a connection dropped after the answer: the result is in already
  const label = redactUrl(url);
  try {
    await client.connect();
    const table = await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations') AS t");
    const applied = table.rows[0]?.t
      ? (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) =>
          Number(r.version),
        )
      : [];
    return schemaCheck(label, applied, PG_MIGRATIONS_DIR);
  } catch (err) {
    return fail(
      'database',
      `cannot use PostgreSQL at ${label}: ${(err as Error).message}`,
      "check that the server is up and reachable from here, and the URL's host, port, user, password and database",
    );
  } finally {
    await client.end().catch(() => {});
  }
}

// ------------------------------------------------------------------------------------------------- watch roots

/** The directories `start` would watch below `root` (one inotify watch each), walked as TreeWatch walks them. */
function countDirs(root: string, depth: number, ignore: readonly string[]): number {
  const seen = new Set<string>();
  const walk = (dir: string, level: number): void => {
    let entries: Dirent[];
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
    return [
      warn(
        'watch roots',
        'watch.roots is empty: start then needs the directories on its command line (rlwatch start DIR)',
        'set watch.roots in rlwatch.yaml to the folder(s) your trainers write their logs under',
      ),
    ];
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
      checks.push(
        code === 'ENOENT'
          ? fail(
              label,
              'does not exist',
              `create it (mkdir -p ${root}), or set watch.roots in rlwatch.yaml to where your trainers write logs`,
            )
          : fail(label, `cannot read it (${code ?? (err as Error).message})`, `give yourself read access to ${root}`),
      );
      continue;
    }
    const { files } = discover(root, depth, ignore, roots);
    const runs = new Set(files.map((f) => locateRun(root, f).name)).size;
    const n = countDirs(root, depth, ignore);
    dirs += n;
    checks.push(
      files.length === 0
        ? warn(
            label,
            `no log file here yet (${n} director${n === 1 ? 'y' : 'ies'} looked at)`,
            'nothing to do if no run has started: start picks runs up as they appear (docs/formats.md lists the files rlwatch reads)',
          )
        : ok(
            label,
            `${runs} run${runs === 1 ? '' : 's'}, ${files.length} file${files.length === 1 ? '' : 's'} named like logs, ${n} director${n === 1 ? 'y' : 'ies'}`,
          ),
    );
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
  const raise =
    'raise it: sudo sysctl fs.inotify.max_user_watches=524288 (and the same line in /etc/sysctl.d/ to keep it), or set watch.poll: true';
  const watched = `${dirs} director${dirs === 1 ? 'y' : 'ies'} to watch`;
  if (dirs > max) checks.push(fail('inotify', `${watched}, over fs.inotify.max_user_watches (${max})`, raise));
  else if (dirs > max / 2)
    checks.push(
      warn(
        'inotify',
        `${watched}, more than half of fs.inotify.max_user_watches (${max}), which every program of this user shares`,
        raise,
      ),
    );
  else checks.push(ok('inotify', `${watched}, within fs.inotify.max_user_watches (${max})`));
  return checks;
}

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
  lines.push(
    '',
    failed > 0
      ? `${failed} failed, ${warnings}: fix the failures above, then run rlwatch doctor again`
      : `nothing failed (${warnings}): next, rlwatch notify --test sends a test card, then rlwatch start`,
  );
  return lines.join('\n');
}
