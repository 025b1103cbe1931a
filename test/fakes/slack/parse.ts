/**
 * Request-body parsing for the fake Slack server.
 *
 * @slack/web-api's WebClient (node_modules/@slack/web-api/dist/WebClient.js, `serializeApiCallData`) sends:
 *   - `application/x-www-form-urlencoded`: every non-scalar argument (blocks, attachments, files, metadata…) is
 *     JSON-encoded into a string, scalars are stringified (`length=5`, `unfurl_links=false`), undefined/null dropped;
 *   - `multipart/form-data` (via the form-data package) as soon as one argument is a Buffer or a stream. That is how
 *     `files.uploadV2` POSTs the bytes to the `upload_url`: a single part named `body`, filename `Untitled`.
 * Bolt's `respond()` (node_modules/@slack/bolt/dist/context/create-respond.js) posts `application/json` with axios.
 */
import type { IncomingMessage } from 'node:http';

/** Arguments the real Web API takes as JSON inside a form field; they are decoded so tests can inspect them. */
const JSON_FIELDS = new Set([
  'blocks',
  'attachments',
  'files',
  'metadata',
  'view',
  'user_auth_blocks',
  'options',
  'option_groups',
]);

export interface ParsedBody {
  args: Record<string, unknown>;
  /** Binary parts of a multipart body, by field name (form-data names a Buffer's part after its key). */
  files: Record<string, { filename: string | undefined; contentType: string | undefined; data: Buffer }>;
  /** The bytes as received. */
  raw: Buffer;
  contentType: string;
}

export async function readBody(req: IncomingMessage, limit = 64 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > limit) throw new Error(`request body over ${limit} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

function decodeField(key: string, value: string): unknown {
  if (!JSON_FIELDS.has(key)) return value;
  const trimmed = value.trim();
  if (!trimmed.startsWith('[') && !trimmed.startsWith('{')) return value;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return value;
  }
}

/** Parse a body the way Slack does: form, JSON or multipart; query-string arguments are merged underneath. */
export function parseBody(contentTypeHeader: string | undefined, raw: Buffer, query: URLSearchParams): ParsedBody {
  const contentType = (contentTypeHeader ?? '').toLowerCase();
  const args: Record<string, unknown> = {};
  const files: ParsedBody['files'] = {};
  for (const [k, v] of query) args[k] = decodeField(k, v);

  if (contentType.startsWith('application/json')) {
    const text = raw.toString('utf8').trim();
    if (text !== '') {
      const parsed = JSON.parse(text) as unknown;
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(args, parsed);
      else args['_body'] = parsed;
    }
  } else if (contentType.startsWith('multipart/form-data')) {
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentTypeHeader ?? '');
    const b = boundary?.[1] ?? boundary?.[2];
    if (b === undefined) throw new Error('multipart body without boundary');
    for (const part of parseMultipart(raw, b.trim())) {
      if (part.filename !== undefined || (part.contentType !== undefined && !part.contentType.startsWith('text/'))) {
        files[part.name] = { filename: part.filename, contentType: part.contentType, data: part.data };
      } else {
        args[part.name] = decodeField(part.name, part.data.toString('utf8'));
      }
    }
  } else if (raw.length > 0 && (contentType === '' || contentType.startsWith('application/x-www-form-urlencoded'))) {
    for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) args[k] = decodeField(k, v);
  }
  return { args, files, raw, contentType };
}

export interface MultipartPart {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  data: Buffer;
}

/** Minimal RFC 7578 parser: enough for form-data's output (CRLF line breaks, one header block per part). */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  while (pos !== -1) {
    let start = pos + delimiter.length;
    // closing delimiter `--boundary--`
    if (body[start] === 0x2d && body[start + 1] === 0x2d) break;
    if (body[start] === 0x0d && body[start + 1] === 0x0a) start += 2;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    // the part's content ends with the CRLF that precedes the next delimiter
    let end = next;
    if (body[end - 2] === 0x0d && body[end - 1] === 0x0a) end -= 2;
    const chunk = body.subarray(start, end);
    const headerEnd = chunk.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const headers = chunk.subarray(0, headerEnd).toString('utf8').split('\r\n');
      let name = '';
      let filename: string | undefined;
      let contentType: string | undefined;
      for (const line of headers) {
        const [key, ...rest] = line.split(':');
        const value = rest.join(':').trim();
        if (key?.trim().toLowerCase() === 'content-disposition') {
          name = /\bname="([^"]*)"/i.exec(value)?.[1] ?? '';
          filename = /\bfilename="([^"]*)"/i.exec(value)?.[1];
        } else if (key?.trim().toLowerCase() === 'content-type') {
          contentType = value;
        }
      }
      parts.push({ name, filename, contentType, data: Buffer.from(chunk.subarray(headerEnd + 4)) });
    }
    pos = next;
  }
  return parts;
}

/** The bearer token of a request, else the `token` argument (WebClient sends both when `token` is an argument). */
export function requestToken(req: IncomingMessage, args: Record<string, unknown>): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m?.[1] !== undefined) return m[1];
  }
  return typeof args['token'] === 'string' && args['token'] !== '' ? args['token'] : undefined;
}
