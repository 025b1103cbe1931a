import type { Notification } from '../engine/notification.ts';
import type { Store } from '../store/store.ts';

/** A place notifications go: the terminal now, chat channels later. */
export interface Target {
  name: string;
  deliver(n: Notification): Promise<void>;
}

/**
 * Drains the outbox to each target in order. A row is done only once its target accepted it; a failure
 * stops that target's drain (order matters) until the next kick.
 */
export class Dispatcher {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly store: Store,
    private readonly targets: readonly Target[],
    private readonly onError: (target: string, err: Error) => void = () => {},
  ) {}

  /** Starts a drain, or asks the running one to look again when it is done. */
  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        for (const t of this.targets) await this.drainTarget(t);
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async drainTarget(target: Target): Promise<void> {
    for (let rows = this.store.outbox.pending(target.name); rows.length > 0; rows = this.store.outbox.pending(target.name)) {
      for (const row of rows) {
        try {
          await target.deliver(JSON.parse(row.payload) as Notification);
        } catch (err) {
          this.store.outbox.failed(row.id, (err as Error).message);
          this.onError(target.name, err as Error);
          return;
        }
        this.store.outbox.done(row.id, Date.now());
      }
    }
  }
}
