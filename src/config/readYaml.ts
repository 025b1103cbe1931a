/**
 * Reads a YAML config file within a size cap, and tells whether it holds a secret (so that a file others can read
 * is warned of).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { parse, YAMLParseError } from 'yaml';
import { UserError } from '../lib/errors.ts';

/** Largest config file read: a config is a few KB; parsing tens of MB takes seconds and gigabytes. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** The YAML in `file`, and the file's permission bits; a file that cannot be read or parsed, or is over
 * MAX_CONFIG_BYTES, is a UserError naming it. (Its own module: the parser is a sixth of the CLI's code, loaded only
 * when there is a file to read.) */
export function readYaml(file: string): { raw: unknown; mode: number } {
  let text: string;
  let mode: number;
  try {
    const fd = openSync(file, 'r');
    try {
      mode = fstatSync(fd).mode;
      // read at most one byte past the limit: a size from stat says nothing of a pipe or a device
      const buf = Buffer.alloc(MAX_CONFIG_BYTES + 1);
      let got = 0;
      for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, null);
      if (got > MAX_CONFIG_BYTES) throw new UserError(`${file}: is over 1 MB, the most a config file may be`);
      text = buf.toString('utf8', 0, got);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`${file}: cannot read: ${(err as Error).message}`);
  }
  try {
    return { raw: parse(text), mode };
  } catch (err) {
    if (err instanceof YAMLParseError) throw new UserError(`${file}: not valid YAML: ${err.message.split('\n')[0]}`);
    throw new UserError(`${file}: cannot parse: ${(err as Error).message}`);
  }
}

const SECRET_KEY = /(token|secret|password|passwd|api_?key)$/i;
/** a chat bot's or app's token, by its own prefix */
const TOKEN_VALUE = /^xox[abeprs]-|^xapp-/;
/** an incoming hook's URL is itself the credential: whoever has it may post to the channel */
const HOOK_URL = /^https?:\/\/[^\s]*hook/i;
const SECRET_PARAM = /^(token|access_token|key|api_key|apikey|sig|signature|secret|password)$/i;

/** Whether the parsed config holds a secret: a `*token`, `*secret`, `*password` or `*api_key` key with a value, a
 * token by its prefix, a hook URL, or a URL with a password or a token, key or signature in its query. Keys no field
 * has count too: the file holds the secret whether or not the schema then refuses it. */
export function holdsSecret(value: unknown, key = ''): boolean {
  if (typeof value === 'string') {
    return (SECRET_KEY.test(key) && value !== '') || TOKEN_VALUE.test(value) || secretUrl(value);
  }
  if (typeof value === 'number') return SECRET_KEY.test(key);
  if (Array.isArray(value)) return value.some((v) => holdsSecret(v, key));
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => holdsSecret(v, k));
  return false;
}

function secretUrl(text: string): boolean {
  if (HOOK_URL.test(text)) return true;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return url.password !== '' || [...url.searchParams.keys()].some((k) => SECRET_PARAM.test(k));
}
