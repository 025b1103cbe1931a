import { appendFileSync, chmodSync, mkdirSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Ingestor, IngestEvent } from '../../src/ingest/ingestor.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent, learningLine } from '../helpers.ts';

let root: string;
let store: Store;
let events: IngestEvent[];
let ingestor: Ingestor;

beforeEach(() => {
  ({ dir: root, store, ingestor, events } = pipeline({ ingest: { maxLineBytes: 64 * 1024, examplesPerStep: 2 } }));
  return () => store.close();
});

const log = (run = 'run1'): string => ensureParent(join(root, 'runs', run, 'learning.log'));
const ingest = (path: string) => ingestor.ingest(path, join(root, 'runs'));
const rewards = (run = 'run1') => {
  const r = store.runs.byName(run);
  return r ? store.points.series(r.id, 'reward').map((p) => [p.step, p.value]) : [];
};

describe('Ingestor on learning.log', () => {
  it('stores each line as a numbered step with canonical metric names', async () => {
    const path = log();
    writeFileSync(path, `${learningLine(1)}\n${learningLine(2)}\n`);
    const out = await ingest(path);
    expect(out).toMatchObject({ run: 'run1', format: 'learningLog', lines: 2, records: 2 });
    expect(rewards()).toEqual([
      [1, 0.101],
      [2, 0.102],
    ]);
    const run = store.runs.byName('run1');
    expect(run).toMatchObject({ first_step: 1, last_step: 2, records: 2 });
    const names = store.points.metricsOf(run!.id);
    expect(names).toEqual(
      expect.arrayContaining(['reward', 'reward_std', 'grad_norm', 'lr', 'entropy', 'frac_zero_std', 'epoch']),
    );
  });

  it('reads a partial last line only once it is complete', async () => {
    const path = log();
    const line = learningLine(1);
    writeFileSync(path, line.slice(0, 30));
    await ingest(path);
    expect(rewards()).toEqual([]);
    appendFileSync(path, `${line.slice(30)}\n`);
    await ingest(path);
    expect(rewards()).toEqual([[1, 0.101]]);
  });

  it('reads nothing twice', async () => {
    const path = log();
    writeFileSync(path, `${learningLine(1)}\n`);
    await ingest(path);
    await ingest(path);
    appendFileSync(path, `${learningLine(2)}\n`);
    await ingest(path);
    await ingest(path);
    expect(rewards()).toEqual([
      [1, 0.101],
      [2, 0.102],
    ]);
    expect(store.runs.byName('run1')?.records).toBe(2);
  });

  it('starts a truncated file again from 0, numbering on after the old steps', async () => {
    const path = log();
    writeFileSync(path, `${learningLine(1)}\n${learningLine(2)}\n`);
    await ingest(path);
    truncateSync(path, 0);
    writeFileSync(path, `${learningLine(7)}\n`);
    await ingest(path);
    expect(events).toContainEqual({ kind: 'restart', path, why: 'truncated' });
    expect(rewards()).toEqual([
      [1, 0.101],
      [2, 0.102],
      [3, 0.107],
    ]);
  });

  it('follows a rotated file: a new file at the same path is read from 0', async () => {
    const path = log();
    writeFileSync(path, `${learningLine(1)}\n${learningLine(2)}\n${learningLine(3)}\n`);
    await ingest(path);
    renameSync(path, `${path}.1`);
    writeFileSync(path, `${learningLine(4)}\n${learningLine(5)}\n${learningLine(6)}\n${learningLine(8)}\n`);
    await ingest(path);
    expect(events).toContainEqual({ kind: 'restart', path, why: 'rotated' });
    expect(rewards().map(([, v]) => v)).toEqual([0.101, 0.102, 0.103, 0.104, 0.105, 0.106, 0.108]);
  });

  it('counts and skips a binary line and a 10 MB line, keeping the lines around them', async () => {
    const path = log();
    const binary = Buffer.from([0x00, 0xff, 0x13, 0x00, 0x7f, 0x80, 0x0a]);
    writeFileSync(path, `${learningLine(1)}\n`);
    appendFileSync(path, binary);
    appendFileSync(path, `${'x'.repeat(10 * 1024 * 1024)}\n`);
    appendFileSync(path, `${learningLine(2)}\n`);
    const out = await ingest(path);
    expect(rewards().map(([, v]) => v)).toEqual([0.101, 0.102]);
    expect(out?.skips).toEqual({ 'binary data': 1, 'line too long': 1 });
    const file = store.files.byPath(path)!;
    expect(file.skipped).toBe(2);
    expect(
      store.files
        .skipsOf(file.id)
        .map((s) => s.reason)
        .sort(),
    ).toEqual(['binary data', 'line too long']);
  });

  it('reports an unreadable file and goes on with the others', async () => {
    const bad = join(root, 'runs', 'run2', 'learning.log');
    mkdirSync(bad, { recursive: true }); // a directory where a file is expected: EISDIR on read
    const good = log();
    writeFileSync(good, `${learningLine(1)}\n`);
    expect(await ingest(bad)).toBeNull();
    expect(await ingest(good)).toMatchObject({ records: 1 });
    if (process.getuid?.() !== 0) {
      // root reads anything, so a chmod 000 file is only unreadable for other users
      const locked = ensureParent(join(root, 'runs', 'run3', 'learning.log'));
      writeFileSync(locked, `${learningLine(1)}\n`);
      chmodSync(locked, 0);
      expect(await ingest(locked)).toBeNull();
      expect(events.some((e) => e.kind === 'unreadable' && e.path === locked)).toBe(true);
    }
  });

  it('ignores files that are not logs, and decides on an empty .log once it has content', async () => {
    const notes = ensureParent(join(root, 'runs', 'run1', 'notes.txt'));
    writeFileSync(notes, 'remember to raise the temperature\n');
    expect(await ingest(notes)).toBeNull();
    const out = ensureParent(join(root, 'runs', 'run4', 'train.out'));
    writeFileSync(out, '');
    expect(await ingest(out)).toBeNull();
    appendFileSync(out, "{'loss': 0.1, 'reward': 0.5, 'epoch': 0.01}\n");
    expect(await ingest(out)).toMatchObject({ run: 'run4', format: 'console', records: 1 });
    expect(rewards('run4')).toEqual([[1, 0.5]]);
  });
});

describe('Ingestor on generations', () => {
  it('keeps only the best and worst two per step, merged with their breakdown', async () => {
    const dir = join(root, 'runs', 'run1', 'reward_logs');
    const completions = ensureParent(join(dir, 'completions.jsonl'));
    const breakdown = join(dir, 'syntax_aware_breakdown.jsonl');
    const gens = [0.1, 0.9, 0.5, 0.3, 0.7, 0.2].map((reward, i) => ({
      problem_id: `p${i}`,
      reward,
      completion: `let f${i} = ${i}`,
    }));
    writeFileSync(completions, gens.map((g) => JSON.stringify({ ...g, step: 3 })).join('\n') + '\n');
    writeFileSync(
      breakdown,
      gens
        .map((g) =>
          JSON.stringify({
            problem_id: g.problem_id,
            total_reward: g.reward,
            tests: g.reward / 2,
            step: 3,
            preview: g.completion,
          }),
        )
        .join('\n') + '\n',
    );
    await ingest(completions);
    await ingest(breakdown);
    const run = store.runs.byName('run1')!;
    const kept = store.examples.atOrBefore(run.id, 10);
    expect(kept.map((e) => e.reward)).toEqual([0.9, 0.7, 0.2, 0.1]);
    expect(kept[0]).toMatchObject({ step: 3, completion: 'let f1 = 1', breakdown: { tests: 0.45 } });
  });
});

describe('Ingestor on captured stdout that starts over', () => {
  it('a truncated log starts with fresh parser and scanner state: an old open traceback does not claim a new line', async () => {
    const path = ensureParent(join(root, 'runs', 'job', 'train.log'));
    writeFileSync(
      path,
      "{'loss': 0.5, 'reward': 0.25, 'epoch': 0.1}\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n",
    );
    await ingest(path);
    truncateSync(path, 0);
    // the job was restarted into the same file: this line is the new content's first, not the old traceback's end
    writeFileSync(path, 'ValueError: a message the new run printed\n');
    await ingest(path);
    expect(store.events.after(store.runs.byName('job')!.id, ['error'], 0)).toEqual([]);
    // the same lines without the truncation do end the traceback: the scanner is what was reset
    const whole = ensureParent(join(root, 'runs', 'job2', 'train.log'));
    writeFileSync(whole, 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n');
    await ingest(whole);
    appendFileSync(whole, 'ValueError: a message the new run printed\n');
    await ingest(whole);
    expect(store.events.after(store.runs.byName('job2')!.id, ['error'], 0).map((e) => e.title)).toEqual([
      'ValueError: a message the new run printed',
    ]);
  });
});
