/**
 * The CLI's commands on a PostgreSQL `--db` (and RLWATCH_DB): the real bin/rlwatch, against the test run's
 * PostgreSQL, with an alert written through PgStore as a watcher's engine writes it.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { tempDir } from '../helpers.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';
import { rlwatch } from './cli.ts';

const opened: PgStore[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

/** A fresh database holding one run, `host-a/grpo`, written through PgStore as a watcher writes it. */
async function aRun() {
  const url = await freshPgDatabase();
  const store = await PgStore.open(url);
  opened.push(store);
  const run = await store.runs.ensure('host-a/grpo', '/runs/host-a/grpo');
  return { url, store, run };
}

describe('commands on PostgreSQL', () => {
  it('a role that may only read the tables can read: an up-to-date schema is not migrated again on open', async () => {
    const { url } = await aRun();
    const owner = new pg.Client({ connectionString: url });
    await owner.connect();
    const role = `reader_${Date.now()}`;
    await owner.query(`CREATE ROLE ${role} LOGIN PASSWORD 'r'`);
    await owner.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
    await owner.end();
    const reader = new URL(url);
    [reader.username, reader.password] = [role, 'r'];

    const runs = rlwatch(['runs', '--json', '--db', reader.href], { cwd: tempDir() });
    expect(runs.stderr).toBe('');
    expect(JSON.parse(runs.stdout)).toMatchObject([{ name: 'host-a/grpo' }]);
  }, 60_000);

  it('runs, alerts and ack read and write the database the URL names', async () => {
    const { url, store, run } = await aRun();
    const change = { step: 7, at: Date.now(), severity: 'critical', summary: 'frac_zero_std 1 > 0.8', details: {} };
    const alert = await store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', change);
    const cwd = tempDir();

    const runs = rlwatch(['runs', '--json', '--db', url], { cwd });
    expect(runs.stderr).toBe('');
    expect(JSON.parse(runs.stdout)).toMatchObject([{ name: 'host-a/grpo', path: '/runs/host-a/grpo' }]);
    const alerts = rlwatch(['alerts', '--json'], { cwd, env: { RLWATCH_DB: url } });
    expect(JSON.parse(alerts.stdout)).toMatchObject([{ id: alert.id, rule: 'mode_collapse', state: 'firing' }]);

    const ack = rlwatch(['ack', String(alert.id), 'looking', '--by', 'ana', '--db', url], { cwd });
    expect(ack.status).toBe(0);
    const acked = await store.alerts.byId(alert.id);
    expect(acked).toMatchObject({ acked_by: 'ana', acked_by_name: 'ana', ack_comment: 'looking' });
    const unknown = rlwatch(['run', 'status', 'nope', '--db', url], { cwd });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toBe("rlwatch: unknown run 'nope' (known: host-a/grpo)\n");
  }, 60_000);

  it('run status shows the attempts of a job restarted from a checkpoint', async () => {
    const { url, store, run } = await aRun();
    const file = await store.files.add(run.id, '/runs/host-a/grpo/learning.log', 'learning.log');
    const read = (steps: number[], offset: number) =>
      store.commit(
        {
          runId: run.id,
          fileId: file.id,
          examples: [],
          skips: new Map(),
          metrics: steps.map((step) => ({ step, values: new Map([['reward', step / 100]]) })),
          progress: {
            dev: 1,
            ino: 1,
            offset,
            size: offset,
            mtimeMs: 0,
            seq: 0,
            lines: steps.length,
            records: steps.length,
          },
        },
        2,
      );
    await read([1, 2, 3, 4, 5, 6], 60);
    await read([3, 4], 80); // the job died after step 6 and resumed from its checkpoint at step 3

    const status = rlwatch(['run', 'status', 'host-a/grpo', '--json', '--db', url], { cwd: tempDir() });
    expect(status.stderr).toBe('');
    const data = JSON.parse(status.stdout);
    expect(
      data.attempts.map((a: { attempt: number; resumedStep: number; lastStep: number }) => [
        a.attempt,
        a.resumedStep,
        a.lastStep,
      ]),
    ).toEqual([
      [1, 1, 6],
      [2, 3, 4],
    ]);
    // the restarted job's latest values, not those attempt 1 logged past step 4
    expect(data).toMatchObject({ step: 4, metrics: { reward: 0.04 } });
    const text = rlwatch(['run', 'status', 'host-a/grpo', '--db', url], { cwd: tempDir() }).stdout;
    expect(text).toMatch(/attempt 2 \(now\): resumed at step 3 .*, reached step 4/);
  }, 60_000);

  it('says which server it cannot reach, without its password', () => {
    const r = rlwatch(['runs', '--db', 'postgres://rl:s3cret@127.0.0.1:1/rlwatch'], { cwd: tempDir() });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rlwatch: cannot open postgres:\/\/rl:\*\*\*@127\.0\.0\.1:1\/rlwatch: /);
    expect(r.stderr).not.toContain('s3cret');
  });
});
