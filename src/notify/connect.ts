/**
 * Connects a chat bot in the background with a capped backoff, so that ingest and the terminal never wait on a chat
 * platform.
 */
import type { Log } from '../lib/log.ts';

/** What the app hears from a bot connecting in the background. */
export interface ConnectHooks {
  /** the platform is reachable: deliver what waits in the outbox */
  onUp(): void;
  /** the platform refused rlwatch for good (a bad token): trying again cannot help */
  onFatal(err: Error): void;
}

export interface Connector {
  stop(): void;
}

/** The first wait between attempts, doubled after each failure up to the second. */
const BACKOFF_MS = [2000, 60_000] as const;

/** While a platform stays unreachable, a reminder on stderr this often (the first failure is said at once). */
const REMIND_MS = 10 * 60_000;

/**
 * Connects a bot in the background: `attempt` (which calls `onUp` once alerts can go out) is tried until it
 * succeeds, with a capped exponential backoff, so that ingest and the terminal never wait on a chat platform.
 * The first failure is said at once on stderr, then a reminder every ten minutes; an error `fatal` turns
 * into a message (a refused token) stops the attempts and goes to `onFatal`.
 */
export function keepConnecting(opts: {
  platform: string;
  attempt: () => Promise<void>;
  fatal: (err: Error) => Error | null;
  onFatal: (err: Error) => void;
  log: Log;
}): Connector {
  const { platform, log } = opts;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let remindedAt = 0;
  const run = async (failures: number): Promise<void> => {
    try {
      await opts.attempt();
    } catch (err) {
      if (stopped) return;
      const e = err as Error;
      const fatal = opts.fatal(e);
      if (fatal) return opts.onFatal(fatal);
      if (failures === 0 || Date.now() - remindedAt >= REMIND_MS) {
        log.warn(
          `${failures === 0 ? 'cannot reach' : 'still cannot reach'} ${platform}: ${e.message}. ` +
            `rlwatch keeps watching and retrying in the background; alerts wait in the outbox`,
        );
        remindedAt = Date.now();
      }
      const wait = Math.min(BACKOFF_MS[1], BACKOFF_MS[0] * 2 ** Math.min(failures, 20));
      timer = setTimeout(() => void run(failures + 1), wait);
      timer.unref();
    }
  };
  void run(0);
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
