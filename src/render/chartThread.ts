/**
 * Alert cards' charts drawn on a worker thread of their own (chartWorker.ts), started at the first chart. Drawing one
 * costs the thread that draws it ~25 ms (vega's SVG, resvg's synchronous PNG encode); on the bot's event loop that
 * time held up its claims, posts and slash commands. Until the thread has loaded (~0.2 s), charts are drawn here, so
 * that the first cards do not wait for it. The thread never keeps the process alive while idle; if it dies, the charts
 * it was drawing fail (their cards go out again with the outbox's retry) and the next chart starts another.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../lib/workerThread.ts';
import { renderLineChart, type LineChartOptions } from './chart.ts';
import type { ChartDone, ChartJob } from './chartWorker.ts';

interface Waiting {
  resolve: (png: Buffer) => void;
  reject: (err: Error) => void;
}

let worker: Worker | null = null;
let ready = false;
/** a thread that ended before it was ready would end so again (its entry missing, say): charts stay here */
let cannotStart = false;
const whenReady: Array<() => void> = [];
const waiting = new Map<number, Waiting>();
let lastId = 0;

/** `renderLineChart(opts)`, drawn on the chart thread; the most `urgent` waiting first. */
export function renderOffThread(opts: LineChartOptions, urgency = 0): Promise<Buffer> {
  if (cannotStart) return renderLineChart(opts);
  const thread = worker ?? start();
  if (!ready) return renderLineChart(opts);
  const id = ++lastId;
  return new Promise<Buffer>((resolve, reject) => {
    // options that cannot be copied throw here: a rejection
    thread.postMessage({ id, opts, urgency } satisfies ChartJob);
    if (waiting.size === 0) thread.ref(); // a chart on its way holds the process open, as a render in Node did
    waiting.set(id, { resolve, reject });
  });
}

/** Resolves once charts are drawn on the thread (started if it is not), or here for good (it could not start). */
export function chartThreadReady(): Promise<void> {
  if (cannotStart || ready) return Promise.resolve();
  if (!worker) start();
  return new Promise((done) => whenReady.push(done));
}

function start(): Worker {
  const thread = spawnWorker(import.meta.url, 'chartWorker', {});
  thread.unref();
  thread.on('message', (m: ChartDone) => {
    if ('ready' in m) {
      ready = true;
      for (const done of whenReady.splice(0)) done();
      return;
    }
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (waiting.size === 0) thread.unref();
    if ('png' in m) w.resolve(Buffer.from(m.png.buffer, m.png.byteOffset, m.png.byteLength));
    else w.reject(new Error(m.error));
  });
  thread.on('error', (err) => ended(thread, err));
  thread.on('exit', (code) => ended(thread, new Error(`the chart thread exited (code ${code})`)));
  worker = thread;
  ready = false;
  return thread;
}

function ended(thread: Worker, err: Error): void {
  if (worker !== thread) return; // an error then its exit: said once
  worker = null;
  if (!ready) cannotStart = true;
  ready = false;
  for (const done of whenReady.splice(0)) done();
  for (const w of waiting.values()) w.reject(err);
  waiting.clear();
}
