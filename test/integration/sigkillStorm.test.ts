/**
 * `rlwatch start`, killed with SIGKILL a dozen times at random moments (starting up, catching up, watching) while a
 * writer appends several runs' files in pieces cut anywhere, ends with the records and alerts of one clean
 * `rlwatch backfill` of the same final files.
 */
import Database from 'better-sqlite3';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { realLogsDir, tempDir } from '../helpers.ts';
import { BIN, exited, rlwatch } from './cli.ts';

const SAMPLES = join(import.meta.dirname, '..', '..', 'samples');
const KILLS = 12;
/** a terminal-only start: no chat platform's settings reach it */
const ENV = {
  ...process.env,
  RLWATCH_DB: undefined,
  RLWATCH_CONFIG: undefined,
  DISCORD_TOKEN: undefined,
  SLACK_BOT_TOKEN: undefined,
  TELEGRAM_BOT_TOKEN: undefined,
};
/** judged on rlwatch's clock (the silence since a file last grew, an error's grace), not on the records */
const ON_THE_CLOCK = new Set(GRPO_PRESET.filter((r) => r.kind === 'stall' || r.kind === 'crash').map((r) => r.id));

/** A file that grows by appended pieces, or (a Trainer state) is rewritten whole with a longer history each time. */
interface Growing {
  path: string;
  bytes: Buffer;
  at: number;
  whole?: (share: number) => string;
}

function start(args: string[]): { child: ChildProcess; stderr: () => string } {
  const child = spawn(BIN, ['start', ...args], { env: ENV, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stderr: () => err };
}

/** Every point of a database: run, metric, step, value (NaN as null), in one order. */
function pointsOf(db: string): string[] {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const rows = conn
      .prepare(
        `SELECT r.name AS run, m.name AS metric, p.step AS step, p.value AS value FROM points p
         JOIN metrics m ON m.id = p.metric_id JOIN runs r ON r.id = p.run_id`,
      )
      .all() as Array<{ run: string; metric: string; step: number; value: number | null }>;
    return rows.map((r) => `${r.run} ${r.metric} ${r.step} ${r.value}`).sort();
  } finally {
    conn.close();
  }
}

/** Whether every file is stored up to its end (its size as last read is its size now). */
function caughtUp(db: string, files: readonly Growing[]): boolean {
  if (!existsSync(db)) return false;
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    conn.pragma('busy_timeout = 2000');
    if (!conn.prepare("SELECT 1 FROM sqlite_master WHERE name = 'files'").get()) return false;
    const row = conn.prepare('SELECT offset, size FROM files WHERE path = ?');
    return files.every((f) => {
      const r = row.get(f.path) as { offset: number; size: number } | undefined;
      return r !== undefined && r.offset === f.bytes.length && r.size === f.bytes.length;
    });
  } finally {
    conn.close();
  }
}

/** `alerts --all --json` without what is not a function of the bytes: ids, wall-clock times, clock-judged rules, and
 * the run's duration in run_finished's summary (the time between the first and last record's arrival: nil in a
 * backfill, the seconds the storm took live). */
function alertsOf(db: string): unknown[] {
  const r = rlwatch(['alerts', '--all', '--json', '--db', db]);
  expect(r.status, r.stderr).toBe(0);
  const alerts = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
  return alerts
    .filter((a) => !ON_THE_CLOCK.has(a['rule'] as string))
    .map(({ id: _id, startedAt: _s, resolvedAt: _r, ...rest }) =>
      rest['rule'] === 'run_finished'
        ? { ...rest, summary: String(rest['summary']).replace(/ in (\d+[hms] ?)+;/, ';') }
        : rest,
    )
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

describe('start SIGKILLed a dozen times while runs are written', () => {
  it('ends with the records and alerts of a clean backfill of the same files', async () => {
    const rand = mulberry32(2027);
    const top = tempDir('rlw-storm-');
    const runs = join(top, 'runs');
    const real = realLogsDir();
    const state = JSON.parse(readFileSync(join(real, 'trl-grpo-finance-poison', 'trainer_state.json'), 'utf8')) as {
      log_history: unknown[];
    };
    const history = state.log_history;
    const files: Growing[] = [
      // a learning.log and a JSONL that collapse (the demo run), a console log of multi-line steps, a nohup'd
      // Trainer stdout whose steps come from tqdm's marks, a Trainer state rewritten whole
      ['grpo-demo/learning.log', join(SAMPLES, 'grpo-demo', 'learning.log')],
      ['grpo-demo/batch_metrics.jsonl', join(SAMPLES, 'grpo-demo', 'batch_metrics.jsonl')],
      ['grpo-callback/train.log', join(SAMPLES, 'grpo-callback', 'train.log')],
      ['hotpotqa/grpo.log', join(real, 'trl-grpo-hotpotqa-nohup', 'grpo.log')],
    ].map(([rel, from]) => ({ path: join(runs, rel!), bytes: readFileSync(from!), at: 0 }));
    const whole = JSON.stringify(state, null, 2);
    files.push({
      path: join(runs, 'finance', 'trainer_state.json'),
      bytes: Buffer.from(whole),
      at: 0,
      whole: (share) =>
        share >= 1
          ? whole
          : JSON.stringify({ ...state, log_history: history.slice(0, Math.floor(share * history.length)) }, null, 2),
    });
    for (const f of files) {
      mkdirSync(dirname(f.path), { recursive: true });
      if (!f.whole) writeFileSync(f.path, '');
    }
    const total = files.reduce((n, f) => n + f.bytes.length, 0);
    const perKill = Math.ceil(total / (KILLS + 1));
    /** Writes about `bytes` more, in pieces cut anywhere, files taking turns at random. */
    const write = (bytes: number): void => {
      for (let left = bytes; left > 0; ) {
        const open = files.filter((f) => f.at < f.bytes.length);
        if (open.length === 0) return;
        const f = open[Math.floor(rand() * open.length)]!;
        const end = Math.min(f.bytes.length, f.at + 1 + Math.floor(rand() * 1500));
        left -= end - f.at;
        if (f.whole) writeFileSync(f.path, f.whole(end / f.bytes.length));
        else appendFileSync(f.path, f.bytes.subarray(f.at, end));
        f.at = end;
      }
    };

    const db = join(top, 'storm.db');
    const args = [runs, '--db', db];
    let killed = 0;
    while (killed < KILLS) {
      const p = start(args);
      // half the kills land anywhere from start-up on, half while it watches
      const watching = killed % 2 === 1;
      const ready = Date.now() + 20_000;
      while (watching && !p.stderr().includes('watching') && p.child.exitCode === null && Date.now() < ready)
        await sleep(20);
      expect(p.child.exitCode, p.stderr()).toBeNull();
      const until = Date.now() + 100 + rand() * (watching ? 1200 : 2500);
      const ticks = Math.max(1, Math.round((until - Date.now()) / 25));
      while (Date.now() < until) {
        write(Math.ceil(perKill / ticks));
        await sleep(25);
      }
      p.child.kill('SIGKILL');
      await exited(p.child);
      killed++;
      write(Math.floor(rand() * 2000)); // written while nobody watches
    }
    write(total);
    for (const f of files) expect(statSync(f.path).size).toBe(f.bytes.length);

    const last = start(args);
    const until = Date.now() + 30_000;
    while (!caughtUp(db, files) && Date.now() < until) await sleep(100);
    last.child.kill('SIGTERM');
    await exited(last.child);
    expect(caughtUp(db, files), last.stderr()).toBe(true);

    const clean = join(top, 'clean.db');
    const r = rlwatch(['backfill', runs, '--db', clean]);
    expect(r.status, r.stderr).toBe(0);

    const points = pointsOf(clean);
    // every run gave records, and the clean read raises alerts that fire and resolve: there is something to compare
    for (const run of ['grpo-demo', 'grpo-callback', 'hotpotqa', 'finance']) {
      expect(
        points.some((p) => p.startsWith(`${run} `)),
        run,
      ).toBe(true);
    }
    const alerts = alertsOf(clean);
    expect(alerts.length).toBeGreaterThan(5);
    expect(alerts.some((a) => (a as { state: string }).state === 'resolved')).toBe(true);
    expect(pointsOf(db)).toEqual(points);
    expect(alertsOf(db)).toEqual(alerts);
  }, 120_000);
});
