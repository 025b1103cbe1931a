/**
 * `rlwatch backfill --db postgres://...`: the real bin/rlwatch ingests a run folder into the test run's PostgreSQL,
 * judging its history as it goes, and leaves the same runs and alerts as the same backfill into a SQLite file (read
 * back through `runs --json` and `alerts --all --json`, the commands a user would run).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { rlwatch } from './cli.ts';

const STEPS = 120;

/** One run's metrics.jsonl: the reward climbs then falls to 0.1, the KL leaps to 20 after step 100 and nearly every
 * group agrees after step 110 (what the GRPO preset's KL and zero-signal rules fire on). */
function metricLines(): string[] {
  return Array.from({ length: STEPS }, (_, k) => {
    const step = k + 1;
    const reward = step <= 80 ? 0.2 + step * 0.006 : 0.1;
    return JSON.stringify({
      step,
      reward,
      loss: 0.5,
      kl: step > 100 ? 20 : 0.01,
      frac_reward_zero_std: step > 110 ? 0.95 : 0.1,
    });
  });
}

/** A run's fields that say what was read and judged (not when, nor which row id it got). */
const runFacts = ({ updatedAt: _, ...rest }: Record<string, unknown>) => rest;
const alertFacts = ({ id: _, startedAt: __, resolvedAt: ___, ...rest }: Record<string, unknown>) => rest;
/** Backfill's output without its timing and the alerts' row ids. */
const printed = (out: string) =>
  out
    .replace(/ in \d+\.\d s$/m, '')
    .replace(/#\d+/g, '#N')
    .replace(/ack \d+/g, 'ack N');

describe('backfill on PostgreSQL', () => {
  it('stores every line and fires the same alerts as the same backfill on SQLite', async () => {
    const root = tempDir();
    const runDir = join(root, 'runs', 'grpo-x');
    mkdirSync(runDir, { recursive: true });
    const lines = metricLines();
    writeFileSync(join(runDir, 'metrics.jsonl'), `${lines.join('\n')}\n`);
    // one prefix for both: on PostgreSQL it would otherwise be the host's name, on SQLite none
    const config = join(root, 'rlwatch.yaml');
    writeFileSync(config, 'watch:\n  prefix: lab\n');
    const url = await freshPgDatabase();
    const sqlite = join(root, 'rlwatch.db');

    const onPg = rlwatch(['backfill', join(root, 'runs'), '--db', url, '--config', config], { cwd: root });
    expect(onPg.stderr).toBe('');
    expect(onPg.status).toBe(0);
    const onSqlite = rlwatch(['backfill', join(root, 'runs'), '--db', sqlite, '--config', config], { cwd: root });
    expect(onSqlite.status).toBe(0);
    expect(onPg.stdout).toMatch(/^backfill: 1 run, 1 file, 120 records from 0\.0 MB in \d+\.\d s\n/);
    expect(printed(onPg.stdout)).toBe(printed(onSqlite.stdout));

    const read = (what: string[], db: string) => {
      const r = rlwatch([...what, '--json', '--db', db, '--config', config], { cwd: root });
      expect(r.stderr).toBe('');
      return JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    };
    const runs = read(['runs'], url);
    expect(runs).toMatchObject([
      { name: 'lab/grpo-x', path: runDir, records: lines.length, firstStep: 1, lastStep: STEPS },
    ]);
    expect(runs.map(runFacts)).toEqual(read(['runs'], sqlite).map(runFacts));
    const alerts = read(['alerts', '--all'], url);
    expect(alerts.map((a) => a.rule)).toEqual(expect.arrayContaining(['kl_out_of_range', 'mode_collapse']));
    expect(alerts.map(alertFacts)).toEqual(read(['alerts', '--all'], sqlite).map(alertFacts));
  }, 120_000);
});
