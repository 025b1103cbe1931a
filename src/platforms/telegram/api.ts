/** The few Bot API methods rlwatch calls, over fetch; failures classified for the dispatcher. */
import { DeliveryError } from '../../notify/dispatcher.ts';

interface Answer<T> {
  ok: boolean;
  result?: T;
  error_code?: number;
  description?: string;
  parameters?: { retry_after?: number };
}

/** The sender of a message or a button press (Bot API `User`). */
export interface TgUser {
  id: number;
  username?: string;
  first_name?: string;
  last_name?: string;
}

export interface TgMessage {
  message_id: number;
  chat: { id: number };
  from?: TgUser;
  text?: string;
}

export interface TgUpdate {
  update_id: number;
  message?: TgMessage;
  callback_query?: { id: string; from: TgUser; message?: TgMessage; data?: string };
}

/** An error the Bot API answered: 429 carries Retry-After, other 4xx cannot heal, 401 means the token. */
function apiError(method: string, status: number, a: Answer<unknown>): DeliveryError {
  const why = `telegram ${method}: ${a.error_code ?? status} ${a.description ?? ''}`.trim();
  const code = a.error_code ?? status;
  if (code === 429) return new DeliveryError(why, (a.parameters?.retry_after ?? 1) * 1000);
  return new DeliveryError(why, undefined, code >= 400 && code < 500);
}

export class BotApi {
  constructor(
    private readonly base: string,
    private readonly token: string,
  ) {}

  /** A JSON call; `timeoutMs` bounds it (long polls pass their own, longer one). */
  async call<T>(
    method: string,
    params: Record<string, unknown>,
    opts: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<T> {
    return this.send<T>(
      method,
      { body: JSON.stringify(params), headers: { 'content-type': 'application/json' } },
      opts,
    );
  }

  /** sendPhoto with the PNG uploaded as multipart form data. */
  async sendPhoto(chatId: string, png: Buffer, fields: Record<string, string>): Promise<TgMessage> {
    const form = new FormData();
    form.set('chat_id', chatId);
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    form.set('photo', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'chart.png');
    return this.send<TgMessage>('sendPhoto', { body: form }, {});
  }

  private async send<T>(
    method: string,
    init: { body: BodyInit; headers?: Record<string, string> },
    opts: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<T> {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await fetch(`${this.base}/bot${this.token}/${method}`, { method: 'POST', ...init, signal });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      throw new DeliveryError(`telegram ${method}: no answer (${cause})`);
    }
    const a = (await res.json().catch(() => ({ ok: false, description: `HTTP ${res.status}` }))) as Answer<T>;
    if (!a.ok)
      throw res.status >= 500
        ? new DeliveryError(`telegram ${method}: HTTP ${res.status}`)
        : apiError(method, res.status, a);
    return a.result as T;
  }
}
