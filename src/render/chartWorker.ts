/**
 * The thread that draws alert cards' charts (chartThread.ts): a chart's options in, its PNG out. Drawing a chart is
 * JavaScript (vega's SVG) and a PNG encode; here neither holds up the bot's event loop. Charts are drawn one at a
 * time, the most urgent waiting first: drawn side by side on a busy machine, each would end as late as the last,
 * and a critical card's chart would wait for a storm of warnings' charts.
 */
import { parentPort, receiveMessageOnPort } from 'node:worker_threads';
import { renderLineChart, svgToPngHere, type LineChartOptions } from './chart.ts';
import { cutChartFonts } from './fonts.ts';

export interface ChartJob {
  id: number;
  opts: LineChartOptions;
  /** higher first (the outbox row's urgency, `ClaimedRow`; −1 for a warm-up); equal ones in the order they came */
  urgency: number;
}

/** `ready` once this thread has loaded what drawing needs; then a chart for each job. */
export type ChartDone = { ready: true } | { id: number; png: Uint8Array } | { id: number; error: string };

const port = parentPort!;
const queue: ChartJob[] = [];
let drawing = false;

// the cut fonts make every chart cheaper: worth the first start's ~0.2 s, during which charts are drawn in the bot
await cutChartFonts();
port.postMessage({ ready: true } satisfies ChartDone);
port.on('message', (job: ChartJob) => {
  enqueue(job);
  if (!drawing) void drawNext();
});

/** After the last job of the same urgency or more: equal ones keep their order. */
function enqueue(job: ChartJob): void {
  const at = queue.findIndex((j) => j.urgency < job.urgency);
  queue.splice(at === -1 ? queue.length : at, 0, job);
}

async function drawNext(): Promise<void> {
  drawing = true;
  // the jobs posted while the last one was drawn are taken before choosing: their events would come after it
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) enqueue(m.message as ChartJob);
  const job = queue.shift();
  if (!job) {
    drawing = false;
    return;
  }
  try {
    const rendered = await renderLineChart(job.opts, svgToPngHere);
    const png = new Uint8Array(rendered); // a copy of its own to hand over (the addon's buffer may not move)
    port.postMessage({ id: job.id, png } satisfies ChartDone, [png.buffer]);
  } catch (err) {
    port.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) } satisfies ChartDone);
  }
  // the next job in a turn of its own: resvg's native memory of a chart (its font data and image, ~1.7 MB) is freed by
  // finalizers that run from the event loop, after V8 collects their handles; drawn back to back, a storm's queue of
  // charts held every one of them until it emptied (GBs)
  setImmediate(() => void drawNext());
}
