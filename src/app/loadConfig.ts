/**
 * The config a command runs with: the file as config/load.ts reads it, and its rules checked with the engine's rule
 * book, so that a bad rule stops every command at start, named by its place in the file.
 */
import { readConfig, type LoadedConfig } from '../config/load.ts';
import { UserError } from '../lib/errors.ts';

export async function loadConfig(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
  warn?: (line: string) => void,
): Promise<LoadedConfig> {
  const loaded = await readConfig(explicit, env, warn);
  if (loaded.file === null) return loaded;
  // the rule book is built here only to check the file's rules (the preset is parsed as it loads): a command that
  // runs on the defaults does without it
  const [{ ruleBookFor }, { RuleError }] = await Promise.all([
    import('../engine/presets/index.ts'),
    import('../engine/rules.ts'),
  ]);
  try {
    ruleBookFor(loaded.config);
  } catch (err) {
    if (err instanceof RuleError) throw new UserError(`${loaded.file}: ${err.message}`);
    throw err;
  }
  return loaded;
}
