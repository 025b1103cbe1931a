/**
 * The dispatcher: drains the outbox to each target on its own, routes platform-neutral rows at delivery, retries
 * with backoff and sets aside what cannot heal.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { isMuted } from '../engine/capture.ts';
import type { Notification, NotificationItem } from '../engine/notification.ts';
import type { Log } from '../lib/log.ts';
import type { ClaimedRow, ClaimOptions, OpenOutboxRow, StoreContract } from '../store/contract.ts';
import { ROUTED, urgencyOf } from '../store/outbox.ts';
import { CARDS_PER_MESSAGE, giveWay } from './delivery.ts';
import { parseNotification } from './payload.ts';
import { heldTarget, holds, isQuiet, quietSummary, type Held, type Quiet } from './quietHours.ts';

/** A place notifications go: the terminal, a chat channel, an address. */
export interface Target {
  name: string;
  /** `key` names the outbox row: a retry of the same row carries the same key, so that what was already
   * posted before a failure is not posted again. `runId` is the row's run (for the target's own records).
   * `urgency` is the row's as handed out (`ClaimedRow`): what a target drawing several cards at once draws first. */
  deliver(n: Notification, key: string, runId: number, urgency: number): Promise<void>;
  /** it edits the cards it posted in place: 'update' items (an ack or a mute) are for it. A target without
   * this never sees them (a message it sent cannot change): their rows are done unsent. */
  edits?: boolean;
  /** the quiet hours of the alerts of a run and severity here (their route's): what `Dispatcher` holds back */
  quiet?: (run: string, severity: string) => Quiet | undefined;
}

/** What of `n` a target is given: all of it, or, for a target that does not edit, all but the updates (null
 * when nothing is left). */
function forTarget(n: Notification, target: Target): Notification | null {
  if (target.edits || !n.items.some((i) => i.kind === 'update')) return n;
  const items = n.items.filter((i) => i.kind !== 'update');
  return items.length > 0 || n.report ? { ...n, items } : null;
}

/**
 * `n` with charts only on its items as urgent as it was handed out: a run's rows go in order, and a row merges its
 * run's waiting items (`Outbox.add`), so a critical card rides in it or waits behind it; drawing the other cards'
 * charts on a busy bot is most of that wait. Those cards keep their numbers and sparkline.
 */
function clearingTheWay(n: Notification, urgency: number): Notification {
  if (!n.items.some((i) => i.chart && urgencyOf(i.severity) < urgency)) return n;
  return { ...n, items: n.items.map(({ chart, ...i }) => (urgencyOf(i.severity) < urgency ? i : { ...i, chart })) };
}

/**
 * A delivery refused. The notifier says whether it can heal (Alertmanager's `retry bool`): `retryAfterMs`
 * when the platform said how long to wait (HTTP 429); `permanent` when trying again cannot help (a channel
 * that does not exist, a missing permission, a refused token): the row is set aside instead of retried.
 */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    readonly permanent = false,
  ) {
    super(message);
  }
}

export interface DispatcherOptions {
  /** first wait after a failure; doubles each time up to `maxBackoffMs` */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** every failed attempt, as it happens */
  onError?: (target: string, err: Error) => void;
  /** failures and recoveries, at most one line per target per `logEveryMs` while a target keeps failing */
  log?: Log;
  logEveryMs?: number;
  /** the clock the waits are measured on (tests inject one) */
  now?: () => number;
  /** the one router: the target names of an alert of a run and severity (every platform's routes; reports go where
   * warnings go). Given, the dispatcher routes the platform-neutral rows (`ROUTED`) into a row per target before its
   * lanes look; each name it gives must be one of the targets' */
  route?: (run: string, severity: string) => readonly string[];
}

/** Deliveries in flight at once per target, each of a different run (a run's rows go one at a time, in order):
 * rendering a card's chart and the store's writes of one overlap the platform's answer to another. One more is kept
 * for a critical row (its run holds a critical alert): it never waits for one of IN_FLIGHT warning cards to end. Also
 * what a dispatcher that dies holds back until the leases run out. */
export const IN_FLIGHT = 4;
/** How long claimed rows stay this dispatcher's if it dies before delivering them: then another takes them. */
export const LEASE_MS = 2 * 60_000;
/** Platform-neutral rows routed per transaction: each run's oldest, this many runs (the transaction loops until none). */
const ROUTE_BATCH = 50;
/** How often a target's held alerts are looked at for a quiet interval that ended (the outbox's open rows are read
 * only when one of theirs did). */
const HELD_LOOK_EVERY_MS = 30_000;

/** What of `n` each target gets, by `route`: its items routed by their severity, in order (an update goes where the card
 * it edits went); a report where warnings go. A target that gets nothing is left out. */
function fanOut(
  n: Notification,
  route: (run: string, severity: string) => readonly string[],
): Map<string, Notification> {
  const out = new Map<string, Notification>();
  if (n.report) {
    for (const t of route(n.run, 'warning')) out.set(t, n);
    return out;
  }
  for (const item of n.items) {
    for (const t of route(n.run, item.severity)) {
      const routed = out.get(t);
      if (routed) routed.items.push(item);
      else out.set(t, { run: n.run, items: [item] });
    }
  }
  return out;
}

/** One target's drain: its own loop, its own wait, its own failure count. */
interface Lane {
  target: Target;
  /** who claims this target's rows: this process and lane */
  owner: string;
  running: Promise<void> | null;
  again: boolean;
  /** a kick since the drain last looked said a critical row may have come: look for one for the kept slot */
  critical: boolean;
  /** set while a drain waits for a delivery to end: a kick wakes it, to claim for its free slots at once */
  wake: (() => void) | null;
  timer: NodeJS.Timeout | null;
  /** when the wait after a failure ends, on rlwatch's clock: claims look as of then at least. Node may run the
   * timer a little before it (it counts from when the event loop's turn began, long ago on a busy process), and a
   * claim as of the clock alone would find the failed row not yet due, with nothing left to wake the lane again. */
  retryAt: number;
  /** failed attempts since the last delivery, and since the last line logged about them */
  failures: number;
  unlogged: number;
  loggedAt: number;
  /** the alerts held for the target's quiet hours, as last read and held since: each one's run and severity; null
   * until the outbox was first looked at (a previous process, maybe of another config, may have held some) */
  held: Map<number, { run: string; severity: string }> | null;
  heldLookedAt: number;
}

/**
 * Drains the outbox, each target on its own: one target's outage never holds back another. Within a target
 * each run's rows go in order, one at a time (a card before its edit or resolution), a few runs at once, the
 * runs with the most severe alerts waiting first (an alert storm's info cards never hold back a critical one). A
 * failure stops that target until the platform's Retry-After, or a capped exponential backoff, has passed. A row
 * is done only once its target accepted it; rows wait in the store meanwhile, so an outage of hours delivers
 * everything afterwards, once. A permanent failure sets the row aside (dead letter, `rlwatch outbox`), so the
 * next row still goes out. Rows are claimed with a lease (`outbox.claim`): two dispatchers on one database
 * (a bot handing over to the next) never deliver the same row.
 */
export class Dispatcher {
  private readonly lanes: Lane[];
  private stopped = false;
  /** set once `stop()` gave up on a delivery in flight: its outcome is no longer recorded */
  private abandoned = false;
  private readonly base: number;
  private readonly max: number;
  private readonly now: () => number;
  /** the open outbox as read at start, for every lane's first look at what is held */
  private firstLook: Promise<OpenOutboxRow[]> | null = null;
  /** who claims the neutral rows while routing them */
  private readonly router: string;
  /** the routing of neutral rows running, and whether a kick since asked it to look again */
  private routing: Promise<void> | null = null;
  private routeAgain = false;

  constructor(
    private readonly store: StoreContract,
    targets: readonly Target[],
    private readonly opts: DispatcherOptions = {},
  ) {
    this.base = opts.baseBackoffMs ?? 1000;
    this.max = opts.maxBackoffMs ?? 5 * 60_000;
    this.now = opts.now ?? Date.now;
    const self = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.router = `${self}/${ROUTED}`;
    this.lanes = targets.map((target) => ({
      target,
      owner: `${self}/${target.name}`,
      running: null,
      again: false,
      critical: false,
      wake: null,
      timer: null,
      retryAt: 0,
      failures: 0,
      unlogged: 0,
      loggedAt: 0,
      held: null,
      heldLookedAt: -Infinity,
    }));
  }

  /**
   * Starts a drain of every target (or asks a running one to look again); resolves when all are idle. `critical:
   * false` says that no critical row came (PostgreSQL's announcement knows): the slot kept for one is not looked at.
   */
  async kick(hint: { critical?: boolean } = {}): Promise<void> {
    await this.routeNeutral();
    await Promise.all(this.lanes.map((l) => this.kickLane(l, hint.critical ?? true)));
  }

  /** Routes the neutral rows waiting (`route`), one routing at a time: a kick meanwhile has it look once more, for the
   * rows committed after its look began. A store that fails is logged: the rows wait for the next kick. */
  private routeNeutral(): Promise<void> {
    const route = this.opts.route;
    if (!route || this.stopped) return Promise.resolve();
    if (this.routing) {
      this.routeAgain = true;
      return this.routing;
    }
    this.routing = (async () => {
      do {
        this.routeAgain = false;
        while (!this.stopped && (await this.routeSome(route)) > 0);
      } while (this.routeAgain && !this.stopped);
    })()
      .catch((err: Error) => this.opts.log?.warn(`cannot route the outbox's new rows (${err.message}): trying again`))
      .finally(() => (this.routing = null));
    return this.routing;
  }

  /**
   * One transaction: the oldest neutral row of up to ROUTE_BATCH runs (claimed as a lane claims, so two routers never
   * take the same row, and a run's rows are routed in order), each written as a row per target and marked done. The
   * rows it writes join each target's line after what the run had there (and merge as the engine's do); a router that
   * dies midway rolls back, its rows routed by the next. Returns the neutral rows taken.
   */
  private routeSome(route: (run: string, severity: string) => readonly string[]): Promise<number> {
    return this.store.transaction(async (tx) => {
      const now = this.now();
      const rows = await tx.outbox.claim(ROUTED, { owner: this.router, now, leaseMs: LEASE_MS, limit: ROUTE_BATCH });
      for (const row of rows) {
        let n: Notification;
        try {
          parseNotification(row.payload); // a row that does not read is set aside here, not in every target's lane
          n = JSON.parse(row.payload) as Notification; // as written: each target's row carries every field of it
        } catch (err) {
          const reason = `outbox row #${row.id}: ${(err as Error).message}`;
          await tx.outbox.setAside(row.id, reason, now);
          this.opts.log?.warn(`${reason}; set aside (\`rlwatch outbox\` lists it)`);
          continue;
        }
        for (const [target, routed] of fanOut(n, route)) await tx.outbox.add(row.run_id, target, routed, now);
        await tx.outbox.done(row.id, now);
      }
      return rows.length;
    });
  }

  /**
   * Tries the targets whose names start with `prefix` now, not after their backoff: their platform just
   * came back (a bot connected).
   */
  wake(prefix: string): void {
    for (const lane of this.lanes) {
      if (!lane.target.name.startsWith(prefix) || this.stopped) continue;
      if (lane.timer) clearTimeout(lane.timer);
      lane.timer = null;
      void this.store.outbox.clearWait(lane.target.name).then(
        () => this.kickLane(lane),
        (err: Error) => this.opts.log?.warn(`${lane.target.name}: cannot look at the outbox: ${err.message}`),
      );
    }
  }

  /**
   * No more retries. Waits up to `graceMs` for deliveries in flight; one still running after that is
   * abandoned: its row stays pending and goes out on the next start.
   */
  async stop(graceMs = 1000): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes) {
      if (lane.timer) clearTimeout(lane.timer);
      lane.timer = null;
    }
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<boolean>((done) => (timer = setTimeout(() => done(false), graceMs)));
    const drained = Promise.all([this.routing, ...this.lanes.map((l) => l.running)]).then(() => true);
    if (!(await Promise.race([drained, grace]))) this.abandoned = true;
    clearTimeout(timer);
    // rows claimed and not delivered go to whoever delivers next, now rather than when their lease ends
    await Promise.all(this.lanes.map((l) => this.store.outbox.releaseClaims(l.owner).catch(() => {})));
  }

  private kickLane(lane: Lane, critical = true): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (lane.running) {
      lane.again = true;
      lane.critical ||= critical;
      lane.wake?.();
      return lane.running;
    }
    lane.running = (async () => {
      do {
        lane.again = false;
        try {
          await this.drain(lane);
        } catch (err) {
          // the store failed (PostgreSQL unreachable, SQLite busy): rows stay where they are; look again later
          this.opts.log?.warn(`${lane.target.name}: cannot read the outbox (${(err as Error).message}): trying again`);
          this.retryLater(lane, this.base);
          return;
        }
      } while (lane.again && !this.stopped);
    })().finally(() => {
      lane.running = null;
    });
    return lane.running;
  }

  /**
   * Claims rows as slots free up (each the oldest open row of its run, the most urgent runs first) and delivers
   * up to IN_FLIGHT at once, and one more if critical (the kept slot). A delivered row's slot is claimed for in the
   * statement that marks it delivered; the others are claimed here: all at first, one a row set aside freed, all free
   * ones after a kick (rows were written: it wakes the wait). A failure stops the claiming; the deliveries already
   * started finish. Every row claimed is started at once, so none is left leased and unsent when the lane stops.
   */
  private async drain(lane: Lane): Promise<void> {
    const { target, owner } = lane;
    if (lane.timer) return; // waiting out a failure
    if (!(await this.flushHeld(lane))) return;
    const inFlight = new Set<Promise<void>>();
    // rows being delivered: a settled delivery's promise leaves `inFlight` a few microtasks after its next row started
    let delivering = 0;
    let failed = false;
    let broken: Error | undefined; // the store failed while recording an outcome
    let toClaim = IN_FLIGHT; // free slots no claim has looked for rows for since they freed
    let keptUnlooked = true; // look for a critical row for the kept slot: at first, and after a kick said one came
    const claiming = (limit: number, criticalExtra: number): ClaimOptions | null =>
      this.stopped || failed || broken
        ? null
        : { owner, now: Math.max(this.now(), lane.retryAt), leaseMs: LEASE_MS, limit, criticalExtra };
    // a delivered row's slot: one of the IN_FLIGHT, or the kept one when that many others are still in flight
    const replacing = (): ClaimOptions | null => (delivering - 1 < IN_FLIGHT ? claiming(1, 0) : claiming(0, 1));
    const start = (row: ClaimedRow): void => {
      delivering++;
      const done: Promise<void> = this.deliverRow(lane, row, replacing)
        .then(
          (next) => {
            delivering--;
            if (next === false) failed = true;
            else if (next === null) toClaim++;
            else next.forEach(start);
          },
          (err: Error) => void (delivering--, (broken ??= err)),
        )
        .finally(() => inFlight.delete(done));
      inFlight.add(done);
    };
    try {
      while (!this.stopped && !failed && !broken) {
        if (lane.again) {
          lane.again = false;
          toClaim = IN_FLIGHT;
          keptUnlooked ||= lane.critical;
          lane.critical = false;
        }
        const any = Math.min(toClaim, Math.max(0, IN_FLIGHT - delivering));
        const kept = keptUnlooked && delivering + any <= IN_FLIGHT ? 1 : 0;
        if (any + kept > 0) {
          toClaim = 0;
          keptUnlooked = false;
          (await this.store.outbox.claim(target.name, claiming(any, kept)!)).forEach(start);
        }
        if (inFlight.size === 0) return; // nothing to claim, nothing running: drained
        // a slot frees (a run's next row may have been claimed with it), or rows were written
        await new Promise<void>((woken) => {
          lane.wake = woken;
          void Promise.race(inFlight).then(woken);
        });
        lane.wake = null;
      }
    } finally {
      lane.wake = null;
      while (inFlight.size > 0) await Promise.all(inFlight); // a delivery ending now may have started a claimed row
    }
    if (broken) throw broken;
  }

  /**
   * Delivers one claimed row and records the outcome: false when the target failed (the lane then waits); else the
   * rows claimed with the delivery's record (`next()`: the claim, or null for none), or null when none was claimed.
   */
  private async deliverRow(
    lane: Lane,
    row: ClaimedRow,
    next: () => ClaimOptions | null,
  ): Promise<ClaimedRow[] | null | false> {
    const { target } = lane;
    let n: Notification | null;
    try {
      n = forTarget(parseNotification(row.payload), target);
      n &&= clearingTheWay(n, row.urgency);
    } catch (err) {
      // written by a broken or foreign writer: no retry can heal it, and the rows after it still go out
      const reason = `outbox row #${row.id}: ${(err as Error).message}`;
      await this.store.outbox.setAside(row.id, reason, this.now());
      this.opts.log?.warn(`${target.name}: ${reason}; set aside (\`rlwatch outbox\` lists it)`);
      return null;
    }
    // a storm's row took a while to read: the process's other work goes first (a slash command waits 3 s at most)
    if (n && n.items.length > CARDS_PER_MESSAGE) await giveWay();
    if (n && target.quiet) n = await this.hold(lane, row, n);
    if (n === null) {
      // acks and mutes only, for a target that cannot edit what it sent, or all held: nothing to send
      return this.recordDelivered(row, target, next());
    }
    try {
      await target.deliver(n, String(row.id), row.run_id, row.urgency);
    } catch (err) {
      if (this.abandoned) return false;
      const e = err as Error;
      this.opts.onError?.(target.name, e);
      if (e instanceof DeliveryError && e.permanent) {
        await this.store.outbox.setAside(row.id, e.message, this.now());
        this.opts.log?.warn(
          `${target.name}: alert row #${row.id} (run ${n.run}) set aside, it cannot be delivered: ${e.message}. ` +
            `\`rlwatch outbox\` lists it; \`rlwatch outbox retry ${row.id}\` sends it again once fixed`,
        );
        return null;
      }
      const delay =
        e instanceof DeliveryError && e.retryAfterMs !== undefined
          ? e.retryAfterMs
          : Math.min(this.max, this.base * 2 ** Math.min(row.attempts, 20));
      await this.store.outbox.failed(row.id, e.message, this.now() + delay);
      this.noteFailure(lane, e, delay);
      this.retryLater(lane, delay);
      return false;
    }
    if (this.abandoned) return false;
    const claimed = await this.recordDelivered(row, target, next());
    this.noteSuccess(lane);
    return claimed;
  }

  /**
   * What of `n` goes out now. During the quiet hours of its route, an alert that would post (firing, or a repeat) is
   * held: written under the target's held name (`heldTarget`), which no lane claims, so it survives a restart and
   * holds back none of the target's other rows. So is the resolution of an alert held (its card was never posted);
   * a resolution or an update of a card posted earlier is an edit, and goes out. Criticals are held only under
   * `criticals: hold`. Null when nothing is left to send.
   */
  private async hold(lane: Lane, row: ClaimedRow, n: Notification): Promise<Notification | null> {
    const quiet = lane.target.quiet!;
    const now = this.now();
    const quietNow = (i: NotificationItem): boolean => {
      const q = quiet(n.run, i.severity);
      return q !== undefined && holds(q, i.severity) && isQuiet(q, now);
    };
    if (!n.items.some(quietNow)) return n;
    const known = (lane.held ??= new Map());
    const held: NotificationItem[] = [];
    for (const i of n.items) {
      if (!quietNow(i)) continue;
      const posts = i.kind === 'firing' || i.kind === 'repeat';
      if (!posts && !(i.kind === 'resolved' && (known.has(i.alertId) || held.some((h) => h.alertId === i.alertId))))
        continue;
      held.push(i);
    }
    if (held.length === 0) return n;
    await this.store.outbox.add(row.run_id, heldTarget(lane.target.name), { run: n.run, items: held }, now);
    for (const i of held) known.set(i.alertId, { run: n.run, severity: i.severity });
    const rest = n.items.filter((i) => !held.includes(i));
    return rest.length > 0 || n.report ? { ...n, items: rest } : null;
  }

  /** The target's held rows, oldest first, with their notifications (a row that does not read is set aside). A
   * lane's first look shares the one read of the outbox made at start. */
  private async heldRows(lane: Lane): Promise<Array<{ id: number; runId: number; n: Notification }>> {
    const name = heldTarget(lane.target.name);
    const out: Array<{ id: number; runId: number; n: Notification }> = [];
    const first = lane.held === null;
    const open = first
      ? (this.firstLook ??= this.store.outbox.open().catch((err: Error) => {
          this.firstLook = null; // the next look reads again
          throw err;
        }))
      : this.store.outbox.open();
    const rows = await open;
    // once every lane has had its first look, the read is let go (a backlog's payloads are not kept)
    if (first && this.lanes.every((l) => l === lane || l.held !== null)) this.firstLook = null;
    for (const r of rows) {
      if (r.target !== name || r.dead_at !== null) continue;
      try {
        out.push({ id: r.id, runId: r.run_id, n: parseNotification(r.payload) });
      } catch (err) {
        await this.store.outbox.setAside(r.id, `outbox row #${r.id}: ${(err as Error).message}`, this.now());
      }
    }
    return out;
  }

  /**
   * Once the quiet hours of held alerts have ended: those still firing (not acked, resolved or muted) go out as one
   * summary message, the held rows are done. False when the target failed (the lane then waits, as after any
   * failure). The outbox is read at the lane's first drain, then only when the quiet hours of an alert held have
   * ended, HELD_LOOK_EVERY_MS apart at most. A target without quiet hours now (the config changed) sums up what an
   * earlier start held for it.
   */
  private async flushHeld(lane: Lane): Promise<boolean> {
    const { target } = lane;
    const now = this.now();
    const ended = (run: string, severity: string): boolean => {
      const q = target.quiet?.(run, severity);
      return q === undefined || !isQuiet(q, now);
    };
    if (lane.held !== null) {
      if (lane.held.size === 0 || now - lane.heldLookedAt < HELD_LOOK_EVERY_MS) return true;
      if (![...lane.held.values()].some((h) => ended(h.run, h.severity))) return true;
    }
    lane.heldLookedAt = now;
    const rows = await this.heldRows(lane);
    const due = rows.filter(({ n }) => n.items.every((i) => ended(n.run, i.severity)));
    // what stays held: the rows not due
    lane.held = new Map(
      rows
        .filter((r) => !due.includes(r))
        .flatMap(({ n }) => n.items.map((i) => [i.alertId, { run: n.run, severity: i.severity }] as const)),
    );
    if (due.length === 0) return true;
    // each alert's latest held item, in the order they were first held
    const latest = new Map<number, Held>();
    for (const { n } of due) {
      for (const item of n.items)
        latest.set(item.alertId, { run: n.run, item, quiet: target.quiet?.(n.run, item.severity) });
    }
    const silences = await this.store.silences.active(now);
    const firing: Held[] = [];
    for (const h of latest.values()) {
      if (h.item.kind === 'resolved') continue;
      const a = await this.store.alerts.byId(h.item.alertId);
      if (a?.state === 'firing' && a.acked_by === null && !isMuted(silences, h.run, a)) firing.push(h);
    }
    if (firing.length > 0) {
      const first = due[0]!;
      const summary = quietSummary(firing);
      try {
        await target.deliver(
          summary,
          `held/${first.id}`,
          first.runId,
          Math.max(...firing.map((h) => urgencyOf(h.item.severity))),
        );
      } catch (err) {
        const e = err as Error;
        this.opts.onError?.(target.name, e);
        if (e instanceof DeliveryError && e.permanent) {
          for (const { id } of due) await this.store.outbox.setAside(id, e.message, now);
          this.opts.log?.warn(
            `${target.name}: the summary of the alerts held in quiet hours cannot be delivered: ${e.message}`,
          );
          return true;
        }
        const delay = e instanceof DeliveryError && e.retryAfterMs !== undefined ? e.retryAfterMs : this.base;
        // looked at again once the wait is over
        for (const { n } of due)
          for (const i of n.items) lane.held.set(i.alertId, { run: n.run, severity: i.severity });
        lane.heldLookedAt = -Infinity;
        this.noteFailure(lane, e, delay);
        this.retryLater(lane, delay);
        return false;
      }
    }
    for (const { id } of due) await this.store.outbox.done(id, now);
    return true;
  }

  /** Marks the row delivered, claiming for its slot in the same statement unless `claim` is null. */
  private async recordDelivered(
    row: ClaimedRow,
    target: Target,
    claim: ClaimOptions | null,
  ): Promise<ClaimedRow[] | null> {
    if (!claim) {
      await this.store.outbox.done(row.id, this.now());
      return null;
    }
    return this.store.outbox.doneAndClaim(row.id, this.now(), target.name, claim);
  }

  /** The first failure is logged at once; later ones are counted and summed up once per `logEveryMs`. */
  private noteFailure(lane: Lane, err: Error, delay: number): void {
    lane.failures++;
    lane.unlogged++;
    const now = this.now();
    if (lane.failures > 1 && now - lane.loggedAt < (this.opts.logEveryMs ?? 60_000)) return;
    const again = lane.failures === 1 ? '' : `still failing (${lane.unlogged} attempts since the last note): `;
    this.opts.log?.warn(
      `cannot notify ${lane.target.name}: ${again}${err.message}; alerts wait in the outbox, next try in ${Math.ceil(delay / 1000)} s`,
    );
    lane.unlogged = 0;
    lane.loggedAt = now;
  }

  private noteSuccess(lane: Lane): void {
    if (lane.failures > 0) {
      this.opts.log?.info(`${lane.target.name}: delivering again after ${lane.failures} failed attempts`);
    }
    lane.failures = 0;
    lane.unlogged = 0;
  }

  private retryLater(lane: Lane, ms: number): void {
    if (this.stopped || lane.timer) return;
    lane.retryAt = this.now() + ms;
    lane.timer = setTimeout(() => {
      lane.timer = null;
      void this.kickLane(lane);
    }, ms);
    lane.timer.unref();
  }
}
