import { UserError } from '../errors.ts';
import { visibleName } from '../ingest/runLocator.ts';
import { formatValue, jsonValue } from '../render/numbers.ts';
import type { Level } from '../report/build.ts';
import { LEVEL_LABEL } from '../report/markdown.ts';
import type { RunRow } from '../store/contract.ts';
import { ago, isoTime, type CommandContext, type Reply } from './reply.ts';

/** A run's health as its report tells it (the same status, decided the same way); null before its first record. */
async function healthOf(ctx: CommandContext, run: RunRow, now: number): Promise<Level | null> {
  const { reportOf } = await import('./runReport.ts');
  try {
    return (await reportOf(ctx, { run: run.name }, now)).status.level;
  } catch (err) {
    if (err instanceof UserError) return null;
    throw err;
  }
}

/** `runs` / `run list`: every run with its health, its firing warnings and criticals, step range, last epoch, record
 * count and last update; its directory only to a reader on this machine (a channel is no place for server paths). */
export async function runList(ctx: CommandContext, now = Date.now()): Promise<Reply> {
  const { store, local, seesRun } = ctx;
  const runs = [];
  for (const r of await store.listRuns()) {
    if (seesRun && !seesRun(r.name)) continue;
    const epoch = (await store.series(r.id, 'epoch', 1))[0]?.value ?? null;
    const firing = await store.listAlerts({ runId: r.id });
    runs.push({
      name: r.name,
      path: r.path,
      health: await healthOf(ctx, r, now),
      critical: firing.filter((a) => a.severity === 'critical').length,
      warning: firing.filter((a) => a.severity === 'warning').length,
      firstStep: r.first_step,
      lastStep: r.last_step,
      lastEpoch: epoch === null ? null : jsonValue(epoch),
      records: r.records,
      updatedAt: isoTime(r.updated_at),
      updatedMs: r.updated_at,
    });
  }
  return {
    title: runs.length === 0 ? 'No runs yet' : `${runs.length} run${runs.length === 1 ? '' : 's'}`,
    fields: [],
    // parts told apart by separators: a chat font is proportional, and spaces align nothing there
    lines: runs.map((r) =>
      [
        r.name,
        r.health === null ? 'no records yet' : LEVEL_LABEL[r.health],
        firingText(r.critical, r.warning),
        `steps ${r.firstStep ?? '-'}..${r.lastStep ?? '-'}`,
        `epoch ${r.lastEpoch === null ? '-' : formatValue(Number(r.lastEpoch))}`,
        `${r.records} records`,
        `updated ${ago(r.updatedMs, now)}`,
        ...(local ? [visibleName(r.path)] : []), // written out as the name is; --json has the path as it is
      ].join(' · '),
    ),
    data: runs.map(({ updatedMs: _, ...r }) => r),
  };
}

function firingText(critical: number, warning: number): string {
  const parts = [
    ...(critical > 0 ? [`${critical} critical`] : []),
    ...(warning > 0 ? [`${warning} warning${warning === 1 ? '' : 's'}`] : []),
  ];
  return parts.length === 0 ? 'nothing firing' : `firing: ${parts.join(', ')}`;
}
