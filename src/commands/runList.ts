import { visibleName } from '../ingest/runLocator.ts';
import { formatValue, jsonValue } from '../render/numbers.ts';
import { ago, isoTime, type CommandContext, type Reply } from './reply.ts';

/** `runs` / `run list`: every run with its step range, last epoch, record count and last update; its
 * directory only to a reader on this machine (a channel is no place for server paths). */
export async function runList({ store, local, seesRun }: CommandContext, now = Date.now()): Promise<Reply> {
  const runs = [];
  for (const r of await store.listRuns()) {
    if (seesRun && !seesRun(r.name)) continue;
    const epoch = (await store.series(r.id, 'epoch', 1))[0]?.value ?? null;
    runs.push({
      name: r.name,
      path: r.path,
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
    lines: runs.map((r) =>
      [
        r.name,
        `steps ${r.firstStep ?? '-'}..${r.lastStep ?? '-'}`,
        `epoch ${r.lastEpoch === null ? '-' : formatValue(Number(r.lastEpoch))}`,
        `${r.records} records`,
        `updated ${ago(r.updatedMs, now)}`,
        ...(local ? [visibleName(r.path)] : []), // written out as the name is; --json has the path as it is
      ].join('  '),
    ),
    data: runs.map(({ updatedMs: _, ...r }) => r),
  };
}
