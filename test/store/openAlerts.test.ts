/**
 * The open alerts the store holds in memory between evaluations (alerts.ts, `openOf`) are exactly the table's:
 * after another connection commits (an ack by `rlwatch ack` beside `start`), and after a transaction that created
 * or changed one rolls back: the engine's (Store.transaction), a batch's (Store.commit), a command's own
 * db.transaction. Real SQLite file, two connections.
 */
import { describe, expect, it } from 'vitest';
import type { AlertChange, AlertRow } from '../../src/store/alerts.ts';
import type { Batch } from '../../src/store/sqlite/store.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

const NOW = 1_800_000_000_000;
const change: AlertChange = { step: 3, at: NOW, severity: 'critical', summary: 'frac_zero_std 1 > 0.8', details: {} };

function setup() {
  const { path, store } = freshStore({ now: () => NOW });
  const run = store.runs.ensure('job', '/runs/job');
  const first = store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', change);
  /** the table's open alerts of the run, read past what the store holds */
  const open = store.db.prepare(`SELECT * FROM alerts WHERE run_id = ? AND state != 'resolved' ORDER BY id`);
  const table = (): AlertRow[] => open.all(run.id) as AlertRow[];
  expect(store.alerts.openOf(run.id)).toEqual(table()); // now held
  return { path, store, run, first, table };
}

/** One empty batch of the run's file: a commit whose transaction the test makes fail. */
function emptyBatch(store: Store, runId: number): Batch {
  const file = store.files.add(runId, '/runs/job/learning.log', 'learningLog');
  return {
    runId,
    fileId: file.id,
    metrics: [],
    examples: [],
    skips: new Map(),
    progress: { dev: 1, ino: 1, offset: 10, size: 10, mtimeMs: NOW, seq: 0, lines: 1, records: 0 },
  };
}

describe('the open alerts held in memory', () => {
  it('are read again once another connection has committed: its ack is seen at the next read', () => {
    const { path, store, run, first, table } = setup();
    const other = Store.open(path);
    other.alerts.ack(first.id, { id: 'U1', name: 'ana' }, 'looking', NOW);
    other.close();
    expect(store.alerts.openOf(run.id)).toEqual(table());
    expect(store.alerts.openOf(run.id)[0]).toMatchObject({ acked_by: 'U1', acked_by_name: 'ana' });
    store.close();
  });

  it('keep nothing of an engine transaction that rolled back', () => {
    const { store, run, table } = setup();
    expect(() =>
      store.transaction(() => {
        store.alerts.create(run.id, 'grad_explosion', 'grad_norm', 'pending', change);
        expect(store.alerts.openOf(run.id)).toHaveLength(2);
        throw new Error('a rule failed');
      }),
    ).toThrow('a rule failed');
    expect(store.alerts.openOf(run.id)).toEqual(table());
    expect(table()).toHaveLength(1);
    store.close();
  });

  it("keep nothing of a batch's transaction that rolled back after its rules ran", () => {
    const { store, run, first, table } = setup();
    const batch = emptyBatch(store, run.id);
    expect(() =>
      store.commit(batch, 2, () => {
        store.alerts.resolve(first.id, { ...change, step: 4, summary: 'frac_zero_std 0.1' });
        store.alerts.create(run.id, 'grad_explosion', 'grad_norm', 'firing', change);
        expect(store.alerts.openOf(run.id).map((a) => a.rule)).toEqual(['grad_explosion']);
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(store.alerts.openOf(run.id)).toEqual(table());
    expect(table().map((a) => [a.rule, a.state])).toEqual([['mode_collapse', 'firing']]);
    store.close();
  });

  it('see an ack made through this same store (a bot in the start process), and nothing of one rolled back', () => {
    const { store, run, first, table } = setup();
    expect(() =>
      store.db.transaction(() => {
        store.alerts.ack(first.id, { id: 'U1', name: 'ana' }, null, NOW);
        throw new Error('the card update failed');
      })(),
    ).toThrow('the card update failed');
    expect(store.alerts.openOf(run.id)).toEqual(table());
    expect(store.alerts.openOf(run.id)[0]!.acked_by).toBeNull();
    store.db.transaction(() => store.alerts.ack(first.id, { id: 'U2', name: 'bo' }, null, NOW))();
    expect(store.alerts.openOf(run.id)).toEqual(table());
    expect(store.alerts.openOf(run.id)[0]!.acked_by).toBe('U2');
    store.close();
  });

  it("follow the store's own firings, announcements, resolutions and drops: exactly the table's rows", () => {
    const { store, run, first, table } = setup();
    const held = (): AlertRow[] => store.alerts.openOf(run.id);
    const pending = store.alerts.create(run.id, 'grad_explosion', 'grad_norm', 'pending', { ...change, step: 4 });
    const other = store.alerts.create(run.id, 'kl_spike', 'kl', 'pending', { ...change, step: 4 });
    expect(held()).toEqual(table());
    const before = held();
    store.alerts.fire(pending.id, { ...change, step: 5, severity: 'warning', details: { evidence: { n: 2 } } });
    expect(held()).toEqual(table());
    expect(before[1]).toMatchObject({ state: 'pending' }); // a row handed out earlier stays as it was read
    store.alerts.markNotified(pending.id, 'firing', NOW + 1);
    expect(held()).toEqual(table());
    store.alerts.resolve(first.id, { ...change, step: 6 });
    expect(held()).toEqual(table());
    store.alerts.drop(other.id);
    expect(held()).toEqual(table());
    expect(held().map((a) => [a.id, a.state, a.notified_state])).toEqual([[pending.id, 'firing', 'firing']]);
    store.close();
  });

  it('follow an escalation at once: one row, its new severity, summary and details, its announcement cleared', () => {
    const { store, run, table } = setup();
    const warning = { ...change, step: 4, severity: 'warning', summary: 'frac_zero_std 0.6 > 0.5' };
    const a = store.alerts.create(run.id, 'collapse_levels', 'frac_zero_std', 'firing', warning);
    store.alerts.ack(a.id, { id: 'U1', name: 'ana' }, 'looking', NOW + 1);
    store.alerts.markNotified(a.id, 'firing', NOW + 2);
    const before = store.alerts.byId(a.id)!;
    const critical = {
      step: 9,
      at: NOW + 5,
      severity: 'critical',
      summary: 'frac_zero_std 0.9 > 0.8',
      details: { n: 3 },
    };
    store.transaction(() => {
      store.alerts.openOf(run.id); // as the rules look their alerts up first: held from here
      store.alerts.escalate(a.id, critical);
      // read back in the same evaluation, from what the store holds
      expect(store.alerts.openOf(run.id).find((x) => x.id === a.id)).toMatchObject({ severity: 'critical' });
    });
    expect(store.alerts.openOf(run.id)).toEqual(table());
    expect(store.alerts.byId(a.id)).toEqual({
      ...before,
      severity: 'critical',
      summary: 'frac_zero_std 0.9 > 0.8',
      details: '{"n":3}',
      fired_at: NOW + 5,
      notified_state: null,
      notified_at: null,
    });
    expect(before).toMatchObject({ fired_step: 4, started_step: 4, acked_by: 'U1', notified_state: 'firing' });
    // the next announcement tells it as firing again
    expect(store.alerts.announceable(run.id).find((x) => x.id === a.id)).toEqual(store.alerts.byId(a.id));
    expect(store.alerts.events(a.id).map((e) => [e.state, e.step, JSON.parse(e.details)])).toEqual([
      ['firing', 4, { summary: 'frac_zero_std 0.6 > 0.5' }],
      ['firing', 9, { summary: 'frac_zero_std 0.9 > 0.8', n: 3 }],
    ]);
    store.close();
  });

  it('leave an alert that does not fire as it is when asked to escalate it', () => {
    const { store, run, first, table } = setup();
    const pending = store.alerts.create(run.id, 'grad_explosion', 'grad_norm', 'pending', { ...change, step: 4 });
    store.alerts.resolve(first.id, { ...change, step: 5 });
    const rows = [store.alerts.byId(pending.id), store.alerts.byId(first.id)];
    const events = [store.alerts.events(pending.id), store.alerts.events(first.id)];
    store.alerts.escalate(pending.id, { ...change, step: 6, summary: 'worse' });
    store.alerts.escalate(first.id, { ...change, step: 6, summary: 'worse' });
    expect([store.alerts.byId(pending.id), store.alerts.byId(first.id)]).toEqual(rows);
    expect([store.alerts.events(pending.id), store.alerts.events(first.id)]).toEqual(events);
    expect(store.alerts.openOf(run.id)).toEqual(table());
    store.close();
  });
});
