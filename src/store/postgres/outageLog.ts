/** A log that sums up the warnings of a database out of reach: the first at once, then one line a minute. */
import type { Log } from '../../lib/log.ts';
import { isUnreachable } from '../dbErrors.ts';

/** How often, while the database stays out of reach, one line sums up the failures since the last. */
export const OUTAGE_LOG_EVERY_MS = 60_000;

/**
 * The warnings of a process whose database may go out of reach (PostgreSQL): every file's read, every retry and
 * every tick fail while it is, ~17 lines a second. The first failure is told at once; then one line a minute with
 * how many failed since; and one line when something reaches it again (`reached`). Other warnings pass as they are.
 */
export class OutageLog implements Log {
  /** when the outage began, and the failures not told yet; null while the database is reachable */
  private outage: { since: number; loggedAt: number; untold: number; total: number } | null = null;

  constructor(
    private readonly log: Log,
    private readonly now: () => number = Date.now,
    private readonly everyMs = OUTAGE_LOG_EVERY_MS,
  ) {}

  info(msg: string): void {
    this.log.info(msg);
  }

  warn(msg: string): void {
    this.log.warn(msg);
  }

  /** `line` (which names `err`) when `err` is something else; when the database is out of reach, as above. */
  failed(err: unknown, line: string): void {
    if (!isUnreachable(err)) {
      this.log.warn(line);
      return;
    }
    const now = this.now();
    const o = this.outage;
    if (!o) {
      this.outage = { since: now, loggedAt: now, untold: 0, total: 1 };
      this.log.warn(line);
      return;
    }
    o.total++;
    o.untold++;
    if (now - o.loggedAt < this.everyMs) return;
    this.log.warn(`still out of reach, ${o.untold} more failures since the last line: ${line}`);
    o.loggedAt = now;
    o.untold = 0;
  }

  /** Something reached the database: the end of an outage is told once. */
  reached(): void {
    const o = this.outage;
    if (!o) return;
    this.outage = null;
    const s = Math.round((this.now() - o.since) / 1000);
    this.log.info(`the database is reachable again after ${s} s (${o.total} failures while it was not)`);
  }
}
