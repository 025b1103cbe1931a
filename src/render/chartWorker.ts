/**
 * The thread that draws alert cards' charts (chartThread.ts): a chart's options in, its PNG out. Drawing a chart is
 * JavaScript (vega's SVG) and a synchronous PNG encode; here neither holds up the bot's event loop.
 */
import { parentPort } from 'node:worker_threads';
import { renderLineChart, type LineChartOptions } from './chart.ts';

export interface ChartJob {
  id: number;
  opts: LineChartOptions;
}

/** `ready` once this thread has loaded what drawing needs; then a chart for each job. */
export type ChartDone = { ready: true } | { id: number; png: Uint8Array } | { id: number; error: string };

const port = parentPort!;
port.postMessage({ ready: true } satisfies ChartDone);
port.on('message', ({ id, opts }: ChartJob) => {
  renderLineChart(opts).then(
    (rendered) => {
      const png = new Uint8Array(rendered); // a copy of its own to hand over (the addon's buffer may not move)
      port.postMessage({ id, png } satisfies ChartDone, [png.buffer]);
    },
    (err: unknown) =>
      port.postMessage({ id, error: err instanceof Error ? err.message : String(err) } satisfies ChartDone),
  );
});
