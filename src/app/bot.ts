/**
 * `rlwatch start --role bot` on PostgreSQL: the process that delivers the outbox, sends the scheduled reports and
 * answers chat, for every watcher writing the same database. Of several such processes one leads (the advisory
 * lock `bot`); the others stand by and take over when the leader's session ends (its process died, or the server
 * ended it). Outbox rows are claimed with leases, so a row is delivered once even while two overlap.
 */
import { startBotSide, type BotOptions, type BotSide } from './start.ts';
import type { Leadership } from '../store/contract.ts';
import { openStore } from '../store/open.ts';
import { TICK_MS } from './watching.ts';

/** How often a standing-by process asks for the lock. The leader ticks as a watcher does (TICK_MS): reports, mutes,
 * and a sweep of the outbox (rows are posted as soon as they are announced; the sweep finds any not heard). */
const LEAD_RETRY_MS = 2000;

export interface BotApp {
  /** settles when a platform refused rlwatch for good (a bad token): `start` reports it and exits */
  failure: Promise<Error>;
  stop(): Promise<void>;
}

/** `tickMs`: the leader's tick (tests lengthen it, to see rows posted on their announcement alone). */
export async function startBot(opts: BotOptions & { db: string; tickMs?: number }): Promise<BotApp> {
  const { log } = opts;
  const store = await openStore(opts.db);
  let side: BotSide | null = null;
  let lead: Leadership | null = null;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let tick: NodeJS.Timeout | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  let refused!: (err: Error) => void;
  const failure = new Promise<Error>((resolve) => (refused = resolve));

  const standBy = (): void => {
    if (!stopped) retry = setTimeout(() => void tryLead().catch(refused), LEAD_RETRY_MS);
  };
  const tryLead = async (): Promise<void> => {
    try {
      lead = await store.tryLead('bot');
    } catch (err) {
      log.warn(`cannot reach the database to lead (${(err as Error).message}): trying again`);
      return standBy();
    }
    if (!lead || stopped) {
      await lead?.release();
      lead = null;
      return standBy();
    }
    const held = lead;
    log.info('leading: delivering notifications and answering chat');
    held.onLost(() => {
      log.warn('lost the bot lock (the database ended its session): standing by');
      lead = null;
      const was = [side?.stop(), unlisten?.()];
      side = null;
      unlisten = undefined;
      clearInterval(tick);
      void Promise.all(was).then(standBy);
    });
    const started = await startBotSide(store, opts);
    if (lead !== held || stopped) return void (await started.stop()); // lost, or stopped, while starting
    side = started;
    void side.failure.then(refused);
    // outbox rows other processes commit (a watcher's alert, a CLI ack's card update) are posted when announced
    unlisten = await store.outbox.listen?.((critical) => void side?.dispatcher.kick({ critical }));
    void side.tick();
    tick = setInterval(() => void side?.tick(), opts.tickMs ?? TICK_MS);
  };

  await tryLead();
  if (!side) log.info('another bot leads on this database: standing by to take over');
  return {
    failure,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      clearInterval(tick);
      await unlisten?.();
      await side?.stop();
      await lead?.release();
      await store.close();
    },
  };
}
