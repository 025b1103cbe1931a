/**
 * The synchronous bridge to a worker thread (src/store/postgres/syncBridge.ts), alone: answers in order, errors with their
 * code, and a worker that exits is said so instead of being waited for; calls posted without waiting run in order
 * before the next waited one, and the first that fails is handed to the calls that wait until a reset.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { syncChannel, type CrossedError } from '../../../src/store/postgres/syncBridge.ts';

const workers: Worker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.terminate();
});

/** A worker serving `echo` (its arguments back; `later`: after a turn of its event loop), `fail` and `exit`; `push`
 * (after a turn) appends its argument to a list that `list` returns, `reset` empties it and clears a kept failure;
 * `overlapping` (say it is sent, then append after a turn, with how many were in flight) and `overlappingFail` overlap
 * (`serveSync`'s `overlaps`). */
async function echoWorker() {
  const { bridge, port, state } = syncChannel();
  const bridgeModule = JSON.stringify(new URL('../../../src/store/postgres/syncBridge.ts', import.meta.url).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const code = `
    const { workerData, parentPort } = await import('node:worker_threads');
    (await import(${tsx})).register();
    const { serveSync } = await import(${bridgeModule});
    const list = [];
    let unanswered = 0;
    serveSync(workerData.port, workerData.state, async (req, sent) => {
      if (req.method.startsWith('overlapping')) {
        // as a statement: sent at once, answered a turn later; what it records is how many were in flight
        unanswered++;
        sent();
        await new Promise((next) => setImmediate(next));
        unanswered--;
        if (req.method === 'overlappingFail') {
          throw Object.assign(new Error(req.args[0] ?? 'deadlock detected'), { code: req.args[1] ?? '40P01' });
        }
        return void list.push([req.args[0], unanswered + 1]);
      }
      if (req.method === 'later' || req.method === 'push') await new Promise((next) => setImmediate(next));
      if (req.method === 'fail') throw Object.assign(new Error('no such table'), { code: '42P01' });
      if (req.method === 'exit') process.exit(3);
      if (req.method === 'push') return void list.push(req.args[0]);
      if (req.method === 'list') return list;
      if (req.method === 'reset') return void list.splice(0);
      return req.args;
    }, new Set(['reset']), (req) => req.method.startsWith('overlapping'));
    parentPort.postMessage('ready');`;
  const worker = new Worker(`import(${JSON.stringify('data:text/javascript,' + encodeURIComponent(code))})`, {
    eval: true,
    workerData: { port, state },
    transferList: [port],
  });
  workers.push(worker);
  await new Promise((resolve) => worker.once('message', resolve));
  const fail = (e: CrossedError): Error => Object.assign(new Error(e.message), { code: e.code });
  return {
    call: (method: string, ...args: unknown[]) => bridge.call({ method, args, now: 0 }, fail),
    post: (method: string, ...args: unknown[]) => bridge.post({ method, args, now: 0 }, fail),
    sent: bridge.sent,
  };
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

  it('runs posted calls in the order sent, one after the other, before the next waited call', async () => {
    const { call, post, sent } = await echoWorker();
    for (let i = 0; i < 1000; i++) post('push', i);
    expect(call('list')).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(sent).toEqual({ waited: 1, posted: 1000 });
  });

  it('keeps the first failure of a posted call: later posts are dropped, and every waited call throws it until a reset', async () => {
    const { call, post } = await echoWorker();
    post('push', 1);
    post('fail');
    post('push', 2); // after the failure: never run
    expect(() => call('echo', 'x')).toThrow(expect.objectContaining({ message: 'no such table', code: '42P01' }));
    expect(() => call('list')).toThrow('no such table'); // still kept: a COMMIT here would throw it too
    post('push', 3);
    expect(call('reset')).toBeUndefined(); // a reset runs despite the failure, and clears it
    post('push', 4);
    expect(call('list')).toEqual([4]);
    // a waited call that fails is thrown once, as before: nothing is kept
    expect(() => call('fail')).toThrow('no such table');
    expect(call('echo', 'y')).toEqual(['y']);
  });

  it('starts each posted call that overlaps once the one before is sent, not answered; the next waited call after all', async () => {
    const { call, post } = await echoWorker();
    for (let i = 0; i < 100; i++) post('overlapping', i);
    post('push', 'after'); // one that does not overlap starts once every one before it is answered
    const list = call('list') as Array<[unknown, number] | string>;
    const sent = [...Array.from({ length: 100 }, (_, i) => i), 'after'];
    expect(list.map((e) => (Array.isArray(e) ? e[0] : e))).toEqual(sent);
    // one at a time, each would have been alone in flight
    const inFlight = list.flatMap((e) => (Array.isArray(e) ? [e[1]] : []));
    expect(Math.max(...inFlight)).toBeGreaterThan(1);
  });

  it('keeps the first failure among overlapping posted calls for the waited call after them, until a reset', async () => {
    const { call, post } = await echoWorker();
    post('overlapping', 1);
    post('overlappingFail');
    // a statement sent behind a failed one fails too: not the failure kept
    post('overlappingFail', 'current transaction is aborted', '25P02');
    post('push', 2); // after the failure is known: dropped
    expect(() => call('echo', 'x')).toThrow(expect.objectContaining({ message: 'deadlock detected', code: '40P01' }));
    expect(call('reset')).toBeUndefined();
    post('overlapping', 3);
    expect(call('list')).toEqual([[3, 1]]);
  });
});
