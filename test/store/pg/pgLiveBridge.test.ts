/**
 * The synchronous bridge to a worker thread (src/store/pg/syncBridge.ts), alone: answers in order, errors with their
 * code, and a worker that exits is said so instead of being waited for.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { syncChannel, type CrossedError } from '../../../src/store/pg/syncBridge.ts';

const workers: Worker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.terminate();
});

/** A worker serving `echo` (its arguments back; `later`: after a turn of its event loop), `fail` and `exit`. */
async function echoWorker() {
  const { bridge, port, state } = syncChannel();
  const bridgeModule = JSON.stringify(new URL('../../../src/store/pg/syncBridge.ts', import.meta.url).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const code = `
    const { workerData, parentPort } = await import('node:worker_threads');
    (await import(${tsx})).register();
    const { serveSync } = await import(${bridgeModule});
    serveSync(workerData.port, workerData.state, async (req) => {
      if (req.method === 'later') await new Promise((next) => setImmediate(next));
      if (req.method === 'fail') throw Object.assign(new Error('no such table'), { code: '42P01' });
      if (req.method === 'exit') process.exit(3);
      return req.args;
    });
    parentPort.postMessage('ready');`;
  const worker = new Worker(`import(${JSON.stringify('data:text/javascript,' + encodeURIComponent(code))})`, {
    eval: true,
    workerData: { port, state },
    transferList: [port],
  });
  workers.push(worker);
  await new Promise((resolve) => worker.once('message', resolve));
  const fail = (e: CrossedError): Error => Object.assign(new Error(e.message), { code: e.code });
  return { call: (method: string, ...args: unknown[]) => bridge.call({ method, args, now: 0 }, fail) };
}

describe('the synchronous bridge', () => {
  it('answers each of many calls with its own answer, in order', async () => {
    const { call } = await echoWorker();
    // answered at once, an answer often lands before the caller sleeps: its wake-up then comes during the next call
    for (let i = 0; i < 10_000; i++) expect(call(i % 2 ? 'echo' : 'later', i, { i })).toEqual([i, { i }]);
  });

  it('throws what the worker threw, with its code; a worker that exits is told, not waited for', async () => {
    const { call } = await echoWorker();
    expect(() => call('fail')).toThrow(expect.objectContaining({ message: 'no such table', code: '42P01' }));
    expect(call('echo', 'still here')).toEqual(['still here']);
    expect(() => call('exit')).toThrow(/stopped during exit/);
    expect(() => call('echo', 1)).toThrow(/has stopped/);
  });
});
