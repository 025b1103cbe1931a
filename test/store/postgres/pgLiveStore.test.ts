/**
 * PgLiveStore: the synchronous store of a watcher that writes PostgreSQL, through its worker thread's connection.
 * Transactions and savepoints, host scopes, PostgreSQL's errors across the thread, a connection lost and regained.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AlertRow } from '../../../src/store/alerts.ts';
import { isDatabaseError, PostgresError } from '../../../src/store/dbErrors.ts';
import { ARRIVALS_KEPT, PRUNE_EVERY } from '../../../src/store/arrivals.ts';
import { PgLiveStore } from '../../../src/store/postgres/pgLiveStore.ts';
import { PgStore } from '../../../src/store/postgres/pgStore.ts';
import {
  alertColumns,
  attemptColumns,
  fileColumns,
  runColumns,
  silenceColumns,
} from '../../../src/store/postgres/rows.ts';
import type { MetricRow } from '../../../src/store/metricRows.ts';
import { Store, type Batch } from '../../../src/store/sqlite/store.ts';
import { tempDir } from '../../helpers.ts';
import { freshPgDatabase, pgRows as rows } from '../../pg/pgTest.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function open(url: string, scope = 'gpu-a'): Promise<PgLiveStore> {
  const store = await PgLiveStore.open(url, { scope, now: () => 1_000 });
  cleanup.push(() => store.close());
  return store;
}

/** One batch of `steps`, each with a `loss` of step / 10. */
function batchOf(runId: number, fileId: number, steps: number[], offset: number): Batch {
  return {
    runId,
    fileId,
    metrics: steps.map((step) => ({ step, values: new Map([['loss', step / 10]]) })),
    examples: [],
    skips: new Map(),
    progress: { dev: 1, ino: 2, offset, size: offset, mtimeMs: 0, seq: 0, lines: steps.length, records: steps.length },
  };
}

describe('PgLiveStore', () => {
  it('commits a batch and what runs inside it as one transaction; one that throws leaves nothing', async () => {
    const url = await freshPgDatabase();
    const store = await open(url);
    const run = store.runs.ensure('gpu-a/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    const result = store.commit(batchOf(run.id, file.id, [1, 2, 3], 30), 0, (r) => {
      store.outbox.add(run.id, 'console', { n: r.newSteps }, 5);
    });
    expect(result).toMatchObject({ runId: run.id, minStep: 1, maxStep: 3, newSteps: 3 });
    expect(store.points.after(run.id, 'loss', 1)).toEqual([
      { step: 2, value: 0.2 },
      { step: 3, value: 0.3 },
    ]);
    expect(await rows(url, 'SELECT payload FROM outbox')).toEqual([{ payload: '{"n":3}' }]);

    const lost = (): never => {
      throw new Error('the rules failed');
    };
    expect(() => store.commit(batchOf(run.id, file.id, [4], 40), 0, lost)).toThrow('the rules failed');
    expect(() =>
      store.transaction(() => {
        store.outbox.add(run.id, 'console', { n: 'lost' }, 6);
        store.alerts.saveCursor(run.id, 'r', 'loss', 9, { a: 1 });
        store.alerts.flushCursors();
        lost();
      }),
    ).toThrow('the rules failed');
    // neither the batch nor the row nor the cursor, in the database or held by the store
    expect(store.points.after(run.id, 'loss', 3)).toEqual([]);
    expect(store.files.byPath('/runs/grpo/train.log')).toMatchObject({ offset: 30 });
    expect(await rows(url, 'SELECT payload FROM outbox')).toHaveLength(1);
    expect(await rows(url, 'SELECT * FROM run_cursors')).toEqual([]);
    expect(store.alerts.cursor(run.id, 'r', 'loss')).toBeUndefined();

    // a metric first logged by a batch that rolled back is no less a metric when it is logged again
    const withKl = (): Batch => {
      const b = batchOf(run.id, file.id, [4], 40);
      (b.metrics as MetricRow[])[0]!.values.set('kl', 0.01);
      return b;
    };
    expect(() => store.commit(withKl(), 0, lost)).toThrow('the rules failed');
    store.commit(withKl(), 0);
    expect(store.points.metricsOf(run.id)).toEqual(['kl', 'loss']);
  });

  it('rolls back a failed savepoint alone: the rest of the transaction commits', async () => {
    const url = await freshPgDatabase();
    const store = await open(url);
    const run = store.runs.ensure('gpu-a/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    const { reads, failed } = store.group(() => [
      store.commit(batchOf(run.id, file.id, [1], 10), 0),
      (() => {
        try {
          return store.commit(batchOf(run.id, file.id, [2], 20), 0, () => {
            throw new Error('no');
          });
        } catch {
          return null;
        }
      })(),
      store.transaction(() => {
        store.alerts.saveCursor(run.id, 'r', 'loss', 1, { kept: true });
        store.alerts.flushCursors();
        return 'cursor';
      }),
    ]);
    expect(failed).toBeNull();
    expect(reads.map((r) => (r && typeof r === 'object' ? r.maxStep : r))).toEqual([1, null, 'cursor']);
    expect(await rows(url, 'SELECT step FROM points ORDER BY step')).toEqual([{ step: '1' }]);
    expect(await rows(url, `SELECT cursors->'r'->'loss' AS c FROM run_cursors`)).toEqual([
      { c: { step: 1, state: { kept: true } } },
    ]);
    expect(store.groupsRolledBack).toBe(0);
  });

  it("reads a run's head again after a rollback: the same lines written again are no restart", async () => {
    const url = await freshPgDatabase();
    const store = await open(url);
    const run = store.runs.ensure('gpu-a/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    const no = (): never => {
      throw new Error('no');
    };
    store.commit(batchOf(run.id, file.id, [1, 2, 3], 30), 0);
    expect(() => store.commit(batchOf(run.id, file.id, [4, 5], 50), 0, no)).toThrow('no');
    store.commit(batchOf(run.id, file.id, [4, 5], 50), 0);
    // a file's savepoint rolled back in a group, and its lines read again in the same transaction
    const { failed } = store.group(() => [
      (() => {
        try {
          return store.commit(batchOf(run.id, file.id, [6], 60), 0, no);
        } catch {
          return null;
        }
      })(),
      store.commit(batchOf(run.id, file.id, [6], 60), 0),
    ]);
    expect(failed).toBeNull();
    expect(await rows(url, 'SELECT attempt, resumed_step, last_step FROM attempts')).toEqual([
      { attempt: 1, resumed_step: '1', last_step: '6' },
    ]);
    expect(await rows(url, 'SELECT last_step, attempt FROM files')).toEqual([{ last_step: '6', attempt: 1 }]);
    expect(await rows(url, 'SELECT last_step, records FROM runs')).toEqual([{ last_step: '6', records: '6' }]);
  });

  it('never commits past a write posted without waiting that failed: the COMMIT throws its error and rolls back', async () => {
    const url = await freshPgDatabase();
    const store = await open(url);
    const run = store.runs.ensure('gpu-a/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    const before = store.calls;
    const badCursor = (): void => {
      store.alerts.saveCursor(run.id + 1000, 'r', 'loss', 1, {}); // no such run: run_cursors' foreign key refuses it
      store.alerts.flushCursors();
    };
    expect(() =>
      store.transaction(() => {
        store.outbox.add(run.id, 'console', { n: 1 }, 5);
        badCursor();
        store.outbox.add(run.id, 'console', { n: 2 }, 5);
      }),
    ).toThrow(expect.objectContaining({ code: '23503' }));
    // BEGIN, the two rows and the cursor went without waiting; the cursor's read, the COMMIT and the ROLLBACK waited
    expect(store.calls).toEqual({ waited: before.waited + 3, posted: before.posted + 4 });
    // in a group, a failed write in one file's savepoint fails the whole group: its files are read again
    const { failed } = store.group(() => [
      store.commit(batchOf(run.id, file.id, [1], 10), 0),
      store.transaction(badCursor),
    ]);
    expect(failed?.message).toMatch(/did not commit: .*foreign key/);
    expect(await rows(url, 'SELECT * FROM outbox')).toEqual([]);
    expect(await rows(url, 'SELECT * FROM points')).toEqual([]);
    expect(await rows(url, 'SELECT * FROM run_cursors')).toEqual([]);
    // the store goes on
    store.commit(batchOf(run.id, file.id, [1], 10), 0, () => store.outbox.add(run.id, 'console', { n: 3 }, 6));
    expect(await rows(url, 'SELECT payload FROM outbox')).toEqual([{ payload: '{"n":3}' }]);
  });

  it('keeps two hosts apart that ingest the same path: two runs, two files, each lists its own', async () => {
    const url = await freshPgDatabase();
    const [a, b] = [await open(url, 'gpu-a'), await open(url, 'gpu-b')];
    const runA = a.runs.ensure('gpu-a/grpo-7', '/data/runs/grpo-7');
    const runB = b.runs.ensure('gpu-b/grpo-7', '/data/runs/grpo-7');
    expect(runB.id).not.toBe(runA.id);
    expect(a.runs.ensure('gpu-a/grpo-7', '/data/runs/grpo-7').id).toBe(runA.id);
    const fileA = a.files.add(runA.id, '/data/runs/grpo-7/train.log', 'learning.log');
    expect(b.files.byPath('/data/runs/grpo-7/train.log')).toBeUndefined();
    const fileB = b.files.add(runB.id, '/data/runs/grpo-7/train.log', 'learning.log');
    expect(fileB.id).not.toBe(fileA.id);
    a.commit(batchOf(runA.id, fileA.id, [1, 2], 20), 0);
    expect(a.files.byPath('/data/runs/grpo-7/train.log')).toMatchObject({ id: fileA.id, offset: 20 });
    expect(b.files.byPath('/data/runs/grpo-7/train.log')).toMatchObject({ id: fileB.id, offset: 0 });
    expect(a.runs.list().map((r) => r.name)).toEqual(['gpu-a/grpo-7']);
    expect(b.runs.list().map((r) => r.name)).toEqual(['gpu-b/grpo-7']);
    expect(a.runs.unevaluated()).toEqual([runA.id]);
    expect(b.runs.unevaluated()).toEqual([]);
    // an unread file of the same path on each host: each forgets its own
    const unread = { path: '/data/runs/grpo-7/x.log', run: 'grpo-7', run_dir: '/data/runs/grpo-7', rel_path: 'x.log' };
    a.unread.note({ ...unread, run: 'gpu-a/grpo-7', reason: 'no format', size: 1, seen_at: 1 });
    b.unread.note({ ...unread, run: 'gpu-b/grpo-7', reason: 'no format', size: 1, seen_at: 1 });
    a.unread.forget(unread.path);
    expect(await rows(url, 'SELECT scope, run FROM unread_files')).toEqual([{ scope: 'gpu-b', run: 'gpu-b/grpo-7' }]);
  });

  it('throws PostgreSQL errors as errors of the database, with their SQLSTATE code and message', async () => {
    const url = await freshPgDatabase();
    const store = await open(url);
    const run = store.runs.ensure('gpu-a/grpo', '/runs/grpo');
    store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    let err: unknown;
    try {
      store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PostgresError);
    expect(err).toMatchObject({ code: '23505', message: expect.stringContaining('files_scope_path_key') });
    expect(isDatabaseError(err)).toBe(true);
    // the store goes on
    expect(store.files.byPath('/runs/grpo/train.log')).toMatchObject({ run_id: run.id });
  });

  it("answers the announcement after a batch from the batch's round trip, following its own alert writes", async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-ann');
    const run = store.runs.ensure('gpu-ann/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    const change = (step: number) => ({ step, at: 500, severity: 'warning', summary: 's', details: {} });
    let firing = 0;
    let resolved = 0;
    let mutedAway = 0;
    store.commit(batchOf(run.id, file.id, [1], 10), 0, () => {
      firing = store.alerts.create(run.id, 'hot', 'loss', 'firing', change(1)).id;
      store.alerts.markNotified(firing, 'firing', 600);
      resolved = store.alerts.create(run.id, 'gone', 'loss', 'firing', change(1)).id;
      store.alerts.markNotified(resolved, 'firing', 600);
      store.alerts.resolve(resolved, change(1));
      mutedAway = store.alerts.create(run.id, 'muted', 'loss', 'firing', change(1)).id; // fired_at 500, never told
      store.alerts.resolve(mutedAway, change(1));
      store.alerts.create(run.id, 'waits', 'loss', 'pending', change(1));
    });
    // another process acks the firing one
    await rows(url, `UPDATE alerts SET acked_by = 'u1', acked_by_name = 'Ann' WHERE id = $1`, [firing]);

    const ids = (as: Array<{ id: number }>): number[] => as.map((a) => a.id);
    store.commit(batchOf(run.id, file.id, [2], 20), 0, () => {
      const before = store.calls.waited;
      const since500 = store.alerts.announceable(run.id, 500);
      expect(store.calls.waited).toBe(before); // no round trip
      expect(ids(since500)).toEqual([firing, resolved, mutedAway]);
      expect(since500[0]).toMatchObject({
        state: 'firing',
        acked_by: 'u1',
        notified_state: 'firing',
        notified_at: 600,
      });
      // given once: the next call asks the database, and gets the same
      expect(store.alerts.announceable(run.id, 501)).toEqual(since500.filter((a) => a.id !== mutedAway));
      expect(store.calls.waited).toBe(before + 1);
    });
    store.commit(batchOf(run.id, file.id, [3], 30), 0, () => {
      const before = store.calls.waited;
      expect(ids(store.alerts.announceable(run.id))).toEqual([firing, resolved]);
      expect(store.calls.waited).toBe(before);
    });
    // its own alert writes are followed, as the table has them: an announcement recorded, an alert fired
    let late = 0;
    let heldRows: AlertRow[] = [];
    store.commit(batchOf(run.id, file.id, [4], 40), 0, () => {
      store.alerts.openOf(run.id); // as the rules look their alerts up first
      store.alerts.markNotified(resolved, 'resolved', 700);
      late = store.alerts.create(run.id, 'late', 'loss', 'pending', change(4)).id;
      store.alerts.fire(late, { ...change(4), at: 800, severity: 'critical' });
      const before = store.calls.waited;
      heldRows = store.alerts.announceable(run.id);
      expect(store.calls.waited).toBe(before);
    });
    const direct = await PgStore.open(url);
    cleanup.push(() => direct.close());
    expect(heldRows).toEqual(await direct.alerts.announceable(run.id, null)); // the rows, acks and all
    expect(ids(heldRows)).toEqual([firing, late]);
    // a resolution too, its details merged as PostgreSQL merges them: the same JSON value, in other text
    const parsed = (as: AlertRow[]) => as.map((a) => ({ ...a, details: JSON.parse(a.details) as unknown }));
    store.commit(batchOf(run.id, file.id, [5], 50), 0, () => {
      store.alerts.openOf(run.id);
      store.alerts.resolve(late, { ...change(5), summary: 'cooled', details: { value: 1e-7, last: [0.5, -2] } });
      const before = store.calls.waited;
      heldRows = store.alerts.announceable(run.id, 800);
      expect(store.calls.waited).toBe(before);
    });
    expect(ids(heldRows)).toEqual([firing, late]);
    expect(parsed(heldRows)).toEqual(parsed(await direct.alerts.announceable(run.id, 800)));
    expect(parsed(heldRows)[1]).toMatchObject({
      state: 'resolved',
      resolved_step: 5,
      details: { resolved: { summary: 'cooled' } },
    });
    // a rolled back evaluation drops it too
    expect(() =>
      store.commit(batchOf(run.id, file.id, [6], 60), 0, () => {
        store.alerts.fire(store.alerts.create(run.id, 'later', 'loss', 'pending', change(6)).id, change(6));
        throw new Error('the rules failed');
      }),
    ).toThrow('the rules failed');
    store.commit(batchOf(run.id, file.id, [6], 60), 0, () => {
      expect(ids(store.alerts.announceable(run.id))).toEqual([firing]);
    });
  });

  it("answers a tick's reads of each run from its list of the runs: one round trip, the same rows", async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-tick');
    const change = (step: number) => ({ step, at: 500, severity: 'warning', summary: 's', details: {} });
    for (const [k, name] of ['b', 'a', 'c'].entries()) {
      const run = store.runs.ensure(`gpu-tick/${name}`, `/runs/${name}`);
      const file = store.files.add(run.id, `/runs/${name}/train.log`, 'learning.log');
      for (let step = 1; step <= 3 + k; step++) store.commit(batchOf(run.id, file.id, [step], step * 10), 0);
      store.transaction(() => {
        if (k !== 1) store.alerts.create(run.id, 'hot', 'loss', 'firing', change(2));
        store.alerts.create(run.id, 'waits', 'loss', 'pending', change(2));
      });
    }
    store.runs.ensure('gpu-other/a', '/runs/a'); // another host's run: not in this scope's list
    const direct = await PgStore.open(url);
    cleanup.push(() => direct.close());
    const { runs, held } = store.transaction(() => {
      const before = store.calls.waited;
      const runs = store.runs.list();
      expect(runs.map((r) => r.name)).toEqual(['gpu-tick/a', 'gpu-tick/b', 'gpu-tick/c']);
      expect(store.calls.waited).toBe(before + 1);
      const held = runs.map((r) => ({
        attempts: store.attempts.list(r.id),
        arrivals: store.arrivals.recent(r.id),
        metrics: store.points.metricsOf(r.id),
        announceable: store.alerts.announceable(r.id),
      }));
      expect(store.calls.waited).toBe(before + 1); // no round trip of its own for any run
      // given once: asked again, it goes to the database
      store.arrivals.recent(runs[0]!.id);
      expect(store.calls.waited).toBe(before + 2);
      return { runs, held };
    });
    for (const [k, r] of runs.entries()) {
      expect(held[k]).toEqual({
        attempts: await direct.attempts.list(r.id),
        arrivals: await direct.arrivals.recent(r.id),
        metrics: await direct.points.metricsOf(r.id),
        announceable: await direct.alerts.announceable(r.id, null),
      });
      expect(held[k]!.arrivals.length).toBeGreaterThan(0);
      expect(held[k]!.attempts.length).toBeGreaterThan(0);
    }
    // 'a' has no firing alert; the others' are announceable
    expect(held.map((h) => h.announceable.length)).toEqual([0, 1, 1]);
  });

  it(
    'holds what only it writes of a run: its attempts until a batch or a rewind, where its generations start; and ' +
      'the mutes for one transaction',
    async () => {
      const url = await freshPgDatabase();
      const store = await open(url, 'gpu-held');
      const direct = await PgStore.open(url);
      cleanup.push(() => direct.close());
      const run = store.runs.ensure('gpu-held/grpo', '/runs/grpo');
      const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
      store.commit(batchOf(run.id, file.id, [1, 2, 3], 30), 0, () => {});
      const waited = (fn: () => unknown): number => {
        const before = store.calls.waited;
        fn();
        return store.calls.waited - before;
      };

      // attempts: as the batch's round trip read them, as often as asked, until a rewind
      expect(store.attempts.list(run.id)).toEqual(await direct.attempts.list(run.id));
      expect(waited(() => store.attempts.list(run.id))).toBe(0);
      store.attempts.markRewound(run.id, 1);
      let listed: unknown;
      expect(waited(() => (listed = store.attempts.list(run.id)))).toBe(1);
      expect(listed).toEqual(await direct.attempts.list(run.id));
      expect((listed as Array<{ rewound: number }>)[0]!.rewound).not.toBe(0);

      // generations: none kept, so none is asked for; once kept from step 5 on, asked for at 5, not at 4
      expect(waited(() => expect(store.examples.atOrBefore(run.id, 3)).toEqual([]))).toBe(0);
      const withExamples = batchOf(run.id, file.id, [4, 5], 50);
      withExamples.examples = [{ step: 5, key: 'k1', completion: 'the answer is 4', reward: 1, breakdown: {} }];
      store.commit(withExamples, 2, () => {});
      expect(waited(() => expect(store.examples.atOrBefore(run.id, 4)).toEqual([]))).toBe(0);
      expect(store.examples.atOrBefore(run.id, 5)).toEqual(await direct.examples.atOrBefore(run.id, 5));
      expect(store.examples.atOrBefore(run.id, 9)).toMatchObject([{ step: 5, key: 'k1' }]);

      // mutes: read once in a transaction; another process's new mute is read by the next one
      const mute = `INSERT INTO silences (run, starts_at, ends_at, author) VALUES ('gpu-held/grpo', 0, 1e12, 'u1')`;
      store.transaction(() => {
        expect(store.silences.active(1_000)).toEqual([]);
        expect(waited(() => store.silences.active(1_000))).toBe(0);
      });
      await rows(url, mute);
      store.transaction(() => {
        expect(store.silences.active(1_000)).toMatchObject([{ run: 'gpu-held/grpo', author: 'u1' }]);
      });
    },
  );

  it('escalates a firing alert in its one row, its announcement cleared, and answers both reads from what it holds', async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-esc');
    const direct = await PgStore.open(url);
    cleanup.push(() => direct.close());
    const run = store.runs.ensure('gpu-esc/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    const warning = { step: 1, at: 500, severity: 'warning', summary: 'frac_zero_std 0.6 > 0.5', details: {} };
    let id = 0;
    let waiting = 0;
    store.commit(batchOf(run.id, file.id, [1], 10), 0, () => {
      id = store.alerts.create(run.id, 'collapse_levels', 'frac_zero_std', 'firing', warning).id;
      store.alerts.markNotified(id, 'firing', 600);
      waiting = store.alerts.create(run.id, 'spike', 'loss', 'pending', warning).id;
    });
    await rows(url, `UPDATE alerts SET acked_by = 'u1', acked_by_name = 'Ann' WHERE id = $1`, [id]);
    const before = (await direct.alerts.byId(id))!;
    const critical = { step: 3, at: 900, severity: 'critical', summary: 'frac_zero_std 0.9 > 0.8', details: { n: 3 } };
    let held: AlertRow[] = [];
    let announced: AlertRow[] = [];
    store.commit(batchOf(run.id, file.id, [2], 20), 0, () => {
      store.alerts.openOf(run.id); // as the rules look their alerts up first
      store.alerts.escalate(id, critical);
      store.alerts.escalate(waiting, critical); // not firing: left as it is
      const waited = store.calls.waited;
      held = store.alerts.openOf(run.id);
      announced = store.alerts.announceable(run.id);
      expect(store.calls.waited).toBe(waited); // no round trip: both followed the write
    });
    const after = await direct.alerts.byId(id);
    expect(after).toEqual({
      ...before,
      severity: 'critical',
      summary: 'frac_zero_std 0.9 > 0.8',
      details: '{"n":3}',
      fired_at: 900,
      notified_state: null,
      notified_at: null,
    });
    expect(before).toMatchObject({ fired_step: 1, started_step: 1, acked_by: 'u1', notified_state: 'firing' });
    expect(held).toEqual(await direct.alerts.openOf(run.id));
    expect(announced).toEqual(await direct.alerts.announceable(run.id, null)); // the ack as read, too
    expect(announced).toEqual([after]);
    expect((await direct.alerts.byId(waiting))!.summary).toBe(warning.summary);
    expect((await direct.alerts.events(id)).map((e) => [e.state, e.step, JSON.parse(e.details)])).toEqual([
      ['firing', 1, { summary: 'frac_zero_std 0.6 > 0.5' }],
      ['firing', 3, { summary: 'frac_zero_std 0.9 > 0.8', n: 3 }],
    ]);
    expect(await direct.alerts.events(waiting)).toHaveLength(1);
    // the same calls on SQLite leave the same rows and history
    const lite = Store.open(join(tempDir(), 'rlwatch.db'));
    cleanup.push(async () => lite.close());
    const liteRun = lite.runs.ensure('gpu-esc/grpo', '/runs/grpo');
    const [liteId, liteWaiting] = lite.transaction(() => {
      const a = lite.alerts.create(liteRun.id, 'collapse_levels', 'frac_zero_std', 'firing', warning).id;
      lite.alerts.markNotified(a, 'firing', 600);
      return [a, lite.alerts.create(liteRun.id, 'spike', 'loss', 'pending', warning).id] as const;
    });
    lite.db.prepare(`UPDATE alerts SET acked_by = 'u1', acked_by_name = 'Ann' WHERE id = ?`).run(liteId);
    lite.transaction(() => {
      lite.alerts.escalate(liteId, critical);
      lite.alerts.escalate(liteWaiting, critical);
    });
    const ids = { run_id: liteRun.id };
    expect(lite.alerts.byId(liteId)).toEqual({ ...after, ...ids, id: liteId });
    expect(lite.alerts.byId(liteWaiting)).toEqual({ ...(await direct.alerts.byId(waiting)), ...ids, id: liteWaiting });
    expect(lite.alerts.events(liteId)).toEqual(await direct.alerts.events(id));
  });

  it("holds a run's open alerts through its own firings, announcements, resolutions and drops, as the table has them", async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-open');
    const direct = await PgStore.open(url);
    cleanup.push(() => direct.close());
    const run = store.runs.ensure('gpu-open/grpo', '/runs/grpo');
    const change = (step: number) => ({ step, at: 500 + step, severity: 'warning', summary: `s${step}`, details: {} });
    const held: unknown[] = [];
    const table: unknown[] = [];
    const waits: number[] = [];
    const look = async (): Promise<void> => {
      const before = store.calls.waited;
      held.push(store.alerts.openOf(run.id));
      waits.push(store.calls.waited - before);
      table.push(await direct.alerts.openOf(run.id));
    };
    // created without waiting for their rows: ids are taken 16 at a time (the first round trip), and the COMMIT
    let before = store.calls.waited;
    const [a, b, c] = store.transaction(() =>
      ['hot', 'spike', 'flat'].map((rule) => store.alerts.create(run.id, rule, 'loss', 'pending', change(1))),
    );
    expect(store.calls.waited - before).toBe(2);
    expect(a!.id < b!.id && b!.id < c!.id).toBe(true);
    await look();
    before = store.calls.waited;
    const d = store.transaction(() => store.alerts.create(run.id, 'late', 'kl', 'firing', change(2)));
    expect(store.calls.waited - before).toBe(1);
    expect(await direct.alerts.byId(d.id)).toEqual(d);
    store.transaction(() => store.alerts.drop(d.id));
    store.transaction(() => store.alerts.fire(a!.id, { ...change(2), severity: 'critical', details: { n: 2 } }));
    await look();
    store.transaction(() => store.alerts.markNotified(a!.id, 'firing', 700));
    await look();
    store.transaction(() => store.alerts.resolve(b!.id, change(3)));
    await look();
    store.transaction(() => store.alerts.drop(c!.id));
    await look();
    expect(held).toEqual(table);
    expect(waits).toEqual([1, 0, 0, 0, 0]); // read once, then followed (its new alerts too)
    expect(held.at(-1)).toMatchObject([{ id: a!.id, state: 'firing', severity: 'critical', notified_state: 'firing' }]);
  });

  it(
    "prunes a run's arrivals every PRUNE_EVERY batches, reading the newest ARRIVALS_KEPT as before; lists each new " +
      'metric once',
    async () => {
      const url = await freshPgDatabase();
      const store = await open(url, 'gpu-arr');
      const run = store.runs.ensure('gpu-arr/grpo', '/runs/grpo');
      const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
      const BATCHES = ARRIVALS_KEPT + PRUNE_EVERY + 7;
      const advanced: number[] = []; // the steps each batch took the run to: its arrival's count
      let step = 0;
      store.transaction(() => {
        for (let k = 0; k < BATCHES; k++) {
          const n = (k % 3) + 1;
          const b = batchOf(
            run.id,
            file.id,
            Array.from({ length: n }, (_, i) => step + i + 1),
            step + n,
          );
          if (k === BATCHES - 1) for (const m of b.metrics as MetricRow[]) m.values.set('kl', 0.1); // a new one, late
          store.commit(b, 0);
          step += n;
          advanced.push(n);
        }
      });
      // the first batch starts the run: no arrival of its own
      const expected = advanced.slice(1).slice(-ARRIVALS_KEPT);
      expect(store.arrivals.recent(run.id).map((a) => a.steps)).toEqual(expected);
      const { n } = (await rows<{ n: number }>(url, 'SELECT count(*)::int AS n FROM arrivals'))[0]!;
      expect(n).toBeGreaterThanOrEqual(ARRIVALS_KEPT);
      expect(n).toBeLessThan(ARRIVALS_KEPT + PRUNE_EVERY);
      expect(store.points.metricsOf(run.id)).toEqual(['kl', 'loss']);
    },
  );

  it('goes on writing after a migration adds columns to runs and files under it (its statements are prepared)', async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-mig');
    // the statements name every column the migrations made (the rows lose none of them)
    for (const [table, listed] of [
      ['runs', runColumns()],
      ['files', fileColumns()],
    ] as const) {
      const made = await rows<{ c: string }>(
        url,
        `SELECT quote_ident(column_name) AS c
          FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
        [table],
      );
      expect(listed.split(', ').sort()).toEqual(made.map((r) => r.c).sort());
    }
    const run = store.runs.ensure('gpu-mig/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    store.commit(batchOf(run.id, file.id, [1, 2], 20), 0);
    expect(store.files.byPath('/runs/grpo/train.log')).toMatchObject({ offset: 20 });

    // what a newer rlwatch's migration would do while this watcher runs
    await rows(url, 'ALTER TABLE runs ADD COLUMN added_later integer; ALTER TABLE files ADD COLUMN added_later text');

    // every statement prepared before the change runs again, inside a transaction and outside
    store.commit(batchOf(run.id, file.id, [3], 30), 0);
    store.transaction(() => store.commit(batchOf(run.id, file.id, [4], 40), 0));
    expect(store.files.byPath('/runs/grpo/train.log')).toMatchObject({ offset: 40, lines: 4, last_step: 4 });
    expect(store.runs.ensure('gpu-mig/grpo', '/runs/grpo')).toMatchObject({ id: run.id, last_step: 4 });
    expect(store.runs.byId(run.id)).toMatchObject({ name: 'gpu-mig/grpo', records: 4, batches: 3 });
    expect(store.runs.list().map((r) => r.name)).toEqual(['gpu-mig/grpo']);
    const other = store.runs.ensure('gpu-mig/ppo', '/runs/ppo');
    expect(store.files.add(other.id, '/runs/ppo/train.log', 'learning.log')).toMatchObject({ run_id: other.id });
    expect(store.points.after(run.id, 'loss', 0).map((p) => p.step)).toEqual([1, 2, 3, 4]);
    expect(await rows(url, 'SELECT step FROM steps WHERE run_id = $1 ORDER BY step', [run.id])).toEqual(
      [1, 2, 3, 4].map((step) => ({ step: String(step) })),
    );
  });

  it('goes on evaluating after a migration adds columns to alerts, events, attempts, mutes and unread files under it', async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-cols');
    const run = store.runs.ensure('gpu-cols/grpo', '/runs/grpo');
    const file = store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
    // a mute, as the bot (another process) writes it
    await rows(
      url,
      `INSERT INTO silences (run, starts_at, ends_at, author, reason)
        VALUES ('gpu-cols/*', 0, 9000, 'ana', 'sweep')`,
    );
    const change = (step: number) => ({ step, at: 500, severity: 'warning', summary: `at ${step}`, details: {} });
    /** the rows' keys: each table's listed columns, never one a migration added */
    const keyed = <T extends object>(list: string, got: T[]): T[] => {
      for (const r of got) expect(Object.keys(r).sort()).toEqual(list.split(', ').sort());
      return got;
    };
    /** A batch with an error at its first step (and the end of training at its last), and inside it what the rules
     * read and write: every statement of the live store that reads those tables. */
    const round = (steps: number[], rule: string, finished = false) => {
      const [first, last] = [steps[0]!, steps.at(-1)!];
      const b: Batch = {
        ...batchOf(run.id, file.id, steps, last * 10),
        events: [
          { step: first, kind: 'error', title: `oom at ${first}`, text: 'OOM', fatal: false },
          ...(finished ? [{ step: last, kind: 'finished' as const, title: 'done', text: 'finished' }] : []),
        ],
      };
      const reads = () => {
        // the first two from the batch's round trip (liveWorker.ts runFacts), the rest by statements of their own
        const announced = keyed(alertColumns(), store.alerts.announceable(run.id));
        const attempts = keyed(attemptColumns(), store.attempts.list(run.id));
        const created = keyed(alertColumns(), [store.alerts.create(run.id, rule, 'loss', 'pending', change(first))]);
        store.alerts.fire(created[0]!.id, change(last));
        const open = keyed(alertColumns(), store.alerts.openOf(run.id));
        const byId = keyed(alertColumns(), [store.alerts.byId(created[0]!.id)!]);
        const announceable = keyed(alertColumns(), store.alerts.announceable(run.id));
        const events = store.events.after(run.id, ['error'], 0);
        const event = [store.events.byId(events[0]!.id)];
        const ended = [store.events.finished(run.id)];
        const listed = keyed(attemptColumns(), store.attempts.list(run.id));
        const replaying = [store.attempts.replaying(run.id, last)];
        const muted = keyed(silenceColumns(), store.silences.active(600));
        store.unread.note({
          path: `/runs/grpo/notes-${first}.txt`,
          run: 'gpu-cols/grpo',
          run_dir: '/runs/grpo',
          rel_path: `notes-${first}.txt`,
          reason: 'no format',
          size: first,
          seen_at: 500,
        });
        return {
          announced,
          attempts,
          created,
          open,
          byId,
          announceable,
          events,
          event,
          ended,
          listed,
          replaying,
          muted,
        };
      };
      let read: ReturnType<typeof reads> | undefined;
      store.commit(b, 0, () => void (read = reads()));
      return read!;
    };
    const ids = (got: Array<{ id: number }>) => got.map((r) => r.id);

    const before = round([1, 2], 'rise');
    // what a newer rlwatch's migration would do while this watcher runs
    await rows(
      url,
      ['alerts', 'events', 'attempts', 'silences', 'unread_files']
        .map((t) => `ALTER TABLE ${t} ADD COLUMN added_later integer DEFAULT 7`)
        .join('; '),
    );
    const after = round([3, 4], 'nan', true);

    const [rise, nan] = [before.created[0]!.id, after.created[0]!.id];
    expect(before.created[0]).toMatchObject({ run_id: run.id, rule: 'rise', state: 'pending', summary: 'at 1' });
    expect(after.byId[0]).toMatchObject({ id: nan, rule: 'nan', state: 'firing', fired_step: 4, summary: 'at 4' });
    expect([before.announced, after.announced].map(ids)).toEqual([[], [rise]]);
    expect([before.open, after.open, before.announceable, after.announceable].map(ids)).toEqual([
      [rise],
      [rise, nan],
      [rise],
      [rise, nan],
    ]);
    const attempt = { run_id: run.id, attempt: 1, resumed_step: 1, at: 1_000, rewound: 1 };
    for (const [r, last] of [
      [before, 2],
      [after, 4],
    ] as const) {
      expect([r.attempts, r.listed]).toEqual([[{ ...attempt, last_step: last }], [{ ...attempt, last_step: last }]]);
    }
    expect([before.replaying, after.replaying]).toEqual([[null], [null]]);
    expect(after.events.map((e) => e.title)).toEqual(['oom at 1', 'oom at 3']);
    expect([before.event, after.event]).toEqual([[before.events[0]], [after.events[0]]]);
    expect(after.events[0]).toEqual(before.events[0]);
    expect([before.ended, after.ended]).toEqual([[undefined], [expect.objectContaining({ title: 'done', step: 4 })]]);
    expect([before.muted, after.muted]).toEqual([
      [expect.objectContaining({ run: 'gpu-cols/*', author: 'ana', reason: 'sweep' })],
      before.muted,
    ]);
    expect(await rows(url, 'SELECT rel_path, size, added_later FROM unread_files ORDER BY size')).toEqual([
      { rel_path: 'notes-1.txt', size: '1', added_later: 7 },
      { rel_path: 'notes-3.txt', size: '3', added_later: 7 },
    ]);
  });

  it('survives its connection terminated: the call finding it lost names the server; later ones work', async () => {
    const url = await freshPgDatabase();
    const store = await open(url, 'gpu-term');
    const run = store.runs.ensure('gpu-term/grpo', '/runs/grpo');

    // in the middle of a transaction: what it wrote went with the connection, so the next call of it throws
    let lost: unknown;
    try {
      store.transaction(() => {
        store.outbox.add(run.id, 'console', { n: 'lost' }, 1);
        terminateWatcher(url, 'rlwatch watcher gpu-term');
        store.outbox.add(run.id, 'console', { n: 'after' }, 2);
      });
    } catch (err) {
      lost = err;
    }
    expect(lost).toBeInstanceOf(PostgresError);
    expect((lost as Error).message).toMatch(/^lost the connection to postgres:\/\/[^ ]*127\.0\.0\.1[^ ]*: /);
    expect((lost as Error).message).not.toContain(new URL(url).password);
    expect(isDatabaseError(lost)).toBe(true);
    // the next call connects again; nothing of the transaction was kept
    expect(store.runs.list().map((r) => r.name)).toEqual(['gpu-term/grpo']);
    expect(await rows(url, 'SELECT payload FROM outbox')).toEqual([]);

    // lost while idle: nothing was under way, the next call connects again and works
    terminateWatcher(url, 'rlwatch watcher gpu-term');
    store.transaction(() => store.outbox.add(run.id, 'console', { n: 'kept' }, 3));
    expect(await rows(url, 'SELECT payload FROM outbox')).toEqual([{ payload: '{"n":"kept"}' }]);
  });
});

/**
 * Ends the watcher's connection from another process, as an administrator would, and returns once the server has
 * closed it; synchronous, as the watcher's thread is while it waits for a call.
 */
function terminateWatcher(url: string, name: string): void {
  const script = `
    import pg from 'pg';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
    const c = new pg.Client({ connectionString: process.argv[1] });
    await c.connect();
    const q = "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1";
    const r = await c.query(q, [process.argv[2]]);
    if (r.rows.length !== 1) throw new Error('no such connection');
    const alive = 'SELECT 1 FROM pg_stat_activity WHERE application_name = $1';
    while ((await c.query(alive, [process.argv[2]])).rows.length) {
      await new Promise((next) => setTimeout(next, 20));
    }
    await c.end();`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script, url, name], { cwd: ROOT, stdio: 'pipe' });
}
