import { appendFileSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { findCommand, parseText } from '../../src/interact/registry.ts';
import { loadConfig } from '../../src/app/loadConfig.ts';
import type { Ingestor } from '../../src/ingest/ingestor.ts';
import { silentLog } from '../../src/lib/log.ts';
import { interact } from '../../src/interact/interaction.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent, learningLine } from '../helpers.ts';

let root: string;
let store: Store;
let ingestor: Ingestor;

beforeEach(() => {
  ({ dir: root, store, ingestor } = pipeline({ ingest: { maxLineBytes: 1 << 20, examplesPerStep: 2 } }));
  return () => store.close();
});

const runs = (): string => join(root, 'runs');
const verl = (step: number): string =>
  `\x1b[36m(TaskRunner pid=7)\x1b[0m step:${step} - critic/score/mean:0.${step} - actor/entropy:0.5`;
const ask = (words: string) => {
  const found = findCommand(words.split(' '));
  if (!found) throw new Error(words);
  return found.spec.run(
    { store: new SqliteAsyncStore(store), user: 'ana', userName: 'ana' },
    parseText(found.spec, found.rest, { runs: ['grpo'], metrics: [] }),
  );
};

describe('run logs', () => {
  it('shows the tail of the console log that grew last, named relative to the run, without colours', async () => {
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
    await expect(ask('run logs grpo file=nohup.out')).rejects.toThrow(
      'grpo has no console log named nohup.out; it has job.err, job.out',
    );
  });

  it("serves the trainer's learning.log, a console log whose lines are also metrics", async () => {
    const learning = ensureParent(join(runs(), 'grpo', 'learning.log'));
    writeFileSync(learning, `${learningLine(1)}\nWARNING: reward function slow\n${learningLine(2)}\n`);
    await ingestor.ingest(learning, runs());
    const reply = await ask('run logs grpo');
    expect(reply.title).toBe('grpo: the last 3 lines of learning.log');
    // the ± of the learning.log format is kept: only control characters are replaced
    expect(reply.blocks?.[0]?.code.split('\n')).toEqual([
      learningLine(1),
      'WARNING: reward function slow',
      learningLine(2),
    ]);
  });

  it('says so when the run has no console log', async () => {
    const metrics = ensureParent(join(runs(), 'grpo', 'batch_metrics.jsonl'));
    writeFileSync(metrics, '{"pass_at_1": 0.25, "pass_at_all": 0.5}\n');
    await ingestor.ingest(metrics, runs());
    await expect(ask('run logs grpo')).rejects.toThrow(/grpo has no console log/);
  });

  describe('a symlink in the run folder', () => {
    const SECRET = 'root:$6$pl4nted-s3cret-hash:19000:0:99999:7:::';
    /** grpo's job.out, read by the ingest as its console log, then swapped for a link to `target` */
    async function swapped(target: string): Promise<void> {
      const out = ensureParent(join(runs(), 'grpo', 'job.out'));
      writeFileSync(out, `${verl(1)}\n`);
      await ingestor.ingest(out, runs());
      renameSync(out, join(runs(), 'grpo', 'job.out.1'));
      symlinkSync(target, out);
    }
    const secretFile = (): string => {
      const path = join(root, 'etc', 'shadow');
      writeFileSync(ensureParent(path), `${SECRET}\n`);
      return path;
    };
    /** `run logs` as a chat front end asks it (src/interact/interaction.ts), with `config` loaded from a file */
    const chat = async (words: string, config?: string) =>
      interact(
        { words: words.split(' ') },
        {
          store: new SqliteAsyncStore(store),
          config: config === undefined ? undefined : (await loadConfig(config)).config,
          log: silentLog,
          user: '<@1>',
          userName: 'ana',
          mayWrite: () => true,
          rightsHint: '',
        },
      );

    it('leading out of the roots: a short refusal, in the CLI and in chat, never what it leads to', async () => {
      await swapped(secretFile());
      const refusal = "grpo's job.out is not read: symlink leads out of the watched roots";
      await expect(ask('run logs grpo')).rejects.toThrow(refusal);
      const config = join(root, 'rlwatch.yaml');
      writeFileSync(config, `watch:\n  roots: [${runs()}]\n`);
      const answer = await chat('run logs grpo', config);
      expect(answer).toEqual({ ok: false, message: refusal });
      expect(JSON.stringify(answer)).not.toContain('pl4nted');
    });

    it('planted beside the logs: not a console log of the run, so not served', async () => {
      writeFileSync(ensureParent(join(runs(), 'grpo', 'job.out')), `${verl(1)}\n`);
      symlinkSync(secretFile(), join(runs(), 'grpo', 'shadow.log'));
      for (const name of ['job.out', 'shadow.log']) await ingestor.ingest(join(runs(), 'grpo', name), runs());
      await expect(ask('run logs grpo file=shadow.log')).rejects.toThrow(
        'grpo has no console log named shadow.log; it has job.out',
      );
    });

    it('leading to another run inside the roots: served when the config names them, else refused', async () => {
      const other = ensureParent(join(runs(), 'other', 'job.out'));
      writeFileSync(other, `${verl(7)}\n`);
      await swapped(other);
      const config = join(root, 'rlwatch.yaml');
      writeFileSync(config, `watch:\n  roots: [${runs()}]\n`);
      const answer = await chat('run logs grpo', config);
      expect(answer.ok && answer.reply.blocks?.[0]?.code).toBe(verl(7).replace(/\x1b\[\d+m/g, ''));
      // with no roots known the run's own folder is the root, and the other run's log lies out of it
      expect(await chat('run logs grpo')).toEqual({
        ok: false,
        message: "grpo's job.out is not read: symlink leads out of the watched roots",
      });
    });
  });

  it('names files with invisible characters as it names runs, and finds them by that name', async () => {
    const name = 'job\u202etuo.err'; // shows as "job.out" with the right-to-left override
    mkdirSync(join(runs(), 'grpo'), { recursive: true });
    writeFileSync(join(runs(), 'grpo', name), `${verl(3)}\n`);
    await ingestor.ingest(join(runs(), 'grpo', name), runs());
    const reply = await ask('run logs grpo file=job\\u{202e}tuo.err');
    expect(reply.title).toBe('grpo: the last 1 line of job\\u{202e}tuo.err');
    expect(JSON.stringify(reply)).not.toContain('\u202e');
  });
});
