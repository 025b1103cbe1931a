import type { Notification } from '../engine/notification.ts';
import type { Store } from '../store/store.ts';

/** A place notifications go: the terminal, a Discord or Slack channel. */
export interface Target {
  name: string;
  /** `key` names the outbox row: a retry of the same row carries the same key, so that what was already
   * posted before a failure is not posted again */
  deliver(n: Notification, key: string): Promise<void>;
}

/** A delivery refused for now; `retryAfterMs` when the platform said how long to wait (HTTP 429). */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface DispatcherOptions {
  /** first wait after a failure; doubles each time up to `maxBackoffMs` */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  onError?: (target: string, err: Error) => void;
  /** the clock the waits are measured on (tests inject one) */
  now?: () => number;
}

/**
 * Drains the outbox to each target in order. A row is done only once its target accepted it. A failure
 * stops that target (order matters) until the platform's Retry-After, or a capped exponential backoff,
 * has passed; rows wait in SQLite meanwhile, so an outage of hours delivers everything afterwards, once.
 */
export class Dispatcher {
  private running: Promise<void> | null = null;
  private again = false;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  private readonly base: number;
  private readonly max: number;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly targets: readonly Target[],
    private readonly opts: DispatcherOptions = {},
  ) {
    this.base = opts.baseBackoffMs ?? 1000;
    this.max = opts.maxBackoffMs ?? 5 * 60_000;
    this.now = opts.now ?? Date.now;
  }

  /** Starts a drain, or asks the running one to look again when it is done. */
  kick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        for (const t of this.targets) await this.drainTarget(t);
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** No more retries; waits for a drain in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timers.forEach((t) => clearTimeout(t));
    this.timers.clear();
    await this.running;
  }

  private async drainTarget(target: Target): Promise<void> {
    if (this.timers.has(target.name)) return; // waiting out a failure
    for (let rows = this.store.outbox.pending(target.name); rows.length > 0; rows = this.store.outbox.pending(target.name)) {
      for (const row of rows) {
        if (this.stopped) return;
        const wait = (row.next_attempt_at ?? 0) - this.now();
        if (wait > 0) return this.retryLater(target, wait);
        try {
          await target.deliver(JSON.parse(row.payload) as Notification, String(row.id));
        } catch (err) {
          const e = err as Error;
          const delay = e instanceof DeliveryError && e.retryAfterMs !== undefined
            ? e.retryAfterMs
            : Math.min(this.max, this.base * 2 ** Math.min(row.attempts, 20));
          this.store.outbox.failed(row.id, e.message, this.now() + delay);
          this.opts.onError?.(target.name, e);
          return this.retryLater(target, delay);
        }
        this.store.outbox.done(row.id, this.now());
      }
    }
  }

  private retryLater(target: Target, ms: number): void {
    if (this.stopped || this.timers.has(target.name)) return;
    const t = setTimeout(() => {
      this.timers.delete(target.name);
      void this.kick();
    }, ms);
    t.unref();
    this.timers.set(target.name, t);
  }
}
