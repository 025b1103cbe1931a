import type { Log } from '../log.ts';

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

/** How long the first waits between attempts are; doubled up to `maxMs`. Tests shorten them. */
export interface ConnectBackoff {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_CONNECT_BACKOFF: ConnectBackoff = { baseMs: 2000, maxMs: 60_000 };

/** While a platform stays unreachable, a reminder on stderr this often (the first failure is said at once). */
const REMIND_MS = 10 * 60_000;

/**
 * Connects a bot in the background: `attempt` is tried until it succeeds, with a capped exponential backoff,
 * so that ingest and the terminal never wait on a chat platform. The first failure is said at once on
 * stderr, then a reminder every ten minutes; `fatal` errors (a refused token) stop the attempts.
 */
export function keepConnecting(opts: {
  platform: string;
  attempt: () => Promise<void>;
  fatal: (err: Error) => Error | null;
  log: Log;
  hooks: ConnectHooks;
  backoff?: ConnectBackoff;
}): Connector {
  const { platform, log, hooks } = opts;
  const backoff = opts.backoff ?? DEFAULT_CONNECT_BACKOFF;
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
      if (fatal) return hooks.onFatal(fatal);
      if (failures === 0 || Date.now() - remindedAt >= REMIND_MS) {
        log.warn(
          `${failures === 0 ? 'cannot reach' : 'still cannot reach'} ${platform}: ${e.message}. ` +
            `rlwatch keeps watching and retrying in the background; alerts wait in the outbox`,
        );
        remindedAt = Date.now();
      }
      timer = setTimeout(() => void run(failures + 1), Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(failures, 20)));
      timer.unref();
      return;
    }
    if (!stopped) hooks.onUp();
  };
  void run(0);
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
