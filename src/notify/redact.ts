/**
 * Secrets in log text are replaced by `[redacted]` before the text leaves the process: a trainer that prints its
 * environment before it crashes must not post its keys to every channel. Applied where notifications reach a target
 * (`redactingTarget`) and where a command's reply is produced (src/interact/interaction.ts); the database keeps what
 * the file held. Built-in shapes plus `redact.patterns` from the config; there is no switch to turn it off.
 */
import type { Reply } from '../render/reply.ts';
import type { Config } from '../config/schema.ts';
import type { Notification } from '../engine/notification.ts';
import type { Target } from './dispatcher.ts';

export const REDACTED = '[redacted]';

/** Tokens recognised by their shape alone, wherever they stand. */
const BARE: readonly RegExp[] = [
  /\bhf_[A-Za-z0-9]{30,}/g, // Hugging Face
  /\bxox[abpr]-[A-Za-z0-9-]{10,}/g, // chat bot and user tokens (xoxb-, xoxp-), and app-level ones
  /\bxapp-[A-Za-z0-9-]{10,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{36,}/g, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{22,}/g,
  /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, // AWS access key ids
  /\bAIza[A-Za-z0-9_-]{35}/g, // Google API keys
  /\beyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]*/g, // JWTs: base64 of `{"` twice
];

/** OpenAI (`sk-`, `sk-proj-`) and Anthropic (`sk-ant-`) keys: a real one holds digits (`sk-some-long-run-name` is
 * not one), checked on the match so that the pattern stays one pass over the text. */
const SK = /\bsk-[\w-]{20,}/g;

/** `Bearer <token>` anywhere (a curl command, a request dump): the word kept. */
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/-]{8,}=*/g;
/** An AWS secret key after its name, whatever separates them (`--aws-secret-access-key X`, `aws_secret_key = X`). */
const AWS_SECRET =
  /\b(aws[\s_-]?secret[\s_-]?(?:access[\s_-]?)?key["']?\s*[:=]?\s*["']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/gi;
/** The password of a URL: `https://user:[redacted]@host`. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]{0,30}:\/\/[^\s/:@'"]{0,200}:)[^\s/@'"]{1,200}@/gi;
/**
 * `NAME=value`, `NAME: value`, `'NAME': 'value'`, `"NAME": "value"`: the name and the separator kept, the value
 * judged by `secretName`. An unquoted value may start with an HTTP auth scheme (`Authorization:
 * Bearer X`) and ends at a space, a quote, a comma, a bracket or a URL query's next `&name=`.
 */
const NAME_VALUE =
  /(?<![\w.])(\\?["']|)([A-Za-z_][\w.-]{0,100})\1(\s*[:=]\s*)(?:(\\?["'])([^\n]{0,512}?)\4|(\$\{\w+\}|(?:(?:Bearer|Basic|Token|Digest|Bot)\s+)?(?:[^\s'",;(){}[\]<>&]|&(?![\w.-]{1,100}=)){1,256}))/g;

/** A command-line flag and its value after a space (`--hub_token X`, `--password 'p w'`), as a launch script echoes
 * them; a value starting with `-` is the next flag. */
const FLAG_VALUE =
  /(?<![\w-])(--?)([A-Za-z][\w.-]{0,100})([ \t]+)(?:(["'])([^\n]{0,512}?)\4|([^\s'"-][^\s'"]{0,255}))/g;

/** What a secret's name holds somewhere: a text without it has no `NAME=value` to look at (the costly pass). */
const SECRET_HINT = /token|secret|passw|pwd|passphrase|credential|auth|key/i;
/** Words of a name that make its value a secret (`HF_TOKEN`, `db_password`, `Authorization`, `apiKey`). */
const SECRET_WORDS = new Set([
  'token',
  'secret',
  'secrets',
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'credential',
  'credentials',
  'auth',
  'authorization',
  'apikey',
  'privatekey',
]);
/** `key` is a secret's name only after one of these (`api_key`, `AWS_SECRET_ACCESS_KEY`) or in an upper-case
 * environment name: verl's `prompt_key: prompt` and `num_key_value_heads: 2` are configuration. */
const KEY_KINDS = new Set([
  'api',
  'access',
  'secret',
  'private',
  'signing',
  'encryption',
  'master',
  'client',
  'app',
  'account',
  'license',
  'service',
  'ssh',
  'deploy',
  'subscription',
]);
/** Words of a name whose value is about a secret, not the secret (`eos_token: <|im_end|>`, `pad_token_id`,
 * `max_token_len_per_gpu`, `hf_token_path`, `auth_url`). */
const ABOUT_WORDS = new Set([
  'id',
  'ids',
  'len',
  'length',
  'size',
  'count',
  'num',
  'max',
  'min',
  'shape',
  'type',
  'path',
  'file',
  'dir',
  'url',
  'uri',
  'name',
  'names',
  'prefix',
  'suffix',
  'env',
  'field',
  'mode',
  'method',
  'header',
  'expiry',
  'expires',
  'ttl',
  'timeout',
  'limit',
  'per',
  'total',
  'budget',
  'ratio',
  'rate',
  'level',
  'dim',
  'index',
  'idx',
  'pad',
  'eos',
  'bos',
  'unk',
  'mask',
  'sep',
  'cls',
  'special',
  'start',
  'end',
  'stop',
  'image',
  'video',
  'audio',
  'vision',
  'host',
  'user',
  'username',
  'provider',
  'enabled',
  'required',
]);
/** Words of a name whose numeric value is still a secret (a PIN); any other name's number is a count or an id. */
const NUMERIC_SECRET_WORDS = new Set(['password', 'passwd', 'pwd', 'passphrase', 'secret']);

const NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i;
/** Values that hold no secret: empty, none, booleans, placeholders (`<HUB_TOKEN>`, `${HF_TOKEN}`, `***`). */
const INERT = /^(?:|none|null|nil|undefined|true|false|\*+|\[redacted\]|<[^>]*>|\$\{?\w+\}?|\[[^\]]*\])$/i;

function secretName(name: string, value: string): boolean {
  if (!SECRET_HINT.test(name)) return false;
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  if (words.some((w) => ABOUT_WORDS.has(w))) return false;
  const named = words.some(
    (w, i) =>
      SECRET_WORDS.has(w) ||
      ((w === 'key' || w === 'keys') && (/^[A-Z0-9_]+$/.test(name) || KEY_KINDS.has(words[i - 1] ?? ''))),
  );
  if (!named || INERT.test(value.trim())) return false;
  return !NUMBER.test(value.trim()) || words.some((w) => NUMERIC_SECRET_WORDS.has(w));
}

/** What continues a bare value (NAME_VALUE's and FLAG_VALUE's, the narrower) past its first 256 characters. */
const VALUE_REST = /(?:[^\s'",;(){}[\]<>&]|&(?![\w.-]{1,100}=))*/y;

/**
 * The values of `re`'s matches (NAME_VALUE, FLAG_VALUE: groups lead, name, separator, value quote, quoted value, bare
 * value) that `secretName` judges secret. A value that is not one is looked into, not skipped: the string value of
 * `"msg"` may hold an escaped `\"api_key\": \"...\"`.
 */
function namedValues(text: string, re: RegExp): string {
  let out = '';
  let last = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const [whole, lead = '', name = '', sep = '', vq, quoted, bare] = m;
    // NAME_VALUE repeats the name's quote after it (its \1); a flag has none
    const head = re === NAME_VALUE ? `${lead}${name}${lead}${sep}` : `${lead}${name}${sep}`;
    const value = quoted ?? bare ?? '';
    if (!secretName(name, value)) {
      // looked into when a name could be in it (a quoted one may end early, at an escaped quote inside)
      if (vq || SECRET_HINT.test(value)) re.lastIndex = m.index + head.length;
      continue;
    }
    out += text.slice(last, m.index) + head + (vq ? `${vq}${REDACTED}${vq}` : REDACTED);
    last = m.index + whole.length;
    if (!vq) {
      // a bare value is matched up to 256 characters: the rest of a longer one goes too
      VALUE_REST.lastIndex = last;
      last += VALUE_REST.exec(text)?.[0].length ?? 0;
      re.lastIndex = last;
    }
  }
  return last === 0 ? text : out + text.slice(last);
}

/** The lines of a PEM private key: its markers are kept, its body becomes one `[redacted]` line. */
const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;
const PEM_END = /-----END [A-Z0-9 ]*PRIVATE KEY-----/;
/** A PEM key on one line (a Python repr with `\n` escapes): the text between the markers, or to the line's end. */
const PEM_INLINE = /(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?:.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----)|.+)/g;
/** A line of a key's body (and the headers of a legacy encrypted key). */
const PEM_BODY = /^\s*(?:[A-Za-z0-9+/]+={0,2}|(?:Proc-Type|DEK-Info):.*)?\s*$/;
/** A line that is one long base64 blob, as the middle of a key shown without its markers (a tail cut both ends):
 * upper and lower case and digits, so that a hex digest or a row of `=` is not one. */
const BLOB_SOURCE = String.raw`^[ \t]*(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*\d)[A-Za-z0-9+/]{60,}={0,2}[ \t]*$`;
const BLOB = new RegExp(BLOB_SOURCE);
/** BLOB for each line of a text (each such line becomes `[redacted]`) */
const BLOB_LINES = new RegExp(BLOB_SOURCE, 'gm');

/** Multi-line PEM keys in `text`, whole or cut at either end (an evidence block starts where it was cut). */
function redactPem(text: string): string {
  if (!text.includes('PRIVATE KEY-----')) return text.replace(BLOB_LINES, REDACTED);
  const out: string[] = [];
  let inBlock = false;
  const body = (): void => {
    if (out[out.length - 1] !== REDACTED) out.push(REDACTED);
  };
  for (const line of text.split('\n')) {
    const begin = PEM_BEGIN.exec(line);
    const end = PEM_END.exec(line);
    if (begin && (!end || end.index < begin.index)) {
      // the rest of the line after the marker, if any, is the key's start
      const marker = begin.index + begin[0].length;
      out.push(line.slice(0, marker) + (line.slice(marker).trim() === '' ? '' : REDACTED));
      inBlock = true;
    } else if (end && !begin) {
      if (!inBlock) {
        // the block's start was cut off: the body lines just above are the key's
        while (out.length > 0 && PEM_BODY.test(out[out.length - 1]!) && out[out.length - 1]!.trim() !== '') out.pop();
      }
      body();
      out.push(line.slice(end.index));
      inBlock = false;
    } else if (inBlock && PEM_BODY.test(line)) {
      body();
    } else {
      inBlock = false;
      if (BLOB.test(line)) body();
      else out.push(line.replace(PEM_INLINE, (_m, b: string, e?: string) => `${b}${REDACTED}${e ?? ''}`));
    }
  }
  return out.join('\n');
}

/** Redacts secrets from text, notifications and replies. */
export interface Redactor {
  /** `text` with each secret replaced; one string may hold several lines */
  text(text: string): string;
  /** lines read as one text (a key may span several), so their number may shrink */
  lines(lines: readonly string[]): string[];
  notification(n: Notification): Notification;
  /** the reply with its text, blocks, attachment and data redacted (data still built only when read) */
  reply(r: Reply): Reply;
}

/** Fields of a notification that name things rlwatch made or routes by, not text from a log. */
const STRUCTURAL = new Set(['run', 'rule', 'metric', 'severity', 'kind', 'by']);
const NONE: ReadonlySet<string> = new Set();

/** A redactor of the built-in shapes and `extra` (regular expressions, each match replaced whole). */
export function makeRedactor(extra: readonly string[] = []): Redactor {
  const own = extra.map((p) => new RegExp(p, 'g'));
  const text = (s: string): string => {
    let t = redactPem(s);
    t = t.replace(URL_PASSWORD, `$1${REDACTED}@`);
    t = t.replace(AWS_SECRET, `$1${REDACTED}`);
    if (SECRET_HINT.test(t)) t = namedValues(namedValues(t, NAME_VALUE), FLAG_VALUE);
    t = t.replace(BEARER, `$1${REDACTED}`);
    t = t.replace(SK, (m) => (/\d/.test(m) ? REDACTED : m));
    for (const re of BARE) t = t.replace(re, REDACTED);
    for (const re of own) t = t.replace(re, REDACTED);
    return t;
  };
  const lines = (ls: readonly string[]): string[] => (ls.length === 0 ? [] : text(ls.join('\n')).split('\n'));
  /** `v` with its strings redacted; a part without a change is `v`'s own (a long series is not copied) */
  const deep = (v: unknown, skip: ReadonlySet<string> = NONE): unknown => {
    if (typeof v === 'string') return text(v);
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) {
      if (v.length > 0 && v.every((x) => typeof x === 'string')) return lines(v);
      const out = v.map((x) => deep(x, skip));
      return out.some((x, i) => x !== v[i]) ? out : v;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return v; // typed arrays, dates: no text
    const obj = v as Record<string, unknown>;
    let out: Record<string, unknown> | null = null;
    for (const k of Object.keys(obj)) {
      const x = obj[k];
      if ((typeof x !== 'string' && (typeof x !== 'object' || x === null)) || skip.has(k)) continue;
      const y = deep(x, skip);
      if (y !== x) (out ??= { ...obj })[k] = y;
    }
    return out ?? v;
  };
  return {
    text,
    lines,
    notification: (n) => deep(n, STRUCTURAL) as Notification,
    reply(r) {
      // every field but `data`, which is not read here
      const rest = Object.fromEntries(
        Object.keys(r)
          .filter((k) => k !== 'data')
          .map((k) => [k, r[k as keyof Reply]]),
      );
      const out = {
        ...(rest as Omit<Reply, 'data'>),
        title: text(r.title),
        fields: r.fields.map((f) => ({ name: f.name, value: text(f.value) })),
        lines: lines(r.lines),
        ...(r.blocks ? { blocks: r.blocks.map((b) => ({ ...b, title: text(b.title), code: text(b.code) })) } : {}),
        ...(r.attachment ? { attachment: { ...r.attachment, content: text(r.attachment.content) } } : {}),
      };
      // `data` may be a getter that reads more from the store: still read only when asked for
      return Object.defineProperty(out as Reply, 'data', {
        enumerable: true,
        get: () => {
          const d: unknown = r.data;
          return d instanceof Promise ? d.then((x) => deep(x)) : deep(d);
        },
      });
    },
  };
}

/** Each config's redactor, built once. */
const built = new WeakMap<Config, Redactor>();
const defaults = makeRedactor();

/** The redactor of `config` (its `redact.patterns` added to the built-in shapes); the built-in one without one. */
export function redactorOf(config: Config | undefined): Redactor {
  if (!config || config.redact.patterns.length === 0) return defaults;
  let r = built.get(config);
  if (!r) built.set(config, (r = makeRedactor(config.redact.patterns)));
  return r;
}

/** `target`, given every notification redacted. */
export function redactingTarget(target: Target, r: Redactor): Target {
  return {
    name: target.name,
    ...(target.edits ? { edits: true } : {}),
    ...(target.quiet ? { quiet: target.quiet } : {}),
    deliver: (n, key, runId, urgency) => target.deliver(r.notification(n), key, runId, urgency),
  };
}
