/**
 * Synchronous calls into a worker thread (the technique of the `synckit` package): the caller posts a request on a
 * MessagePort and sleeps in `Atomics.wait` on a shared word until the worker, having answered on the port, sets it;
 * the answer is then taken off the port with `receiveMessageOnPort`, without the caller's event loop. The worker
 * handles one request at a time, since its caller waits for each.
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

/** What the caller sends: a method of the worker's and its arguments (structured-cloned), and the caller's clock. */
export interface SyncRequest {
  method: string;
  args: unknown[];
  now: number;
}

/** An error as it crosses: its message and its code (a SQLSTATE, or Node's for the network). */
export interface CrossedError {
  message: string;
  code?: string;
}

export type SyncReply = { ok: true; value: unknown } | { ok: false; error: CrossedError };

/** The shared word: what the worker last did. */
const WAITING = 0;
const ANSWERED = 1;
const EXITED = 2;

/** How long a call may wait before it is given up: a worker that neither answers nor exits is stuck. */
const STUCK_MS = 10 * 60_000;

/** The two ends of a bridge: `port` and `state` go to the worker (`serveSync`), the bridge stays with the caller. */
export function syncChannel(): { bridge: SyncBridge; port: MessagePort; state: Int32Array } {
  const { port1, port2 } = new MessageChannel();
  const state = new Int32Array(new SharedArrayBuffer(4));
  return { bridge: new SyncBridge(port1, state), port: port2, state };
}

export class SyncBridge {
  constructor(
    private readonly port: MessagePort,
    private readonly state: Int32Array,
  ) {}

  /** The worker's answer to `req`; throws what the worker's method threw, as `fail` makes it. */
  call(req: SyncRequest, fail: (e: CrossedError) => Error): unknown {
    if (Atomics.load(this.state, 0) === EXITED) throw fail({ message: 'the worker has stopped' });
    Atomics.store(this.state, 0, WAITING);
    this.port.postMessage(req);
    // in a loop: the wake-up of the previous call's answer may come late, while this one still waits
    const deadline = Date.now() + STUCK_MS;
    while (Atomics.load(this.state, 0) === WAITING) {
      const left = deadline - Date.now();
      if (left <= 0) throw fail({ message: `no answer to ${req.method} in ${STUCK_MS / 60_000} minutes` });
      Atomics.wait(this.state, 0, WAITING, left);
    }
    const got = receiveMessageOnPort(this.port);
    if (!got) throw fail({ message: `the worker stopped during ${req.method}` });
    const reply = got.message as SyncReply;
    if (!reply.ok) throw fail(reply.error);
    return reply.value;
  }

  close(): void {
    this.port.close();
  }
}

/** In the worker: answers each request on `port` with `handle`'s result, and marks the shared word when the thread
 * exits, so that a caller never waits for an answer that cannot come. */
export function serveSync(port: MessagePort, state: Int32Array, handle: (req: SyncRequest) => Promise<unknown>): void {
  const answer = (reply: SyncReply): void => {
    port.postMessage(reply);
    Atomics.store(state, 0, ANSWERED);
    Atomics.notify(state, 0);
  };
  port.on('message', (req: SyncRequest) => {
    handle(req).then(
      (value) => answer({ ok: true, value }),
      (err: unknown) => answer({ ok: false, error: crossed(err) }),
    );
  });
  process.on('exit', () => {
    Atomics.store(state, 0, EXITED);
    Atomics.notify(state, 0);
  });
}

function crossed(err: unknown): CrossedError {
  const code = (err as { code?: unknown } | null)?.code;
  return { message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) };
}
