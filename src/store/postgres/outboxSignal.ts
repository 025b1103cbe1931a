/** LISTEN/NOTIFY for outbox changes on PostgreSQL, so that a deliverer hears of new rows at once. */
import type pg from 'pg';
import { newClient } from './connect.ts';

/**
 * The channel an outbox change is announced on. A NOTIFY sent inside a transaction is delivered when it commits,
 * and not at all when it rolls back; the same one sent several times in a transaction is delivered once.
 */
export const OUTBOX_CHANNEL = 'rlwatch_outbox';
/** The announcement's payload when a critical row was written (else empty): at most two announcements a commit. */
export const CRITICAL_NOTICE = 'critical';

/** How long a lost listening connection waits before it connects again. */
const RELISTEN_MS = 2000;

/**
 * LISTENs for outbox changes on a connection of its own and calls `fn` for each, saying whether a critical row came;
 * returns the way to stop. A lost connection (or a server not reachable yet) is tried again, and `fn(true)` is called
 * once it is back: what was committed meanwhile was not heard. It never throws: the caller's periodic sweep delivers
 * until then.
 */
export async function listenOutbox(url: string, fn: (critical: boolean) => void): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | undefined;

  // one retry at a time: a failed connect both rejects and ends
  const again = (): void => {
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect().then(() => fn(true), again);
    }, RELISTEN_MS);
  };
  const connect = async (): Promise<void> => {
    const c = newClient(url);
    c.on('notification', (m) => fn(m.payload === CRITICAL_NOTICE));
    c.on('error', () => {}); // 'end' follows: listen again from there
    c.on('end', () => {
      if (client === c) client = null;
      again();
    });
    client = c;
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (err) {
      await c.end().catch(() => {});
      throw err;
    }
    if (stopped) await c.end();
  };

  await connect().catch(again); // the server down now: listen once it is back
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end();
  };
}
