/** `runs` / `run list`: every run with its health as its firing alerts tell it, cheap enough for a million steps. */
import { visibleName } from '../ingest/discover/runLocator.ts';
import { formatValue, jsonValue } from '../lib/numbers.ts';
import { ago, isoTime, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/**
 * `runs` / `run list`: every run with its health as its firing alerts tell it (criticals, warnings), step range, last
 * epoch, record count and last update; its directory only to a reader on this machine (a channel is no place for
 * server paths). The report's fuller status (ranges, milestones, stop criteria) is `run report`'s: built for every
 * run here, it cost 14.6 s and 1.5 GB on a run of 1,000,000 steps, where the list takes half a second.
 */
export async function runList(ctx: CommandContext, now = Date.now()): Promise<Reply> {
  const { store, local, seesRun } = ctx;
  const runs = [];
  for (const r of await store.runs.list()) {
    if (seesRun && !seesRun(r.name)) continue;
    const epoch = (await store.points.series(r.id, 'epoch', 1))[0]?.value ?? null;
    const firing = await store.alerts.list({ runId: r.id });
    runs.push({
      name: r.name,
      path: r.path,
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
  const mark = critical > 0 ? '🔴' : warning > 0 ? '🟡' : '🟢';
  return `${mark} ${parts.length === 0 ? 'nothing firing' : `firing: ${parts.join(', ')}`}`;
}
