/**
 * An alert's chart, rendered once: the same card goes to every target it is routed to, each delivering its
 * own outbox row of the same content, close together in time. The first delivery renders the PNG; the
 * others take it from here. Bounded to the last few charts. Drawn on the chart thread (chartThread.ts).
 */
import { createHash } from 'node:crypto';
import type { LineChartOptions } from './chart.ts';
import { chartThreadReady, renderOffThread } from './chartThread.ts';

const KEEP = 16;
const rendered = new Map<string, Promise<Buffer>>();

/** An alert card's chart; the chart thread draws the most `urgent` waiting first (an outbox row's urgency). */
export function alertChartPng(opts: LineChartOptions, urgency: number): Promise<Buffer> {
  const key = createHash('sha256').update(JSON.stringify(opts)).digest('hex');
  let png = rendered.get(key);
  if (!png) {
    png = renderOffThread(opts, urgency);
    png.catch(() => rendered.delete(key)); // a failed render is tried again next time
  }
  rendered.delete(key); // most recently used last
  rendered.set(key, png);
  while (rendered.size > KEEP) rendered.delete(rendered.keys().next().value!);
  return png;
}

/**
 * Has the chart thread draw an alert card's two usual shapes (a line with its rule's threshold, and one without)
 * behind any real chart: the first alert's chart then costs what any other does, instead of also paying the
 * thread's start, vega's load and the shapes' compile (~1 s on a busy machine). Call once a chat bot starts.
 */
export async function warmCardCharts(): Promise<void> {
  await chartThreadReady();
  const points = Array.from({ length: 200 }, (_, k) => ({ step: k + 1, value: Math.sin(k / 9) }));
  const card = { title: 'grad_norm · warm-up', metric: 'grad_norm', points, markStep: 150 };
  await Promise.all([renderOffThread({ ...card, threshold: 10 }, -1), renderOffThread(card, -1)]).catch(() => {});
}
