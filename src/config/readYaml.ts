import { readFileSync } from 'node:fs';
import { parse, YAMLParseError } from 'yaml';
import { UserError } from '../errors.ts';

/** The YAML in `file`; a file that cannot be read or parsed is a UserError naming it. (Its own module: the parser
 * is a sixth of the CLI's code, loaded only when there is a file to read.) */
export function readYaml(file: string): unknown {
  try {
    return parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if (err instanceof YAMLParseError) throw new UserError(`${file}: not valid YAML: ${err.message.split('\n')[0]}`);
    throw new UserError(`${file}: cannot read: ${(err as Error).message}`);
  }
}
