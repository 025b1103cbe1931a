/** The report of one run with the config's window, ranges and rules: what `run report` and scheduled reports build. */
import { UserError } from '../lib/errors.ts';
import { formatValue } from '../lib/numbers.ts';
import type { Config } from '../config/schema.ts';
import { ruleBookFor } from '../engine/presets/index.ts';
import type { RunRow, StoreTx } from '../store/contract.ts';
import { buildReport, type ReportOptions, type RunReport } from './build.ts';
import { rangesFor } from './ranges.ts';

/** The report of one run with the config's window, ranges and rules: what `run report` answers and the scheduled
 * reports post. A window with no records has no report. */
export async function reportOfRun(
  store: StoreTx,
  run: RunRow,
  config: Config,
  span: Pick<ReportOptions, 'since' | 'until'>,
  now: number,
): Promise<RunReport> {
  const report = await buildReport(
    store,
    run,
    {
      since: span.since,
      window: config.report.window,
      ranges: rangesFor(config),
      rules: ruleBookFor(config).forRun(run.name),
      now,
      until: span.until,
    },
    formatValue,
  );
  if (report.window.records === 0) {
    const from = span.since && ('step' in span.since ? span.since.step : span.since.epoch);
    throw new UserError(`${run.name} has no records ${from !== undefined ? `from ${from} on` : 'yet'}`);
  }
  return report;
}
