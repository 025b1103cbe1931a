import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { files, runFiles, unreadSummary } from '../../src/commands/files.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { openStore } from '../../src/store/open.ts';
import { PgLiveStore } from '../../src/store/postgres/pgLiveStore.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { ensureParent, learningLine, tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

let root: string;
let store: Store;
let db: SqliteAsyncStore;
let ingestor: Ingestor;

beforeEach(() => {
  root = tempDir();
  store = Store.open(join(root, 'test.db'));
  db = new SqliteAsyncStore(store);
  ingestor = new Ingestor(store, { maxLineBytes: 64 * 1024, examplesPerStep: 2 });
  return () => store.close();
});

const runs = (): string => join(root, 'runs');
const file = (rel: string, text: string): string => {
  const path = ensureParent(join(runs(), rel));
  writeFileSync(path, text);
  return path;
};
const prose = (bytes: number): string =>
  'Loading the tokenizer and the model weights from the cache\n'.repeat(Math.ceil(bytes / 59));

describe('files', () => {
  it('lists each file with its format, offset and records, and the files no format claims', async () => {
    const log = file('grpo/learning.log', `${learningLine(1)}\n${learningLine(2)}\nnot a metric line\n`);
    const notes = file('grpo/notes.txt', prose(1000));
    const big = file('other/logs/train.txt', prose(70 * 1024));
    for (const p of [log, notes, big]) await ingestor.ingest(p, runs());

    const report = await runFiles(db);
    expect(report).toEqual([
      {
        run: 'grpo',
        files: [expect.objectContaining({ path: 'learning.log', format: 'learningLog', records: 2 })],
        unread: [{ path: 'notes.txt', reason: 'no known format in what is there yet', size: prose(1000).length }],
      },
      // no run row for a directory whose only log is unrecognised: still named
      {
        run: 'other',
        files: [],
        unread: [{ path: 'logs/train.txt', reason: 'no format recognises it', size: prose(70 * 1024).length }],
      },
    ]);
    const grpo = report[0]!.files[0]!;
    expect(grpo).toMatchObject({
      offset: Buffer.byteLength(`${learningLine(1)}\n${learningLine(2)}\nnot a metric line\n`),
      skipped: 1,
    });
    expect(grpo.skips).toHaveLength(1);

    const reply = await files({ store: db }, {});
    expect(reply.title).toBe('1 file read in 2 runs, 2 not read');
    // paths relative to the run only: a chat reply never shows where the server keeps its files
    expect(JSON.stringify(reply)).not.toContain(root);
    expect((await files({ store: db }, { run: 'other' })).data).toEqual([report[1]]);
    await expect(files({ store: db }, { run: 'nope' })).rejects.toThrow(/unknown run 'nope'/);
  });

  it('counts the generations a file gave as its records, those kept and those pruned alike', async () => {
    // three generations per step, two steps: examplesPerStep 2 keeps the best and the worst two of each step
    const gens = [1, 2].flatMap((step) =>
      [0.1, 0.5, 0.9].map((reward, k) =>
        JSON.stringify({ step, problem_id: `p${k}`, reward, completion: `answer ${step}.${k}` }),
      ),
    );
    const path = file('grpo/reward_logs/completions.jsonl', `${gens.join('\n')}\n`);
    await ingestor.ingest(path, runs());
    expect((await db.examples.between((await db.runs.byName('grpo'))!.id, 0, 10)).length).toBeGreaterThan(0);
    const reply = await files({ store: db }, { run: 'grpo' });
    expect(reply.blocks?.[0]?.code).toMatch(
      new RegExp(`^reward_logs/completions\\.jsonl  completions  .*  ${gens.length} records$`),
    );
    expect(reply.lines).toEqual([`grpo: 1 file, ${gens.length} records, 0 lines skipped, 0 not read`]);
  });

  it('forgets a file once a format recognises it', async () => {
    // captured stdout (*.log, *.out, *.err) is claimed by its name; a *.txt needs a metric line first
    const path = file('grpo/train.txt', 'Loading model\n');
    await ingestor.ingest(path, runs());
    expect(store.unread.list().map((u) => u.rel_path)).toEqual(['train.txt']);
    appendFileSync(path, "{'loss': 0.5, 'reward': 0.25, 'epoch': 0.1}\n");
    await ingestor.ingest(path, runs());
    expect(store.unread.list()).toEqual([]);
    expect((await runFiles(db))[0]!.files.map((f) => f.format)).toEqual(['console']);
  });

  it('sums up, for backfill and start, what under the roots was not read', async () => {
    const log = file('grpo/learning.log', `${learningLine(1)}\nnot a metric line\n`);
    const notes = file('grpo/notes.txt', prose(100));
    for (const p of [log, notes]) await ingestor.ingest(p, runs());
    expect(await unreadSummary(db, [runs()])).toEqual([
      'not read: grpo/notes.txt (no known format in what is there yet)',
      expect.stringMatching(
        /^unparsed lines: grpo\/learning\.log: 1 line skipped \(1 × .+, e\.g\. "not a metric line"\)$/,
      ),
    ]);
    expect(await unreadSummary(db, [join(root, 'elsewhere')])).toEqual([]);
    // an empty file (a run just starting) is listed by `files` but is no warning
    await ingestor.ingest(file('grpo/new.jsonl', ''), runs());
    expect((await runFiles(db, 'grpo'))[0]!.unread.map((u) => u.reason)).toContain('empty so far');
    expect((await unreadSummary(db, [runs()])).join('\n')).not.toContain('new.jsonl');
    expect(await unreadSummary(db, [runs()], { limit: 1 })).toEqual([
      'not read: grpo/notes.txt (no known format in what is there yet)',
      '... and 1 more: rlwatch files lists them all',
    ]);
  });
});

describe('unreadSummary on PostgreSQL', () => {
  it("tells a watcher its own host's files only: another host's run may sit at the same path", async () => {
    const url = await freshPgDatabase();
    const [hostA, hostB] = [
      await PgLiveStore.open(url, { scope: 'gpu-a' }),
      await PgLiveStore.open(url, { scope: 'gpu-b' }),
    ];
    const shared = await openStore(url);
    try {
      const readAs = (live: PgLiveStore, prefix: string) =>
        new Ingestor(live, { maxLineBytes: 64 * 1024, examplesPerStep: 2, runPrefix: prefix });
      // both hosts train a run at the same path; only gpu-a's has a notes file and a line that is no metric
      await readAs(hostA, 'gpu-a').ingest(file('grpo/learning.log', `${learningLine(1)}\nnot a metric line\n`), runs());
      await readAs(hostA, 'gpu-a').ingest(file('grpo/notes.txt', prose(100)), runs());
      await readAs(hostB, 'gpu-b').ingest(file('grpo/train.log', `${learningLine(1)}\n`), runs());
      const gpuA = [
        'not read: gpu-a/grpo/notes.txt (no known format in what is there yet)',
        expect.stringMatching(/^unparsed lines: gpu-a\/grpo\/learning\.log: 1 line skipped/),
      ];
      expect(await unreadSummary(shared, [runs()], { scope: 'gpu-a' })).toEqual(gpuA);
      expect(await unreadSummary(shared, [runs()], { scope: 'gpu-b' })).toEqual([]);
      // the CLI and the bot speak for every host
      expect(await unreadSummary(shared, [runs()])).toEqual(gpuA);
    } finally {
      await Promise.all([hostA.close(), hostB.close(), shared.close()]);
    }
  });
});
