/**
 * The alert commands (`alerts`, `ack`, `mute`, `mutes`, `unmute`): list incidents and hold back their notifications,
 * each answering a platform-neutral Reply.
 */
import { UserError } from '../lib/errors.ts';
import { durationMs, globMatch, MAX_DURATION, parseDuration, formatDuration } from '../lib/duration.ts';
import { Severity } from '../engine/rules.ts';
import { alertsUnder, queueCardUpdates } from '../notify/cardUpdates.ts';
import type { AlertRow, Who } from '../store/alerts.ts';
import { silenceMatches, type SilenceRow } from '../store/silences.ts';
import { ago, fromNow, isoTime, resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

const everyRun = (): boolean => true;

/** The alert `id` and its run's name, if the caller sees that run: another run's alert is answered as one that does
 * not exist. */
async function seenAlert(
  store: CommandContext['store'],
  id: number,
  seesRun: (run: string) => boolean,
): Promise<{ alert: AlertRow; run: string }> {
  const alert = await store.alerts.byId(id);
  const run = alert ? (await store.runs.byId(alert.run_id))?.name : undefined;
  if (!alert || run === undefined || !seesRun(run)) throw new UserError(`no alert #${id} (see \`alerts --all\`)`);
  return { alert, run };
}

/** When an alert last changed, in the reader's terms: `fired 12 min ago`, `resolved 3 h ago`. */
function changed(a: AlertRow, now: number): string {
  if (a.state === 'resolved') return `resolved ${ago(a.resolved_at, now)}`;
  return a.state === 'firing' ? `fired ${ago(a.fired_at, now)}` : `first seen ${ago(a.started_at, now)}`;
}

/** The escalation an alert's details record, if its severity rose while it fired. */
function escalationOf(details: string): { from: string; step: number } | null {
  const e = (JSON.parse(details) as { escalated?: { from?: unknown; step?: unknown } }).escalated;
  return e && typeof e.from === 'string' && typeof e.step === 'number' ? { from: e.from, step: e.step } : null;
}

/** `alerts [run] [--all]`: firing alerts (all incidents with --all), newest first, muted ones marked. */
export async function alertList(
  { store, seesRun = everyRun }: CommandContext,
  args: { run?: string; all?: boolean },
  now = Date.now(),
): Promise<Reply> {
  const run = args.run ? await resolveRun(store, args.run, seesRun) : undefined;
  const names = new Map((await store.runs.list()).map((r) => [r.id, r.name]));
  const silences = await store.silences.active(now);
  const listed = (await store.alerts.list({ runId: run?.id, all: args.all })).filter((a) =>
    seesRun(names.get(a.run_id) ?? ''),
  );
  const rows = listed.map((a) => {
    const runName = names.get(a.run_id) ?? '?';
    return {
      id: a.id,
      run: runName,
      rule: a.rule,
      metric: a.metric,
      severity: a.severity,
      state: a.state,
      step: a.fired_step ?? a.started_step,
      resolvedStep: a.resolved_step,
      // an incident whose severity rose while it fired (an early warning, then its page): from what, at which step
      escalated: escalationOf(a.details),
      summary: a.summary,
      startedAt: isoTime(a.fired_at ?? a.started_at),
      resolvedAt: isoTime(a.resolved_at),
      ackedBy: a.acked_by,
      ackedByName: a.acked_by_name,
      changed: changed(a, now),
      muted:
        a.state !== 'resolved' &&
        silences.some((s) => silenceMatches(s, { run: runName, rule: a.rule, severity: a.severity })),
    };
  });
  // an info alert (a run finished) is an event, not trouble: listed, not counted as firing
  const info = args.all ? 0 : rows.filter((r) => r.severity === 'info').length;
  const n = rows.length - info;
  const what = (args.all ? 'alert' : 'firing alert') + (n === 1 ? '' : 's');
  const forRun = run ? ` for ${run.name}` : '';
  return {
    title: `${n === 0 ? 'No' : n} ${what}${forRun}${info > 0 ? ` (and ${info} info)` : ''}`,
    fields: [],
    // one line each, its parts told apart by separators: chat fonts are proportional, spaces align nothing there
    lines: rows.map(
      (r) =>
        `#${r.id} ${r.severity} · ${r.state} · ${r.run} · ${r.rule} at step ${r.step}: ${r.summary}` +
        ` · ${r.changed}` +
        (r.ackedByName ? ` [acked by ${r.ackedByName}]` : '') +
        (r.muted ? ' [muted]' : ''),
    ),
    names: [...new Set(rows.flatMap((r) => (r.ackedByName ? [r.ackedByName] : [])))],
    data: rows.map(({ changed: _, ...r }) => r),
  };
}

/** `ack ID [comment]`: stops repeats of an alert until it resolves; every card of it shows who acked. */
export async function ackAlert(
  { store, seesRun = everyRun }: CommandContext,
  args: { id: number; by: Who; comment?: string },
  now = Date.now(),
): Promise<Reply> {
  const { alert } = await seenAlert(store, args.id, seesRun);
  if (alert.state === 'resolved') throw new UserError(`alert #${args.id} is already resolved`);
  await store.transaction(async (tx) => {
    await tx.alerts.ack(alert.id, args.by, args.comment ?? null, now);
    await queueCardUpdates(tx, [alert.id], now);
  });
  return {
    title: `Acked #${alert.id} ${alert.rule} (${alert.metric}) by ${args.by.name}`,
    fields: [],
    lines: args.comment ? [args.comment] : [],
    names: [args.by.name],
    data: {
      id: alert.id,
      ackedBy: args.by.id,
      ackedByName: args.by.name,
      ackedAt: isoTime(now),
      comment: args.comment ?? null,
    },
  };
}

/** A stored time as ISO text; null for one no date can hold (a mute saved before spans were capped). */
const storedTime = (ms: number): string | null => (Number.isFinite(new Date(ms).getTime()) ? isoTime(ms) : null);

/** `#3 run grpo-7b ending in 2 h by ana: why`: its end in the reader's terms, its author by name. */
function describeSilence(s: SilenceRow, now: number): string {
  const what = [s.run && `run ${s.run}`, s.rule && `rule ${s.rule}`, s.severity && `severity ${s.severity}`]
    .filter(Boolean)
    .join(', ');
  const until =
    s.ended_at !== null
      ? `ended ${ago(s.ended_at, now)}`
      : storedTime(s.ends_at) === null
        ? 'until an end out of range (unmute it)'
        : `ending ${fromNow(s.ends_at, now)}`;
  return `#${s.id} ${what || 'everything'} ${until} by ${s.author_name}${s.reason ? `: ${s.reason}` : ''}`;
}

const silenceData = (s: SilenceRow) => ({
  id: s.id,
  run: s.run,
  rule: s.rule,
  severity: s.severity,
  startsAt: storedTime(s.starts_at),
  endsAt: storedTime(s.ends_at),
  author: s.author,
  authorName: s.author_name,
  reason: s.reason,
});

/** The run word of `mute all 2h`: every run (as no run matcher is); a mute needs it, a run or a rule. */
export const ALL_RUNS = 'all';

/** `mute [run|all] [rule] [severity] <duration> [reason]`: alerts matching are recorded but not posted; the cards
 * of those firing show that they are muted. */
export async function muteAlerts(
  ctx: CommandContext,
  args: {
    run?: string;
    rule?: string;
    severity?: string;
    for: string;
    reason?: string;
    by: Who;
    alert?: number;
    scope?: 'run' | 'rule';
  },
  now = Date.now(),
): Promise<Reply> {
  const { store, seesRun } = ctx;
  if (args.alert !== undefined) {
    return muteAlerts(ctx, { ...args, ...(await aboutAlert(store, args, seesRun ?? everyRun)), alert: undefined }, now);
  }
  if (args.scope !== undefined) throw new UserError('scope goes with alert (mute --alert ID --scope rule)');
  const ms = parseDuration(args.for);
  if (ms === undefined) {
    const why =
      durationMs(args.for) === undefined
        ? 'is not a duration: use e.g. 30m, 2h or 1d'
        : `is longer than a mute may be (${MAX_DURATION})`;
    throw new UserError(`'${args.for}' ${why}`);
  }
  const severity = args.severity === undefined ? null : Severity.safeParse(args.severity);
  if (severity && !severity.success)
    throw new UserError(`severity must be info, warning or critical, not '${args.severity}'`);
  const run = args.run === ALL_RUNS ? undefined : args.run;
  if (!isGlob(run ?? null)) await resolveRun(store, run, seesRun);
  else if (!(await seesAllOf(store, run ?? null, seesRun))) {
    // it would hold back alerts that go to channels this one cannot read
    throw new UserError(
      'from this channel, mute a run it sees by name: this mute would reach runs whose alerts go elsewhere',
    );
  }
  const s = await store.transaction(async (tx) => {
    const added = await tx.silences.add({
      run: run ?? null,
      rule: args.rule ?? null,
      severity: severity ? severity.data : null,
      starts_at: now,
      ends_at: now + ms,
      author: args.by.id,
      author_name: args.by.name,
      reason: args.reason ?? '',
    });
    await queueCardUpdates(tx, await alertsUnder(tx, added), now);
    return added;
  });
  const lines = [describeSilence(s, now)];
  return { title: `Muted for ${formatDuration(ms)}`, fields: [], lines, names: [s.author_name], data: silenceData(s) };
}

/** `mute --alert ID [--scope rule]`: the alert's run (and rule), named in the reason. */
async function aboutAlert(
  store: CommandContext['store'],
  args: { run?: string; rule?: string; alert?: number; scope?: string; reason?: string },
  seesRun: (run: string) => boolean,
) {
  if (args.run !== undefined || args.rule !== undefined) throw new UserError('give alert, or run and rule, not both');
  const { alert, run } = await seenAlert(store, args.alert as number, seesRun);
  return {
    run,
    rule: args.scope === 'rule' ? alert.rule : undefined,
    scope: undefined,
    reason: args.reason ?? `alert #${alert.id}`,
  };
}

const isGlob = (run: string | null): boolean => run === null || run.includes('*') || run.includes('?');

/** Whether the caller sees every run a mute reaches (all runs for a mute without a run; those a glob matches now):
 * the mutes they may set, be shown and end. */
async function seesAllOf(
  store: CommandContext['store'],
  run: string | null,
  seesRun?: (run: string) => boolean,
): Promise<boolean> {
  if (!seesRun) return true;
  if (!isGlob(run)) return seesRun(run as string);
  return (await store.runs.list()).every((r) => (run !== null && !globMatch(run, r.name)) || seesRun(r.name));
}

/** `mutes`: the mutes in force. */
export async function muteList({ store, seesRun }: CommandContext, now = Date.now()): Promise<Reply> {
  const active = [];
  for (const s of await store.silences.active(now)) if (await seesAllOf(store, s.run, seesRun)) active.push(s);
  return {
    title:
      active.length === 0 ? 'No mutes in force' : `${active.length} mute${active.length === 1 ? '' : 's'} in force`,
    fields: [],
    lines: active.map((s) => describeSilence(s, now)),
    names: [...new Set(active.map((s) => s.author_name))],
    data: active.map(silenceData),
  };
}

/** `unmute ID`: ends a mute now; what it held back and still fires is posted on the next tick, and the cards of
 * what it matched no longer say muted (unless another mute holds them). */
export async function unmute(
  { store, seesRun }: CommandContext,
  args: { id: number },
  now = Date.now(),
): Promise<Reply> {
  const s = await store.silences.byId(args.id);
  if (!s || s.ended_at !== null || s.ends_at <= now || !(await seesAllOf(store, s.run, seesRun)))
    throw new UserError(`no mute #${args.id} in force (see \`mutes\`)`);
  await store.transaction(async (tx) => {
    await tx.silences.end(s.id, now);
    await queueCardUpdates(tx, await alertsUnder(tx, s), now);
  });
  const ended = describeSilence({ ...s, ended_at: now }, now);
  return { title: `Unmuted #${s.id}`, fields: [], lines: [ended], names: [s.author_name], data: silenceData(s) };
}
