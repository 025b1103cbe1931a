/** A local HTTP receiver for outbound webhooks: records every request, answers as told (200 by default). */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** the raw body, as signed */
  raw: string;
}

export interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

export class HttpReceiver {
  readonly received: Received[] = [];
  /** answers for the next requests, in order; then `fallback` */
  readonly answers: Answer[] = [];
  fallback: (r: Received) => Answer = () => ({ status: 200, body: 'ok' });
  private constructor(private readonly server: Server) {}

  static async start(): Promise<HttpReceiver> {
    const server = createServer();
    const receiver = new HttpReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = { path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') };
        receiver.received.push(r);
        const a = receiver.answers.shift() ?? receiver.fallback(r);
        res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers }).end(a.body ?? '');
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return receiver;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  json<T = any>(i: number): T {
    return JSON.parse(this.received[i]!.raw) as T;
  }

  async waitFor(ok: () => boolean, ms = 5000): Promise<void> {
    for (const end = Date.now() + ms; !ok(); await sleep(20)) if (Date.now() > end) throw new Error('timed out');
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((done) => this.server.close(() => done()));
  }
}
