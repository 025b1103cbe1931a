import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { findCommand, parseText } from '../../src/commands/registry.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { SqliteAsyncStore } from '../../src/store/sqliteAsync.ts';
import { Store } from '../../src/store/store.ts';
import { ensureParent, learningLine, tempDir } from '../helpers.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

beforeEach(() => {
  root = tempDir('rlw-logs-');
  store = Store.open(join(root, 'rlwatch.db'));
  ingestor = new Ingestor(store, { maxLineBytes: 1 << 20, examplesPerStep: 2 });
  return () => store.close();
});

const runs = (): string => join(root, 'runs');
const verl = (step: number): string => `\x1b[36m(TaskRunner pid=7)\x1b[0m step:${step} - critic/score/mean:0.${step} - actor/entropy:0.5`;
const ask = (words: string) => {
  const found = findCommand(words.split(' '));
  if (!found) throw new Error(words);
  return found.spec.run({ store: new SqliteAsyncStore(store), user: 'ana', userName: 'ana' }, parseText(found.spec, found.rest, { runs: ['grpo'], metrics: [] }));
};

describe('run logs', () => {
  it("shows the tail of the console log that grew last, named relative to the run, without colours", async () => {
    const out = ensureParent(join(runs(), 'grpo', 'logs', 'verl_demo.log'));
    writeFileSync(out, `${Array.from({ length: 30 }, (_, i) => verl(i + 1)).join('\n')}\n`);
    const learning = ensureParent(join(runs(), 'grpo', 'learning.log'));
    writeFileSync(learning, `${learningLine(1)}\n`);
    await ingestor.ingest(out, runs());
    await ingestor.ingest(learning, runs());
    appendFileSync(out, 'Traceback (most recent call last):\nKilled\n');
    await ingestor.ingest(out, runs());

    const reply = await ask('run logs grpo lines=3');
    expect(reply.title).toBe('grpo: the last 3 lines of logs/verl_demo.log');
    expect(reply.blocks?.[0]?.code.split('\n')).toEqual([
      '(TaskRunner pid=7) step:30 - critic/score/mean:0.30 - actor/entropy:0.5',
      'Traceback (most recent call last):',
      'Killed',
    ]);
    expect(JSON.stringify(reply)).not.toContain(root); // no server path
    expect((await ask('run logs grpo')).blocks?.[0]?.code.split('\n')).toHaveLength(20);
  });

  it('names the other console logs and shows one of them on request', async () => {
    const out = ensureParent(join(runs(), 'grpo', 'job.out'));
    writeFileSync(out, `${verl(1)}\n${verl(2)}\n`);
    await ingestor.ingest(out, runs());
    await new Promise((r) => setTimeout(r, 5)); // grew_at is in ms: the .err grows strictly later
    const err = join(runs(), 'grpo', 'job.err');
    writeFileSync(err, 'UserWarning: something deprecated\n');
    await ingestor.ingest(err, runs());

    const latest = await ask('run logs grpo');
    expect(latest.title).toBe('grpo: the last 1 line of job.err');
    expect(latest.lines).toEqual(['Other console logs (file=NAME): job.out']);
    const stdout = await ask('run logs grpo file=job.out');
    expect(stdout.title).toBe('grpo: the last 2 lines of job.out');
    expect(stdout.blocks?.[0]?.code.split('\n')[1]).toBe(verl(2).replace(/\x1b\[\d+m/g, ''));
    await expect(ask('run logs grpo file=nohup.out')).rejects.toThrow('grpo has no console log named nohup.out; it has job.err, job.out');
  });

  it('says so when the run has no console log', async () => {
    const learning = ensureParent(join(runs(), 'grpo', 'learning.log'));
    writeFileSync(learning, `${learningLine(1)}\n`);
    await ingestor.ingest(learning, runs());
    await expect(ask('run logs grpo')).rejects.toThrow(/grpo has no console log/);
  });
});
