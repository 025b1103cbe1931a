/**
 * `rlwatch init`: a commented rlwatch.yaml (watch roots, database, the chosen platforms' sections, a rule change to
 * copy) and a .env holding the chosen platforms' variables, empty, each with where to get it. The .env is the
 * user's alone (mode 600): it is where the tokens go. A file that exists is replaced only with --force or a yes.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { PACKAGE_ROOT } from '../lib/paths.ts';
import { ENV_SECTIONS, INIT_PLATFORMS, SETUP_FILES, YAML_SECTIONS, type InitPlatform } from '../platforms/index.ts';

export { INIT_PLATFORMS };

export interface InitOptions {
  dir: string;
  /** the platforms named by flags; none: asked on a terminal, else the terminal-only config */
  platforms: InitPlatform[];
  force: boolean;
  /** asks a question on the terminal; absent when stdin is not one */
  ask?: (question: string) => Promise<string>;
}

export interface InitResult {
  /** what was written, one line each, and what to do next */
  lines: string[];
  /** the files that exist and were not replaced */
  kept: string[];
}

const YAML_HEAD = `# rlwatch's config, written by \`rlwatch init\`. Every field is described in rlwatch.example.yaml and
# docs/configuration.md. Relative paths are resolved against this file's folder. Tokens, passwords and hook
# URLs go in .env, never here.

db: ./rlwatch.db                # the SQLite file (or a postgres:// URL); --db and RLWATCH_DB take precedence

watch:
  roots:                        # the folders your trainers write their runs under: every folder below a root
    - ./runs                    # that holds a recognised log is a run (docs/formats.md lists the files)
  poll: false                   # true on NFS / Lustre, where file-system events never arrive

alerts:
  preset: grpo                  # the built-in GRPO rules (docs/alerts.md); none for none
  rules: []                     # changes to built-in rules, by id, and rules of your own
  # rules:                      # for instance, mode_collapse when 90% of the batch has zero reward spread:
  #   - { id: mode_collapse, value: 0.9 }
`;

const TERMINAL_ONLY = `
# No chat platform: alerts are printed by \`rlwatch start\`. To post them to chat (${INIT_PLATFORMS.join(', ')}),
# see docs/first-hour.md (rlwatch init --${INIT_PLATFORMS[1]}, for one, writes the section and the .env).
`;

const ENV_HEAD = `# rlwatch reads these from the environment, or from this file in the folder you run rlwatch from.
# It holds tokens: keep it to yourself (rlwatch init wrote it with mode 600) and out of version control.
# Every variable rlwatch reads is in .env.example.
`;

/** The config's text for `platforms` (in their order in INIT_PLATFORMS). */
function configText(platforms: readonly InitPlatform[]): string {
  const chosen = INIT_PLATFORMS.filter((p) => platforms.includes(p));
  return YAML_HEAD + (chosen.length === 0 ? TERMINAL_ONLY : chosen.map((p) => YAML_SECTIONS[p]).join(''));
}

/** The .env's text for `platforms`. */
function envText(platforms: readonly InitPlatform[]): string {
  return (
    ENV_HEAD +
    INIT_PLATFORMS.filter((p) => platforms.includes(p))
      .map((p) => ENV_SECTIONS[p])
      .join('')
  );
}

/** `answer` read as platform names: commas or spaces between them; unknown names are a UserError. */
function platformsFrom(answer: string): InitPlatform[] {
  const names = answer
    .toLowerCase()
    .split(/[\s,]+/)
    .filter(Boolean);
  const unknown = names.filter((n) => !(INIT_PLATFORMS as readonly string[]).includes(n));
  if (unknown.length > 0)
    throw new UserError(`no platform ${unknown.map((n) => `'${n}'`).join(', ')}: one of ${INIT_PLATFORMS.join(', ')}`);
  return names as InitPlatform[];
}

async function choosePlatforms(opts: InitOptions): Promise<InitPlatform[]> {
  if (opts.platforms.length > 0 || !opts.ask) return opts.platforms;
  const question =
    `Which chat platforms should alerts go to? ${INIT_PLATFORMS.join(', ')} ` +
    '(several with commas; Enter for the terminal only): ';
  for (let asked = question; ; ) {
    try {
      return platformsFrom(await opts.ask(asked));
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      asked = `${err.message}. ${question}`;
    }
  }
}

/** Writes the files; a file that exists is replaced with --force or a yes on the terminal, else kept. */
export async function init(opts: InitOptions): Promise<InitResult> {
  const platforms = await choosePlatforms(opts);
  const dir = resolve(opts.dir);
  mkdirSync(dir, { recursive: true });
  const files: Array<{ path: string; text: string; secret: boolean; what: string }> = [
    {
      path: join(dir, 'rlwatch.yaml'),
      text: configText(platforms),
      secret: false,
      what: `the watch roots (./runs), the database (./rlwatch.db)${platforms.length > 0 ? `, ${platforms.join(', ')}` : ', the terminal only'}`,
    },
  ];
  if (platforms.length > 0) {
    const names = envText(platforms)
      .split('\n')
      .filter((l) => /^[A-Z_]+=$/.test(l))
      .map((l) => l.slice(0, -1));
    files.push({
      path: join(dir, '.env'),
      text: envText(platforms),
      secret: true,
      what: `fill in ${names.join(', ')}`,
    });
  }
  const lines: string[] = [];
  const kept: string[] = [];
  for (const f of files) {
    if (existsSync(f.path) && !opts.force) {
      const yes = opts.ask ? /^y(es)?$/i.test((await opts.ask(`${f.path} exists: replace it? [y/N] `)).trim()) : false;
      if (!yes) {
        kept.push(f.path);
        continue;
      }
    }
    // mode 600 from the first byte, and again for a file that existed with another
    writeFileSync(f.path, f.text, f.secret ? { mode: 0o600 } : {});
    if (f.secret) chmodSync(f.path, 0o600);
    lines.push(`wrote ${f.path}${f.secret ? ' (mode 600)' : ''}: ${f.what}`);
  }
  for (const path of kept) lines.push(`kept ${path}: it exists (rlwatch init --force replaces it)`);
  // the files' comments name docs/, rlwatch.example.yaml and the platforms' setup files: installed from npm, they
  // are in the package's folder, which nothing else tells
  lines.push(
    `guides (docs/first-hour.md, docs/platforms/), rlwatch.example.yaml and ${SETUP_FILES.join(', ')}: in ${PACKAGE_ROOT}`,
  );
  const here = relative(process.cwd(), dir);
  const env = join(dir, '.env');
  const fill = platforms.length > 0 && !kept.includes(env) ? `fill in ${relative(process.cwd(), env)}, then ` : '';
  lines.push(
    `next: ${fill}${here === '' ? '' : `cd ${here} && `}rlwatch doctor   (it checks the config, the database, the roots and each platform)`,
  );
  return { lines, kept };
}
