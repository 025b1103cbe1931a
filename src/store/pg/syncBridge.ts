/**
 * Synchronous calls into a worker thread (the technique of the `synckit` package): the caller posts a request on a
 * MessagePort and sleeps in `Atomics.wait` on a shared word until the worker, having answered on the port, sets it;
 * the answer is then taken off the port with `receiveMessageOnPort`, without the caller's event loop.
 *
 * A call whose answer nothing needs (a write) is posted without waiting (`post`): the worker runs every request in
 * the order sent, one at a time, so a later call sees what an earlier one wrote, and only a waited call is answered.
 * The first failure of a posted call is kept by the worker: every later request is refused with it (posted ones
 * dropped, waited ones thrown it) until one of the `resets` (ROLLBACK) runs, so that nothing is built, and no
 * transaction committed, past a write that failed.
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

/** What the caller sends: a method of the worker's and its arguments (structured-cloned), and the caller's clock. */
export interface SyncRequest {
  method: string;
  args: unknown[];
  now: number;
}

/** A request as it crosses: whether the caller waits for its answer. */
interface SentRequest extends SyncRequest {
  waits: boolean;
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
  /** requests sent so far: waited for (a round trip each) and posted */
  readonly sent = { waited: 0, posted: 0 };

  constructor(
    private readonly port: MessagePort,
    private readonly state: Int32Array,
  ) {}

  /** The worker's answer to `req`; throws what the worker's method threw, as `fail` makes it. */
  call(req: SyncRequest, fail: (e: CrossedError) => Error): unknown {
    if (Atomics.load(this.state, 0) === EXITED) throw fail({ message: 'the worker has stopped' });
    Atomics.store(this.state, 0, WAITING);
    this.port.postMessage({ ...req, waits: true } satisfies SentRequest);
    this.sent.waited++;
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

  /** Sends `req` without waiting: what it throws comes with the next call (see the module comment). */
  post(req: SyncRequest, fail: (e: CrossedError) => Error): void {
    if (Atomics.load(this.state, 0) === EXITED) throw fail({ message: 'the worker has stopped' });
    this.port.postMessage({ ...req, waits: false } satisfies SentRequest);
    this.sent.posted++;
  }

  close(): void {
    this.port.close();
  }
}

/** In the worker: runs each request on `port` with `handle`, one after the other in the order sent, answers those
 * waited for, keeps the first failure of a posted one until one of `resets` runs (see the module comment), and
 * marks the shared word when the thread exits, so that a caller never waits for an answer that cannot come. */
export function serveSync(
  port: MessagePort,
  state: Int32Array,
  handle: (req: SyncRequest) => Promise<unknown>,
  resets: ReadonlySet<string> = new Set(),
): void {
  const answer = (reply: SyncReply): void => {
    port.postMessage(reply);
    Atomics.store(state, 0, ANSWERED);
    Atomics.notify(state, 0);
  };
  let kept: CrossedError | null = null;
  const run = async (req: SentRequest): Promise<void> => {
    if (resets.has(req.method)) kept = null;
    let reply: SyncReply;
    if (kept) reply = { ok: false, error: kept };
    else {
      try {
        reply = { ok: true, value: await handle(req) };
      } catch (err) {
        reply = { ok: false, error: crossed(err) };
        if (!req.waits) kept = reply.error;
      }
    }
    if (req.waits) answer(reply);
  };
  let last = Promise.resolve();
  port.on('message', (req: SentRequest) => {
    last = last.then(() => run(req));
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
