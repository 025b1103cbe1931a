/**
 * Reports nobody asked for: one when a watched run reaches each milestone epoch (0.5 and 1.0 by default), and a daily
 * digest per channel (each run's status line, firing alerts, reward since yesterday, and the info alerts of the last
 * 24 h, which go nowhere else but the terminal).
 * Written to the outbox like alerts; muted like alerts by a mute on rule `report` or `digest`.
 */
import type { Config } from '../config/schema.ts';
import type { Notification, ScheduledReport } from '../engine/notification.ts';
import { formatValue } from '../lib/numbers.ts';
import type { RunRow, StoreContract, StoreTx } from '../store/contract.ts';
import { silenceMatches } from '../store/silences.ts';
import { LEVEL_LABEL, summaryLines } from './markdown.ts';
import { reportOfRun } from './ofRun.ts';
import { finite, mean } from './stats.ts';

const DAY = 24 * 3600 * 1000;
/** the reward of a digest line: the mean of the last few records (one record is noise) */
const REWARD_RECORDS = 10;

export class ReportSchedule {
  /** a digest is sent only for a digest time this process was running at (not on every restart after 9:00) */
  private readonly since: number;
  /** `run milestone` pairs this process saw marked: not asked of the store again on every tick */
  private readonly marked = new Set<string>();
  private ticking = false;

  constructor(
    private readonly store: StoreContract,
    private readonly config: Config,
    /** the dispatcher's router (`DispatcherOptions.route`): a run's reports go where its warnings go */
    private readonly route: (run: string, severity: string) => readonly string[],
    private readonly now: () => number = Date.now,
  ) {
    this.since = now();
  }

  /**
   * Writes what is due to the outbox; returns the rows written. Each milestone report is a transaction of its own (its
   * mark and its rows together), so a tick that finds a hundred runs past a milestone at once (runs launched together)
   * holds no connection for all of them, and the alerts' deliveries go on meanwhile. A tick still running when the
   * next is due is not joined by it.
   */
  async tick(): Promise<number> {
    if (this.ticking) return 0;
    this.ticking = true;
    try {
      let written = 0;
      for (const run of await this.store.runs.list()) written += await this.milestones(run);
      return written + (await this.store.transaction((tx) => this.digest(tx)));
    } finally {
      this.ticking = false;
    }
  }

  private async muted(tx: StoreTx, run: string, rule: 'report' | 'digest'): Promise<boolean> {
    return (await tx.silences.active(this.now())).some((s) => silenceMatches(s, { run, rule, severity: 'info' }));
  }

  private async send(
    tx: StoreTx,
    runId: number,
    run: string,
    targets: readonly string[],
    report: ScheduledReport,
  ): Promise<number> {
    const n: Notification = { run, items: [], report };
    for (const t of targets) await tx.outbox.add(runId, t, n, this.now());
    return targets.length;
  }

  /** Each milestone epoch once per run; one a run passed before it was watched live is marked, not sent. */
  private async milestones(run: RunRow): Promise<number> {
    const due = this.config.report.milestones.filter((e) => !this.marked.has(`${run.id} ${e}`));
    if (due.length === 0) return 0;
    const epoch = (await this.store.points.upTo(run.id, 'epoch', Number.MAX_SAFE_INTEGER, 1))[0]?.value;
    if (epoch === undefined) return 0;
    let written = 0;
    for (const e of due) {
      if (epoch < e - 1e-9) continue;
      // the report tells the run as it was at the step that reached the epoch, not as it went on after it
      const reached = (await this.store.points.series(run.id, 'epoch')).find((p) => p.value >= e - 1e-9)?.step;
      written += await this.store.transaction(async (tx) => {
        if (!(await tx.reports.mark(run.id, `epoch:${e}`, this.now()))) return 0;
        if (run.live_at === null || (await this.muted(tx, run.name, 'report'))) return 0;
        const report = await reportOfRun(tx, run, this.config, { until: reached }, this.now());
        const title = `${run.name} reached epoch ${e}: ${LEVEL_LABEL[report.status.level]}`;
        const sent = { kind: 'milestone' as const, title, lines: summaryLines(report) };
        return this.send(tx, run.id, run.name, this.route(run.name, 'warning'), sent);
      });
      this.marked.add(`${run.id} ${e}`); // committed: a mark is never taken back
    }
    return written;
  }

  private async digest(tx: StoreTx): Promise<number> {
    if (this.config.report.digest === 'off') return 0;
    const now = this.now();
    const [h, m] = this.config.report.digest.split(':').map(Number) as [number, number];
    const { day, midnight } = localDay(now, this.config.report.digestZone);
    const due = midnight + (h * 60 + m) * 60_000;
    if (now < due || !(await tx.reports.mark(0, `digest:${day}`, now))) return 0;
    if (this.since > due) return 0; // started after today's digest time: marked, the next one is tomorrow's
    const byTarget = new Map<string, string[]>();
    for (const run of await tx.runs.list()) {
      if (run.last_step === null || (await this.muted(tx, run.name, 'digest'))) continue;
      const lines = [await this.digestLine(tx, run, now), ...(await this.infoLines(tx, run, now))];
      for (const t of this.route(run.name, 'warning')) byTarget.set(t, [...(byTarget.get(t) ?? []), ...lines]);
    }
    const title = `rlwatch daily digest, ${day}`;
    for (const [t, lines] of byTarget) await this.send(tx, 0, '', [t], { kind: 'digest', title, lines });
    return byTarget.size;
  }

  /** The info alerts that fired in the last 24 h: how many per rule, and the last value of each one's metric. */
  private async infoLines(tx: StoreTx, run: RunRow, now: number): Promise<string[]> {
    const counts = new Map<string, { n: number; metric: string }>();
    // newest first: the metric named is the latest alert's
    for (const a of await tx.alerts.list({ runId: run.id, all: true })) {
      if (a.severity !== 'info' || a.fired_at === null || a.fired_at <= now - DAY || a.fired_at > now) continue;
      const c = counts.get(a.rule);
      if (c) c.n++;
      else counts.set(a.rule, { n: 1, metric: a.metric });
    }
    if (counts.size === 0) return [];
    const parts: string[] = [];
    for (const [rule, { n, metric }] of [...counts].sort(([a], [b]) => a.localeCompare(b))) {
      const last = (await tx.points.upTo(run.id, metric, Number.MAX_SAFE_INTEGER, 1))[0]?.value;
      parts.push(`${rule} ×${n}${last === undefined ? '' : ` (${metric} now ${formatValue(last)})`}`);
    }
    return [`  info, last 24 h: ${parts.join(', ')}`];
  }

  private async digestLine(tx: StoreTx, run: RunRow, now: number): Promise<string> {
    const report = await reportOfRun(tx, run, this.config, {}, now);
    // info alerts (a run finished) are events, not trouble: told in the info line below
    const firing = (await tx.alerts.list({ runId: run.id })).filter((a) => a.severity !== 'info').map((a) => a.rule);
    const rewardAt = async (step: number | null): Promise<number | null> => {
      if (step === null) return null;
      const v = finite((await tx.points.upTo(run.id, 'reward', step, REWARD_RECORDS, true)).map((p) => p.value));
      return v.length > 0 ? mean(v) : null;
    };
    const today = await rewardAt(run.last_step);
    const yesterday = await rewardAt(await tx.reports.stepAt(run.id, now - DAY));
    const before = yesterday === null ? '' : ` (yesterday ${formatValue(yesterday)})`;
    const reward = today === null ? '' : ` · reward ${formatValue(today)}${before}`;
    const alerts = firing.length === 0 ? 'no alert firing' : `firing: ${firing.join(', ')}`;
    return `${run.name}: ${LEVEL_LABEL[report.status.level]} · step ${run.last_step ?? '-'} · ${alerts}${reward}`;
  }
}

/** The calendar day of `at` in `zone` (YYYY-MM-DD) and the instant that day began there. */
export function localDay(at: number, zone: string): { day: string; midnight: number } {
  const two = '2-digit';
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: two,
    day: two,
    hour: two,
    minute: two,
    second: two,
  });
  const parts = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, p.value])) as Record<string, string>;
  const day = `${parts['year']}-${parts['month']}-${parts['day']}`;
  // the zone's offset now: its wall clock read as UTC, minus the instant (whole seconds)
  const wall = Date.parse(`${day}T${parts['hour']}:${parts['minute']}:${parts['second']}Z`);
  const offset = wall - Math.floor(at / 1000) * 1000;
  return { day, midnight: Date.parse(`${day}T00:00:00Z`) - offset };
}
