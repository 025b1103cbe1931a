/** `examples`: the generations kept for a step, the text that tells a collapse or a runaway apart. */
import { UserError } from '../lib/errors.ts';
import { formatValue } from '../lib/numbers.ts';
import { resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/** Characters of each generation shown: the start is what tells a collapse or a runaway apart. */
const SHOWN = 600;

/** `examples [run] [best|worst] [step]`: the kept generations of a step (or the nearest earlier one). */
export async function examples(
  { store, seesRun }: CommandContext,
  args: { run?: string; which?: 'best' | 'worst'; step?: number },
): Promise<Reply> {
  const run = await resolveRun(store, args.run, seesRun);
  const step = args.step ?? run.last_step ?? 0;
  const kept = await store.examples.atOrBefore(run.id, step);
  if (kept.length === 0) throw new UserError(`run '${run.name}' has no generations kept at or before step ${step}`);
  const half = Math.ceil(kept.length / 2);
  const best = kept.slice(0, half);
  const worst = kept.slice(half).reverse();
  const chosen = args.which === 'worst' ? worst : args.which === 'best' ? best : [...best, ...worst];
  const at = kept[0]!.step;
  return {
    title: `${args.which ?? 'best and worst'} generations of ${run.name} at step ${at}`,
    fields: [],
    lines: [],
    blocks: chosen.map((e) => ({
      title:
        `reward ${formatValue(e.reward)}` +
        (Object.keys(e.breakdown).length > 0
          ? ` (${Object.entries(e.breakdown)
              .map(([k, v]) => `${k} ${formatValue(v)}`)
              .join(', ')})`
          : ''),
      code: e.completion.length > SHOWN ? `${e.completion.slice(0, SHOWN)}…` : e.completion,
    })),
    data: {
      run: run.name,
      step: at,
      examples: chosen.map((e) => ({
        reward: e.reward,
        breakdown: e.breakdown,
        prompt: e.prompt,
        completion: e.completion,
      })),
    },
  };
}
