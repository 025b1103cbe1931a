import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent, tempDir } from '../helpers.ts';

// The writer holds in memory what only it writes of the runs it reads (their rows, metrics, files, attempts and events),
// so that a live line asks SQLite less. A second connection holds nothing: whatever the writer did, committed or
// rolled back, both must give the same answers.

let dir: string;
let root: string;
let store: Store;
let ingestor: Ingestor;

const dict = (step: number, extra = ''): string =>
  `{'loss': 0.0${step}, 'reward': 0.${step}, 'grad_norm': 0.5${extra}, 'epoch': ${(step / 100).toFixed(2)}, 'step': ${step}}`;
const logOf = (run: string): string => join(root, run, 'train.log');

async function write(run: string, lines: readonly string[]): Promise<void> {
  appendFileSync(ensureParent(logOf(run)), lines.map((l) => `${l}\n`).join(''));
  await ingestor.ingest(logOf(run), root);
}

/** The writer's answers about the run, next to a fresh connection's. */
function bothSay(run: string): void {
  const reader = Store.open(join(dir, 'test.db'));
  try {
    const id = reader.runs.byName(run)!.id;
    const answers = (s: Store) => ({
      run: s.runs.byId(id),
      metrics: s.points.metricsOf(id),
      attempts: s.attempts.list(id),
      latest: s.attempts.latest(id),
      file: s.files.byPath(logOf(run)),
      fileById: s.files.byId(reader.files.byPath(logOf(run))!.id),
      errors: s.events.after(id, ['error', 'warning'], 0),
      finished: s.events.finished(id),
      meta: s.events.meta(id),
    });
    expect(answers(store)).toEqual(answers(reader));
  } finally {
    reader.close();
  }
}

beforeEach(() => {
  dir = tempDir();
  root = join(dir, 'runs');
  ({ store, ingestor } = pipeline({
    dir,
    name: 'test.db',
    ingest: { maxLineBytes: 64 * 1024, examplesPerStep: 2 },
    // the rules after each batch, as `start` runs them once caught up: they mark the run evaluated and live
    engine: { repeatIntervalMs: 3_600_000, targets: ['console'], caughtUp: true },
  }));
});
afterEach(() => store.close());

describe('what the writer holds of the runs it reads', () => {
  it('answers as the database does through new metrics, a restart, errors, skipped lines, a truncation and the end of training', async () => {
    await write('a', [dict(1), dict(2)]);
    bothSay('a');
    await write('a', [dict(3, ", 'kl': 0.01")]); // a metric first seen now
    bothSay('a');
    expect(store.points.metricsOf(store.runs.byName('a')!.id)).toContain('kl');
    await write('a', [dict(2), dict(3)]); // a job resumed from a checkpoint: a new attempt
    bothSay('a');
    expect(store.attempts.list(store.runs.byName('a')!.id)).toHaveLength(2);
    await write('a', [
      'Traceback (most recent call last):',
      '  File "train.py", line 3, in <module>',
      'RuntimeError: boom',
    ]);
    bothSay('a');
    await write('a', ["{'loss': 0.1, 'broken", dict(4)]);
    bothSay('a');
    expect(store.files.byPath(logOf('a'))!.skipped).toBeGreaterThan(0);
    writeFileSync(logOf('a'), `${dict(1)}\n`); // truncated: read whole again, its skips cleared
    await ingestor.ingest(logOf('a'), root);
    bothSay('a');
    await write('a', [dict(2), dict(3), dict(4)]);
    bothSay('a');
    await write('a', ["{'train_runtime': 61.2, 'train_loss': 0.01, 'epoch': 1.0}"]);
    bothSay('a');
    expect(store.events.finished(store.runs.byName('a')!.id)).toBeDefined();
  });

  it('drops what a rolled-back group wrote, and answers as the database does again', async () => {
    await write('a', [dict(1), dict(2)]);
    bothSay('a');
    appendFileSync(logOf('a'), `${dict(3, ", 'kl': 0.01")}\n${dict(1)}\nRuntimeError: boom\n`);
    const group = store.group(() => {
      const reads = [ingestor.ingest(logOf('a'), root)];
      store.db.exec('ROLLBACK'); // what SQLite does by itself on some full-disk and I/O errors
      return reads;
    });
    await Promise.all(group.reads);
    expect(group.failed).not.toBeNull();
    bothSay('a');
    expect(store.points.metricsOf(store.runs.byName('a')!.id)).not.toContain('kl');
    await ingestor.ingest(logOf('a'), root); // read again, from the offset that did commit
    bothSay('a');
    expect(store.points.metricsOf(store.runs.byName('a')!.id)).toContain('kl');
  });
});
