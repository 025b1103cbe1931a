/** `run status`: a run's latest step, epoch and metric values, and its restarts. */
import { isCanonicalMetric } from '../ingest/metricNames.ts';
import { formatValue, jsonValue } from '../lib/numbers.ts';
import type { AttemptRow, LatestValue } from '../store/contract.ts';
import { ago, isoTime, resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/** `attempt 2 (now): resumed at step 40 12 min ago, ...` per attempt when there are several: a job that
 * restarted. */
function restarts(attempts: readonly AttemptRow[], now: number): string[] {
  if (attempts.length < 2) return [];
  return attempts.map((a, i) => {
    const from = a.attempt === 1 ? `from step ${a.resumed_step}` : `resumed at step ${a.resumed_step}`;
    const current = i === attempts.length - 1 ? ' (now)' : '';
    return `attempt ${a.attempt}${current}: ${from} ${ago(a.at, now)}, reached step ${a.last_step}`;
  });
}

/** `run status [run]`: the latest step and epoch, and the latest value of each canonical metric; times in the
 * reader's terms (`updated 12 min ago`), as ISO text in `data`. */
export async function runStatus(
  { store, seesRun, local }: CommandContext,
  args: { run?: string },
  now = Date.now(),
): Promise<Reply> {
  const run = await resolveRun(store, args.run, seesRun);
  const head = await store.attempts.replaying(run.id, run.last_step);
  // a restarted job logging its steps again: its latest values, not those the earlier attempt logged past it
  const latest: LatestValue[] = [];
  for (const l of await store.points.latest(run.id)) {
    if (head === null || l.step <= head) latest.push(l);
    else latest.push(...(await store.points.upTo(run.id, l.metric, head, 1)).map((p) => ({ metric: l.metric, ...p })));
  }
  const canonical = latest.filter((l) => isCanonicalMetric(l.metric));
  const epoch = latest.find((l) => l.metric === 'epoch')?.value ?? null;
  const other = latest.length - canonical.length;
  const attempts = await store.attempts.list(run.id);
  const step = head ?? run.last_step;
  return {
    title: `${run.name}: step ${step ?? '-'}` + (epoch === null ? '' : `, epoch ${formatValue(epoch)}`),
    fields: canonical
      .filter((l) => l.metric !== 'epoch')
      .map((l) => ({
        name: l.metric,
        value: formatValue(l.value) + (l.step === run.last_step ? '' : ` (step ${l.step})`),
      })),
    lines: [
      `${run.records} records, updated ${ago(run.updated_at, now)}`,
      ...restarts(attempts, now),
      // --json and --flags are the CLI's: a chat user is pointed at what chat takes
      ...(other > 0
        ? [
            `${other} more metric${other === 1 ? '' : 's'} logged: ${local ? 'see --json or `reward history --metric NAME`' : 'see one with `reward history metric=NAME`'}`,
          ]
        : []),
    ],
    data: {
      run: run.name,
      path: run.path,
      step,
      attempts: attempts.map((a) => ({
        attempt: a.attempt,
        resumedStep: a.resumed_step,
        at: isoTime(a.at),
        lastStep: a.last_step,
      })),
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
