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
 *
 * One at a time, a batch's few writes cost a round trip each before its COMMIT is answered. So a posted request the
 * worker says `overlaps` starts as soon as the one before it has sent its statement (`sent`), not once it is answered:
 * the connection runs statements in the order sent, and in a transaction one sent after a failure fails too, so the
 * first failure is still the one kept. Any other request starts once every request before it is answered.
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

/** In the worker: runs each request on `port` with `handle`, in the order sent (posted ones that `overlaps` without
 * waiting for the answers before them: see the module comment), answers those waited for, keeps the first failure
 * of a posted one until one of `resets` runs, and marks the shared word when the thread exits, so that a caller
 * never waits for an answer that cannot come. `handle` calls `sent` once its statement is on its way. */
export function serveSync(
  port: MessagePort,
  state: Int32Array,
  handle: (req: SyncRequest, sent: () => void) => Promise<unknown>,
  resets: ReadonlySet<string> = new Set(),
  overlaps: (req: SyncRequest) => boolean = () => false,
): void {
  const answer = (reply: SyncReply): void => {
    port.postMessage(reply);
    Atomics.store(state, 0, ANSWERED);
    Atomics.notify(state, 0);
  };
  let kept: CrossedError | null = null;
  /** overlapping posted requests started and not answered yet */
  const unanswered = new Set<Promise<void>>();
  const run = async (req: SentRequest, sent: () => void): Promise<void> => {
    if (resets.has(req.method)) kept = null;
    let reply: SyncReply;
    if (kept) reply = { ok: false, error: kept };
    else {
      try {
        reply = { ok: true, value: await handle(req, sent) };
      } catch (err) {
        reply = { ok: false, error: crossed(err) };
        if (!req.waits) kept ??= reply.error;
      }
    }
    if (req.waits) answer(reply);
  };
  const start = async (req: SentRequest): Promise<void> => {
    if (!req.waits && overlaps(req)) {
      let sent!: () => void;
      const onItsWay = new Promise<void>((resolve) => (sent = resolve));
      const done = run(req, sent).finally(() => unanswered.delete(done));
      unanswered.add(done);
      return Promise.race([onItsWay, done]);
    }
    // a request that may send several statements, or wait, or answer: after every one before it, as before
    await Promise.all(unanswered);
    return run(req, () => {});
  };
  let last = Promise.resolve();
  port.on('message', (req: SentRequest) => {
    last = last.then(() => start(req));
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
