/**
 * Reports nobody asked for (issue 12): one when a watched run reaches each milestone epoch (0.5 and 1.0 by
 * default), and a daily digest per channel (each run's status line, firing alerts, reward since yesterday, and
 * the info alerts of the last 24 h, which go nowhere else but the terminal: issue 11).
 * Written to the outbox like alerts; muted like alerts by a mute on rule `report` or `digest`.
 */
import type { Config } from '../config/schema.ts';
import type { Notification, ScheduledReport } from '../engine/notification.ts';
import { formatValue } from '../render/numbers.ts';
import { ReportMarks } from '../store/reportMarks.ts';
import type { RunRow } from '../store/runs.ts';
import { silenceMatches } from '../store/silences.ts';
import type { Store } from '../store/store.ts';
import { reportOf } from '../commands/runReport.ts';
import { LEVEL_LABEL, summaryLines } from './markdown.ts';
import { finite, mean } from './stats.ts';

const DAY = 24 * 3600 * 1000;
/** the reward of a digest line: the mean of the last few records (one record is noise) */
const REWARD_RECORDS = 10;

export class ReportSchedule {
  private readonly marks: ReportMarks;
  /** a digest is sent only for a digest time this process was running at (not on every restart after 9:00) */
  private readonly since: number;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    /** the outbox targets of a run's reports (its warnings' channels and the terminal) */
    private readonly route: (run: string) => readonly string[],
    private readonly now: () => number = Date.now,
  ) {
    this.marks = new ReportMarks(store.db);
    this.since = now();
  }

  /** Writes what is due to the outbox; returns the rows written. */
  tick(): number {
    return this.store.db.transaction(() => {
      let written = 0;
      for (const run of this.store.runs.list()) written += this.milestones(run);
      return written + this.digest();
    })();
  }

  private muted(run: string, rule: 'report' | 'digest'): boolean {
    return this.store.silences.active(this.now()).some((s) => silenceMatches(s, { run, rule, severity: 'info' }));
  }

  private send(runId: number, run: string, targets: readonly string[], report: ScheduledReport): number {
    const n: Notification = { run, items: [], report };
    for (const t of targets) this.store.outbox.add(runId, t, n, this.now());
    return targets.length;
  }

  /** Each milestone epoch once per run; one a run passed before it was watched live is marked, not sent. */
  private milestones(run: RunRow): number {
    const epoch = this.store.points.upTo(run.id, 'epoch', Number.MAX_SAFE_INTEGER, 1)[0]?.value;
    if (epoch === undefined) return 0;
    let written = 0;
    for (const e of this.config.report.milestones) {
      if (epoch < e - 1e-9 || !this.marks.mark(run.id, `epoch:${e}`, this.now())) continue;
      if (run.live_at === null || this.muted(run.name, 'report')) continue;
      const report = reportOf({ store: this.store, config: this.config }, { run: run.name }, this.now());
      const title = `${run.name} reached epoch ${e}: ${LEVEL_LABEL[report.status.level]}`;
      written += this.send(run.id, run.name, this.route(run.name), { kind: 'milestone', title, lines: summaryLines(report) });
    }
    return written;
  }

  private digest(): number {
    if (this.config.report.digest === 'off') return 0;
    const now = this.now();
    const [h, m] = this.config.report.digest.split(':').map(Number) as [number, number];
    const { day, midnight } = localDay(now, this.config.report.digestZone);
    const due = midnight + (h * 60 + m) * 60_000;
    if (now < due || !this.marks.mark(0, `digest:${day}`, now)) return 0;
    if (this.since > due) return 0; // started after today's digest time: marked, the next one is tomorrow's
    const byTarget = new Map<string, string[]>();
    for (const run of this.store.runs.list()) {
      if (run.last_step === null || this.muted(run.name, 'digest')) continue;
      const lines = [this.digestLine(run, now), ...this.infoLines(run, now)];
      for (const t of this.route(run.name)) byTarget.set(t, [...(byTarget.get(t) ?? []), ...lines]);
    }
    for (const [t, lines] of byTarget) this.send(0, '', [t], { kind: 'digest', title: `rlwatch daily digest, ${day}`, lines });
    return byTarget.size;
  }

  /** The info alerts that fired in the last 24 h: how many per rule, and the last value of each one's metric. */
  private infoLines(run: RunRow, now: number): string[] {
    const counts = new Map<string, { n: number; metric: string }>();
    // newest first: the metric named is the latest alert's
    for (const a of this.store.alerts.list({ runId: run.id, all: true })) {
      if (a.severity !== 'info' || a.fired_at === null || a.fired_at <= now - DAY || a.fired_at > now) continue;
      const c = counts.get(a.rule);
      if (c) c.n++;
      else counts.set(a.rule, { n: 1, metric: a.metric });
    }
    if (counts.size === 0) return [];
    const parts = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([rule, { n, metric }]) => {
      const last = this.store.points.upTo(run.id, metric, Number.MAX_SAFE_INTEGER, 1)[0]?.value;
      return `${rule} ×${n}${last === undefined ? '' : ` (${metric} now ${formatValue(last)})`}`;
    });
    return [`  info, last 24 h: ${parts.join(', ')}`];
  }

  private digestLine(run: RunRow, now: number): string {
    const report = reportOf({ store: this.store, config: this.config }, { run: run.name }, now);
    const firing = this.store.alerts.list({ runId: run.id }).map((a) => a.rule);
    const rewardAt = (step: number | null): number | null => {
      if (step === null) return null;
      const v = finite(this.store.points.upTo(run.id, 'reward', step, REWARD_RECORDS, true).map((p) => p.value));
      return v.length > 0 ? mean(v) : null;
    };
    const today = rewardAt(run.last_step);
    const yesterday = rewardAt(this.marks.stepAt(run.id, now - DAY));
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
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: two, day: two, hour: two, minute: two, second: two,
  });
  const parts = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, p.value])) as Record<string, string>;
  const day = `${parts['year']}-${parts['month']}-${parts['day']}`;
  // the zone's offset now: its wall clock read as UTC, minus the instant (whole seconds)
  const wall = Date.parse(`${day}T${parts['hour']}:${parts['minute']}:${parts['second']}Z`);
  const offset = wall - Math.floor(at / 1000) * 1000;
  return { day, midnight: Date.parse(`${day}T00:00:00Z`) - offset };
}
