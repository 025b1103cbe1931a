/**
 * The engine: after each batch, evaluates the rules of the runs it touched and writes their alert changes to the
 * outbox in the same transaction, platform-neutral.
 */
import { stderrLog, type Log } from '../lib/log.ts';
import { isDatabaseError } from '../store/dbErrors.ts';
import type { AlertRow } from '../store/alerts.ts';
import type { RunRow } from '../store/runs.ts';
import type { SilenceRow } from '../store/silences.ts';
import type { LiveStore } from '../store/live.ts';
import { ROUTED } from '../store/outbox.ts';
import { chartOf, isMuted, snapshotOf } from './capture.ts';
import { attemptNote, rewindRestarts } from './attempts.ts';
import { runContext } from './context.ts';
import { globMatch } from '../lib/duration.ts';
import { evaluatorOf } from './kinds.ts';
import {
  CARDS_PER_MESSAGE,
  type ExampleSnippet,
  type FinishedSummary,
  type Notification,
  type NotificationItem,
} from './notification.ts';
import { knowledgeOfAlert } from './presets/knowledge.ts';
import type { Rule, RuleBook } from './rules.ts';

export interface EngineOptions {
  repeatIntervalMs: number;
  /** the outbox targets every notification is written for; by default one platform-neutral row (`ROUTED`), which
   * the delivering process routes: the engine needs no chat settings */
  targets?: readonly string[];
  now?: () => number;
  /** when this process started watching: a run silent since before then is not "stalled" */
  sessionStart?: number;
  /** where a rule that throws is reported (default stderr) */
  log?: Log;
}

/** A rule threw while evaluating (not the database: its errors are the caller's to handle). */
class RuleFailed extends Error {
  constructor(
    readonly rule: string,
    readonly reason: unknown,
  ) {
    super(`rule ${rule} failed`);
  }
}

const RECENT = 50;
/** How far behind its last live growth a run's `live_at` may be. It says whether a run grew while watched within a
 * stall's limit of this session's start (the preset's limits are 10 and 30 minutes); written on every batch, it cost
 * PostgreSQL a statement a batch. */
const LIVE_AT_EVERY_MS = 30_000;
const SNIPPET_CHARS = 400;

/** Whether an alert is held back by another of the run's firing alerts whose rule `inhibits` its rule (an id or a
 * glob): a symptom of a cause that is paged. An alert that fired later never holds back one that fired before it;
 * at the same step the inhibitor wins, and of two rules that hold each other back (entropy_drop and
 * entropy_collapse) the older alert: one page either way. */
function inhibitor(rules: readonly Rule[], alerts: readonly AlertRow[]): (a: AlertRow) => boolean {
  const inhibits = new Map(rules.map((r) => [r.id, r.inhibits]));
  const inhibitsOf = (rule: string): readonly string[] => inhibits.get(rule) ?? [];
  const holds = (a: AlertRow, b: AlertRow): boolean =>
    a.rule !== b.rule && inhibitsOf(a.rule).some((p) => globMatch(p, b.rule));
  const sources = alerts.filter((a) => a.state === 'firing' && inhibitsOf(a.rule).length > 0);
  if (sources.length === 0) return () => false;
  const order = (a: AlertRow): number => a.fired_step ?? a.started_step;
  return (b) =>
    sources.some(
      (a) => holds(a, b) && (order(a) < order(b) || (order(a) === order(b) && (!holds(b, a) || a.id < b.id))),
    );
}

/** An alert said once (run_finished's summary), never repeated. */
const once = (a: AlertRow): boolean => (JSON.parse(a.details) as { once?: boolean }).once === true;

/**
 * Evaluates the rules of a run after each batch and turns alert changes into outbox rows, all in one
 * transaction. Knows nothing of terminals or chat platforms.
 */
export class Engine {
  private readonly now: () => number;
  private readonly sessionStart: number;
  /** each run's last read when the files found at start-up had been read: a run read since is watched live */
  private caughtUpReads: Map<number, number | null> | undefined;

  constructor(
    private readonly store: LiveStore,
    private readonly book: RuleBook,
    private readonly opts: EngineOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.sessionStart = opts.sessionStart ?? this.now();
  }

  /** The files found at start-up have been read (what was there is history): from now on, a run that grows
   * is watched live, and only such a run can stall. `backfill` never calls it. */
  caughtUp(): void {
    this.caughtUpReads = new Map(this.store.runs.list().map((r) => [r.id, r.active_at]));
  }

  /** Marks the run live when it has grown since the catch-up, at most every LIVE_AT_EVERY_MS; returns its row as it
   * is now. */
  private noteLive(run: RunRow): RunRow {
    const reads = this.caughtUpReads;
    if (
      reads &&
      run.active_at !== null &&
      run.active_at !== reads.get(run.id) &&
      (run.live_at === null || run.active_at - run.live_at >= LIVE_AT_EVERY_MS)
    ) {
      this.store.runs.markLive(run.id);
      return { ...run, live_at: run.active_at };
    }
    return run;
  }

  /**
   * After a batch: the run's step-driven rules, then (unless backfilling) its notifications. A rule that throws
   * is logged with its id and skipped for this batch: the evaluation is rolled back and done again without it
   * (nothing is paid for this while no rule throws), so ingestion and the other rules go on.
   */
  evaluate(runId: number, announce = true): number {
    const skip = new Set<string>();
    for (;;) {
      try {
        return this.store.transaction(() => this.evaluateRules(runId, announce, skip));
      } catch (err) {
        if (!(err instanceof RuleFailed)) throw err;
        skip.add(err.rule);
        const reason = err.reason instanceof Error ? err.reason.message : String(err.reason);
        const run = this.store.runs.byId(runId)?.name ?? `#${runId}`;
        (this.opts.log ?? stderrLog).warn(`rule ${err.rule} failed on run ${run} (${reason}): skipped for this batch`);
      }
    }
  }

  private evaluateRules(runId: number, announce: boolean, skip: ReadonlySet<string>): number {
    const read = this.store.runs.byId(runId);
    if (!read) return 0;
    const since = this.now();
    const run = this.noteLive(read);
    const attempts = this.store.attempts.list(runId);
    rewindRestarts(this.store, runId, this.now, attempts);
    const ctx = runContext(this.store, runId, run, this.now, attempts);
    // the kinds that ask to go last (milestones) judge knowing what the other rules made of the same records
    const rules = this.book.forRun(run.name);
    for (const last of [false, true]) {
      for (const rule of rules) {
        const evaluator = evaluatorOf(rule.kind);
        if (skip.has(rule.id) || (evaluator.last === true) !== last) continue;
        try {
          evaluator.evaluate?.(ctx, rule, announce);
        } catch (err) {
          if (isDatabaseError(err)) throw err;
          throw new RuleFailed(rule.id, err);
        }
      }
    }
    this.store.alerts.flushCursors(); // in this transaction, with the points and alerts the rules read and changed
    this.store.runs.markEvaluated(runId);
    // live, an incident that fired and resolved within one batch is still news
    return announce ? this.announceRun(run, since) : 0;
  }

  /** At start-up: evaluates the runs with batches committed but never evaluated (the process stopped between a
   * commit and its evaluation), without announcing (the tick after the catch-up announces what fires). */
  evaluateBehind(): number {
    const ids = this.store.runs.unevaluated();
    for (const id of ids) this.evaluate(id, false);
    return ids.length;
  }

  /** On a timer: stalls, repeats and expired mutes of every run. */
  tick(): number {
    return this.store.transaction(() => {
      let written = 0;
      for (const listed of this.store.runs.list()) {
        const run = this.noteLive(listed);
        const ctx = runContext(this.store, run.id, run, this.now);
        for (const rule of this.book.forRun(run.name)) evaluatorOf(rule.kind).tick?.(ctx, rule, this.sessionStart);
        written += this.announceRun(run);
      }
      this.store.alerts.flushCursors();
      return written;
    });
  }

  /**
   * Writes an outbox row (by default one platform-neutral row, else one per target) for what the run's alerts need
   * said now: new firings, resolutions of announced alerts, repeats after the interval (not when acked). Muted alerts
   * are recorded, not announced; once the mute ends they are, if still firing.
   */
  announce(runId: number, firedSince?: number): number {
    const run = this.store.runs.byId(runId);
    return run ? this.announceRun(run, firedSince) : 0;
  }

  private announceRun(run: RunRow, firedSince?: number): number {
    const runId = run.id;
    const now = this.now();
    // read only when an alert's fate depends on them: most evaluations announce nothing
    let silences: SilenceRow[] | undefined;
    const mutedNow = (a: AlertRow): boolean => isMuted((silences ??= this.store.silences.active(now)), run.name, a);
    const items: NotificationItem[] = [];
    // a storm (hundreds of alerts of a run at once) is posted as CARDS_PER_MESSAGE cards of a severity and one chart
    // (notify/delivery.ts): the charts of the others are not captured (10,000 of them were ~80 MB of outbox)
    const charted = new Map<string, number>();
    const chartFor = (severity: string): boolean => {
      const n = charted.get(severity) ?? 0;
      charted.set(severity, n + 1);
      return severity === 'critical' || n < CARDS_PER_MESSAGE;
    };
    const rules = this.book.forRun(run.name);
    const alerts = this.store.alerts.announceable(runId, firedSince);
    const inhibited = inhibitor(rules, alerts);
    for (const a of alerts) {
      const repeatDue = !a.acked_by && now - (a.notified_at ?? 0) >= this.opts.repeatIntervalMs && !once(a);
      // a firing alert announced already and not due a repeat stays quiet, muted or not
      if (a.state === 'firing' && a.notified_state === 'firing' && !repeatDue) continue;
      const muted = mutedNow(a);
      // held back as a mute holds it, but not shown as muted: a symptom of a cause that is paged
      const quiet = muted || inhibited(a);
      let kind: NotificationItem['kind'] | null = null;
      if (a.state === 'resolved' && a.notified_state === null) {
        if (!quiet) items.push(this.item(a, 'firing', muted, rules, chartFor(a.severity)));
        kind = quiet ? null : 'resolved';
      } else if (a.state === 'resolved') kind = 'resolved';
      else if (quiet) kind = null;
      else if (a.notified_state !== 'firing') kind = 'firing';
      else if (repeatDue) kind = 'repeat';
      if (!kind) continue;
      items.push(this.item(a, kind, muted, rules, chartFor(a.severity)));
      this.store.alerts.markNotified(a.id, kind === 'resolved' ? 'resolved' : 'firing', now);
    }
    if (items.length === 0) return 0;
    // the items in the order they arose; which destinations take which is decided where they are delivered
    const notification: Notification = { run: run.name, items };
    const targets = this.opts.targets ?? [ROUTED];
    for (const target of targets) this.store.outbox.add(runId, target, notification, now);
    return targets.length;
  }

  private item(
    a: AlertRow,
    kind: NotificationItem['kind'],
    muted: boolean,
    rules: readonly Rule[],
    charted = true,
  ): NotificationItem {
    const details = JSON.parse(a.details) as {
      evidence?: NotificationItem['evidence'];
      finished?: FinishedSummary;
      escalated?: { step?: number };
    };
    // an escalated incident is told at the step it escalated
    const firedAt = details.escalated?.step ?? a.fired_step;
    const step = (kind === 'resolved' ? a.resolved_step : firedAt) ?? a.started_step;
    const summary =
      kind === 'resolved'
        ? String((JSON.parse(a.details) as { resolved?: { summary?: string } }).resolved?.summary ?? 'resolved')
        : a.summary;
    const epoch = this.store.points.upTo(a.run_id, 'epoch', step, 1)[0]?.value ?? null;
    const recent =
      a.metric === 'activity' || a.metric.startsWith('log:')
        ? []
        : this.store.points.upTo(a.run_id, a.metric, step, RECENT).map((p) => p.value);
    const kept = this.store.examples.atOrBefore(a.run_id, step);
    const snip = (e: (typeof kept)[number]): ExampleSnippet => ({
      reward: e.reward,
      breakdown: e.breakdown,
      completion: e.completion.length > SNIPPET_CHARS ? `${e.completion.slice(0, SNIPPET_CHARS)}…` : e.completion,
    });
    const half = Math.ceil(kept.length / 2);
    const hint = kind === 'resolved' ? undefined : knowledgeOfAlert(a.rule, a.details)?.hint;
    return {
      ...(hint ? { hint } : {}),
      ...(details.evidence ? { evidence: details.evidence } : {}),
      ...(details.finished ? { finished: details.finished } : {}),
      alertId: a.id,
      kind,
      severity: a.severity,
      rule: a.rule,
      metric: a.metric,
      // a restart's own card names its attempt already
      summary: summary + (rules.find((r) => r.id === a.rule)?.kind === 'restart' ? '' : attemptNote(this.store, a)),
      step,
      epoch,
      recent,
      examples:
        kept.length === 0
          ? null
          : { step: kept[0]!.step, best: kept.slice(0, half).map(snip), worst: kept.slice(half).reverse().map(snip) },
      // the card's state and chart, captured now: delivery never reads the store back
      state: snapshotOf(a, muted),
      chart: charted ? chartOf(this.store, a, step, rules) : null,
    };
  }
}
