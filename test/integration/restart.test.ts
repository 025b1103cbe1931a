import Database from 'better-sqlite3';
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { learningLine, tempDir } from '../helpers.ts';
import { exited, rlwatchBackground } from './cli.ts';

const TOTAL = 600;

/** Steps stored so far for one metric, read through a separate connection as any reader would. */
function storedSteps(db: string, metric: string): Array<{ step: number; value: number }> {
  if (!existsSync(db)) return [];
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    conn.pragma('busy_timeout = 2000');
    const hasPoints = conn.prepare("SELECT 1 FROM sqlite_master WHERE name = 'points'").get();
    if (!hasPoints) return [];
    return conn
      .prepare(
        `SELECT p.step AS step, p.value AS value FROM points p JOIN metrics m ON m.id = p.metric_id
         WHERE m.name = ? ORDER BY p.step`,
      )
      .all(metric) as Array<{ step: number; value: number }>;
  } finally {
    conn.close();
  }
}

async function waitFor(what: string, cond: () => boolean, ms = 25_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('start, killed with SIGKILL mid-stream and restarted', () => {
  it('stores every appended line exactly once', async () => {
    const root = tempDir();
    const runDir = join(root, 'runs', 'grpo');
    mkdirSync(runDir, { recursive: true });
    const log = join(runDir, 'learning.log');
    const batch = join(runDir, 'batch_metrics.jsonl');
    writeFileSync(log, '');
    writeFileSync(batch, '');
    const db = join(root, 'rlwatch.db');
    const args = ['start', join(root, 'runs'), '--db', db];
    let written = 0;
    const append = (n: number): void => {
      for (let k = 0; k < n && written < TOTAL; k++) {
        written++;
        appendFileSync(log, `${learningLine(written)}\n`);
        appendFileSync(batch, `${JSON.stringify({ pass_at_1: written / 10_000, pass_at_all: 0.5 })}\n`);
      }
    };

    const first = rlwatchBackground(args);
    await waitFor('the first start-up', () => first.stderr().includes('watching'));
    // Write steadily until part of it is committed, then kill the process without warning.
    while (storedSteps(db, 'reward').length < 100) {
      append(7);
      await sleep(5);
    }
    append(13);
    first.child.kill('SIGKILL');
    await exited(first.child);
    append(150); // written while nobody watches

    const second = rlwatchBackground(args);
    await waitFor('the restart', () => second.stderr().includes('watching'));
    while (written < TOTAL) {
      append(11);
      await sleep(5);
    }
    await waitFor(
      'every line',
      () => storedSteps(db, 'reward').length >= TOTAL && storedSteps(db, 'pass_at_1').length >= TOTAL,
    );
    second.child.kill('SIGTERM');
    await exited(second.child);

    const reward = storedSteps(db, 'reward');
    expect(reward.map((p) => p.step)).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
    // the value of step i is the one written on line i: no line was skipped, repeated or shifted
    expect(reward.every((p) => Math.abs(p.value - (0.1 + p.step / 1000)) < 1e-9)).toBe(true);
    const pass = storedSteps(db, 'pass_at_1');
    expect(pass.every((p) => Math.abs(p.value - p.step / 10_000) < 1e-12)).toBe(true);
    expect(pass).toHaveLength(TOTAL);

    const conn = new Database(db, { readonly: true });
    const files = conn.prepare('SELECT lines, records, skipped FROM files ORDER BY path').all();
    const run = conn.prepare('SELECT name, records, last_step FROM runs').get();
    conn.close();
    expect(files).toEqual([
      { lines: TOTAL, records: TOTAL, skipped: 0 },
      { lines: TOTAL, records: TOTAL, skipped: 0 },
    ]);
    expect(run).toEqual({ name: 'grpo', records: TOTAL, last_step: TOTAL });
    expect(second.stderr()).not.toMatch(/error/i);
  }, 90_000);
});
