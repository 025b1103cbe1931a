import { isCanonicalMetric } from '../ingest/metricNames.ts';
import { formatValue, jsonValue } from '../render/numbers.ts';
import { isoTime, resolveRun, type CommandContext, type Reply } from './reply.ts';

/** `run status [run]`: the latest step and epoch, and the latest value of each canonical metric. */
export function runStatus({ store }: CommandContext, args: { run?: string }): Reply {
  const run = resolveRun(store, args.run);
  const latest = store.points.latest(run.id);
  const canonical = latest.filter((l) => isCanonicalMetric(l.metric));
  const epoch = latest.find((l) => l.metric === 'epoch')?.value ?? null;
  const other = latest.length - canonical.length;
  return {
    title: `${run.name}: step ${run.last_step ?? '-'}` + (epoch === null ? '' : `, epoch ${formatValue(epoch)}`),
    fields: canonical
      .filter((l) => l.metric !== 'epoch')
      .map((l) => ({
        name: l.metric,
        value: formatValue(l.value) + (l.step === run.last_step ? '' : ` (step ${l.step})`),
      })),
    lines: [
      `${run.records} records, updated ${isoTime(run.updated_at) ?? 'never'}`,
      ...(other > 0 ? [`${other} more metric${other === 1 ? '' : 's'} logged: see --json or \`reward history --metric NAME\``] : []),
    ],
    data: {
      run: run.name,
      path: run.path,
      step: run.last_step,
      epoch: epoch === null ? null : jsonValue(epoch),
      records: run.records,
      updatedAt: isoTime(run.updated_at),
      metrics: Object.fromEntries(canonical.map((l) => [l.metric, jsonValue(l.value)])),
      other: Object.fromEntries(
        latest.filter((l) => !isCanonicalMetric(l.metric)).map((l) => [l.metric, jsonValue(l.value)]),
      ),
    },
  };
}
