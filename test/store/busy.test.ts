import Database from 'better-sqlite3';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app/start.ts';
import { loadConfig } from '../../src/app/loadConfig.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import type { Log } from '../../src/lib/log.ts';
import { retryWhileBusy } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { ensureParent, learningLine, tempDir } from '../helpers.ts';

// "Busy" for real: a second connection holds the write lock (BEGIN IMMEDIATE), as a CLI `mute` does for a moment,
// while rlwatch's connection waits only 50 ms for it.
const collapsed = (from: number, n: number): string =>
  Array.from({ length: n }, (_, k) => `${learningLine(from + k, { frac: 0.95 })}\n`).join('');
const { config } = await loadConfig(undefined);
const quiet: Log = { info: () => {}, warn: () => {} };
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function holdWriteLock(dbPath: string): Database.Database {
  const other = new Database(dbPath);
  other.exec('BEGIN IMMEDIATE');
  cleanup.push(() => other.open && other.close());
  return other;
}

describe('a busy database', () => {
  it("retries a batch's rule evaluation instead of skipping it", async () => {
    const { dir, path: dbPath, store } = freshStore();
    const log = ensureParent(join(dir, 'runs', 'r1', 'learning.log'));
    writeFileSync(log, collapsed(1, 6));
    cleanup.push(() => store.close());
    await new Ingestor(store, { maxLineBytes: 65536, examplesPerStep: 2 }).ingest(log, join(dir, 'runs'));
    const runId = store.runs.byName('r1')!.id;
    const engine = new Engine(store, ruleBookFor(config), { repeatIntervalMs: 3_600_000, targets: [] });
    store.db.pragma('busy_timeout = 50');
    const other = holdWriteLock(dbPath);
    const busy: string[] = [];
    retryWhileBusy(
      () => engine.evaluate(runId, false),
      (e) => busy.push(e.message),
      200,
    );
    expect(busy).toEqual(['database is locked']);
    expect(store.alerts.list({ all: true })).toEqual([]);
    other.exec('COMMIT');
    for (let i = 0; i < 40 && store.alerts.list({ all: true }).length === 0; i++) await sleep(50);
    expect(store.alerts.list({ all: true }).map((a) => a.rule)).toContain('mode_collapse');
  });

  it('under start, lines that met a busy database are read again without waiting for more lines', async () => {
    const dir = tempDir();
    const dbPath = join(dir, 'test.db');
    const root = join(dir, 'runs');
    const log = ensureParent(join(root, 'r1', 'learning.log'));
    writeFileSync(log, collapsed(1, 1));
    const warnings: string[] = [];
    const app = await startApp({
      config,
      dbPath,
      roots: [root],
      log: { ...quiet, warn: (m) => warnings.push(m) },
      terminal: null,
    });
    cleanup.push(() => app.stop());
    app.store.db.pragma('busy_timeout = 50');
    const other = holdWriteLock(dbPath);
    appendFileSync(log, collapsed(2, 5));
    for (let i = 0; i < 100 && warnings.length === 0; i++) await sleep(20);
    expect(warnings[0]).toMatch(/database is locked/);
    await sleep(300); // past the watcher's own trailing re-check of the change
    other.exec('COMMIT');
    const firing = (): string[] =>
      app.store.alerts.list({ all: true }).flatMap((a) => (a.state === 'firing' ? [a.rule] : []));
    for (let i = 0; i < 100 && !firing().includes('mode_collapse'); i++) await sleep(50);
    expect(app.store.runs.byName('r1')?.records).toBe(6);
    expect(firing()).toContain('mode_collapse');
  });
});
