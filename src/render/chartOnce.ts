/**
 * An alert's chart, rendered once: the same card goes to every target it is routed to, each delivering its
 * own outbox row of the same content, close together in time. The first delivery renders the PNG; the
 * others take it from here. Bounded to the last few charts. Drawn on the chart thread (chartThread.ts).
 */
import { createHash } from 'node:crypto';
import type { LineChartOptions } from './chart.ts';
import { renderOffThread } from './chartThread.ts';

const KEEP = 16;
const rendered = new Map<string, Promise<Buffer>>();

export function alertChartPng(opts: LineChartOptions): Promise<Buffer> {
  const key = createHash('sha256').update(JSON.stringify(opts)).digest('hex');
  let png = rendered.get(key);
  if (!png) {
    png = renderOffThread(opts);
    png.catch(() => rendered.delete(key)); // a failed render is tried again next time
  }
  rendered.delete(key); // most recently used last
  rendered.set(key, png);
  while (rendered.size > KEEP) rendered.delete(rendered.keys().next().value!);
  return png;
}
