/**
 * A local fake of the Telegram Bot API: the methods rlwatch calls (getMe, sendMessage, editMessageText,
 * sendPhoto, answerCallbackQuery, getUpdates with long polling), the way api.telegram.org answers them, and
 * users who type commands and press buttons.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface FakeTgMessage {
  message_id: number;
  chat: { id: number };
  text?: string;
  parse_mode?: string;
  reply_markup?: { inline_keyboard: Array<Array<{ text: string; callback_data: string }>> };
  reply_to_message_id?: number;
  /** sendPhoto */
  photo?: Buffer;
  caption?: string;
  /** texts this message had before each edit */
  edits: string[];
  from_bot: boolean;
}

type Update = Record<string, unknown> & { update_id: number };

/** A Telegram user: `first_name` is always there (Bot API `User`); the username and last name are optional. */
export interface FakeTgUser {
  id: number;
  first_name: string;
  last_name?: string;
  username?: string;
}
const tgUser = (u: FakeTgUser) => ({
  id: u.id,
  is_bot: false,
  first_name: u.first_name,
  ...(u.last_name ? { last_name: u.last_name } : {}),
  ...(u.username ? { username: u.username } : {}),
});

export class FakeTelegram {
  readonly token = '123456:TEST-token';
  readonly messages: FakeTgMessage[] = [];
  readonly callbackAnswers: Array<{ callback_query_id: string; text?: string; show_alert?: boolean }> = [];
  readonly calls: string[] = [];
  private readonly updates: Update[] = [];
  private nextUpdate = 1;
  private nextMessage = 1;
  private wake: Array<() => void> = [];
  /** the next answers to sendMessage, in order, instead of success (e.g. a 429) */
  readonly failSend: Array<{ status: number; body: Record<string, unknown> }> = [];
  /** chats getChat does not find (the bot was never added, or was removed); any other id is a group */
  readonly unknownChats = new Set<number>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<FakeTelegram> {
    const server = createServer();
    const tg = new FakeTelegram(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void tg
          .handle(req.url ?? '', String(req.headers['content-type'] ?? ''), Buffer.concat(chunks))
          .then(({ status, body }) => {
            if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
          });
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return tg;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A user types a message in a chat. */
  say(chatId: number, user: FakeTgUser, text: string): void {
    this.push({
      message: {
        message_id: this.nextMessage++,
        chat: { id: chatId, type: 'group' },
        from: tgUser(user),
        text,
        date: 0,
      },
    });
  }

  /** A user presses an inline button under a bot message. */
  press(message: FakeTgMessage, user: FakeTgUser, data: string): string {
    const id = `cb${this.nextUpdate}`;
    this.push({
      callback_query: { id, from: tgUser(user), message: { message_id: message.message_id, chat: message.chat }, data },
    });
    return id;
  }

  botMessages(chatId: number): FakeTgMessage[] {
    return this.messages.filter((m) => m.chat.id === chatId && m.from_bot);
  }

  async waitFor(ok: () => boolean, ms = 10_000): Promise<void> {
    for (const end = Date.now() + ms; !ok(); await sleep(20)) if (Date.now() > end) throw new Error('timed out');
  }

  close(): Promise<void> {
    for (const w of this.wake.splice(0)) w();
    this.server.closeAllConnections();
    return new Promise((done) => this.server.close(() => done()));
  }

  private push(u: Record<string, unknown>): void {
    this.updates.push({ update_id: this.nextUpdate++, ...u });
    for (const w of this.wake.splice(0)) w();
  }

  private async handle(
    url: string,
    type: string,
    raw: Buffer,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(url);
    if (!m || m[1] !== this.token)
      return { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } };
    const method = m[2]!;
    this.calls.push(method);
    const p = type.startsWith('multipart/')
      ? await this.form(type, raw)
      : (JSON.parse(raw.toString() || '{}') as Record<string, any>);
    const ok = (result: unknown) => ({ status: 200, body: { ok: true, result } });
    const bad = (description: string) => ({
      status: 400,
      body: { ok: false, error_code: 400, description: `Bad Request: ${description}` },
    });
    switch (method) {
      case 'getMe':
        return ok({ id: 42, is_bot: true, first_name: 'rlwatch', username: 'rlwatch_bot' });
      case 'getChat':
        return this.unknownChats.has(Number(p.chat_id))
          ? bad('chat not found')
          : ok({ id: Number(p.chat_id), type: 'supergroup', title: 'rlwatch alerts' });
      case 'sendMessage': {
        const fail = this.failSend.shift();
        if (fail) return fail;
        if (typeof p.text !== 'string' || p.text.length === 0) return bad('message text is empty');
        if (p.text.length > 4096) return bad('message is too long');
        return ok(
          this.record({
            chat: { id: Number(p.chat_id) },
            text: p.text,
            parse_mode: p.parse_mode,
            reply_markup: p.reply_markup,
            reply_to_message_id: p.reply_to_message_id,
          }),
        );
      }
      case 'sendPhoto':
        return ok(
          this.record({
            chat: { id: Number(p.chat_id) },
            photo: p.photo,
            caption: p.caption,
            reply_to_message_id: Number(p.reply_to_message_id),
          }),
        );
      case 'editMessageText': {
        const msg = this.messages.find((x) => x.chat.id === Number(p.chat_id) && x.message_id === Number(p.message_id));
        if (!msg) return bad('message to edit not found');
        if (msg.text === p.text && JSON.stringify(msg.reply_markup) === JSON.stringify(p.reply_markup)) {
          return bad('message is not modified: specified new message content and reply markup are exactly the same');
        }
        msg.edits.push(msg.text ?? '');
        Object.assign(msg, { text: p.text, parse_mode: p.parse_mode, reply_markup: p.reply_markup });
        return ok(msg);
      }
      case 'answerCallbackQuery':
        this.callbackAnswers.push(p as never);
        return ok(true);
      case 'getUpdates': {
        const offset = Number(p.offset ?? 0);
        const ready = () => this.updates.filter((u) => u.update_id >= offset);
        if (ready().length === 0) {
          await Promise.race([new Promise<void>((w) => this.wake.push(w)), sleep(Number(p.timeout ?? 0) * 1000)]);
        }
        return ok(ready());
      }
      default:
        return { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } };
    }
  }

  private record(m: Omit<FakeTgMessage, 'message_id' | 'edits' | 'from_bot'>): FakeTgMessage {
    const msg: FakeTgMessage = { message_id: this.nextMessage++, edits: [], from_bot: true, ...m };
    this.messages.push(msg);
    return msg;
  }

  private async form(type: string, raw: Buffer): Promise<Record<string, any>> {
    const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': type } }).formData();
    const out: Record<string, any> = {};
    for (const [k, v] of form.entries()) out[k] = typeof v === 'string' ? v : Buffer.from(await v.arrayBuffer());
    return out;
  }
}
