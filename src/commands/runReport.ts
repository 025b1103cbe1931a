/** `run report`: a run's summary as the reply, with the full Markdown report attached. */
import { UserError } from '../lib/errors.ts';
import { ConfigSchema } from '../config/schema.ts';
import type { RunReport } from '../report/build.ts';
import { expected, LEVEL_LABEL, MARK, reportMarkdown, summaryLines } from '../report/markdown.ts';
import { reportOfRun } from '../report/ofRun.ts';
import { formatValue } from '../lib/numbers.ts';
import type { StoreTx } from '../store/contract.ts';
import { resolveRun, type CommandContext } from './context.ts';
import type { Reply } from '../render/reply.ts';

/** `--since 120` is a step, `--since 0.5` an epoch (a number with a decimal point). */
export function parseSince(text: string | undefined): { step: number } | { epoch: number } | undefined {
  if (text === undefined || text === '') return undefined;
  if (/^\d+$/.test(text)) return { step: Number(text) };
  if (/^\d*\.\d+$/.test(text)) return { epoch: Number(text) };
  throw new UserError(`--since takes a step (120) or an epoch with a decimal point (0.5), not '${text}'`);
}

/** The report of the named run (with no name, the only one), as `run report` builds it. */
export async function reportOf(
  ctx: Pick<CommandContext, 'config' | 'seesRun'> & { store: StoreTx },
  args: { run?: string; since?: string },
  now = Date.now(),
): Promise<RunReport> {
  const run = await resolveRun(ctx.store, args.run, ctx.seesRun);
  const config = ctx.config ?? ConfigSchema.parse({});
  return reportOfRun(ctx.store, run, config, { since: parseSince(args.since) }, now);
}

/** `run report [run] [since]`: the summary as the reply, the full Markdown report as its attachment. */
export async function runReport(
  ctx: CommandContext,
  args: { run?: string; since?: string },
  now?: number,
): Promise<Reply> {
  const report = await reportOf(ctx, args, now);
  return {
    title: `${report.run}: ${LEVEL_LABEL[report.status.level]}`,
    fields: report.ranges.map((r) => ({
      name: r.metric,
      value: `${MARK[r.mark]} ${show(r.min)} - ${show(r.max)} (expected ${expected(r)})`,
    })),
    lines: summaryLines(report),
    data: report,
    attachment: { name: `${safeName(report.run)}-report.md`, content: reportMarkdown(report) },
  };
}

const show = (v: number | null): string => (v === null ? '-' : formatValue(v));
const safeName = (s: string): string => s.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'run';
