/**
 * PgStore after a newer rlwatch's migration adds a column to its tables while it runs (a rolling upgrade): on a
 * watcher's connection, where every statement is prepared (connect.ts `preparing`), and on a pool. Its statements
 * name the columns of the rows they read (rows.ts), so they neither fail with 0A000 ("cached plan must not change
 * result type") nor hand back the new column.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AlertChange } from '../../../src/store/alerts.ts';
import type { Batch } from '../../../src/store/sqlite/store.ts';
import { newClient, preparing } from '../../../src/store/postgres/connect.ts';
import { PgStore } from '../../../src/store/postgres/pgStore.ts';
import {
  alertColumns,
  attemptColumns,
  chatMessageColumns,
  eventColumns,
  fileColumns,
  runColumns,
  silenceColumns,
  unreadColumns,
} from '../../../src/store/postgres/rows.ts';
import { freshPgDatabase, pgRows as rows } from '../../pg/pgTest.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** Each list's table, and the names the list gives (as SQL spells them). */
const LISTS = {
  alerts: alertColumns(),
  attempts: attemptColumns(),
  chat_messages: chatMessageColumns(),
  events: eventColumns(),
  files: fileColumns(),
  runs: runColumns(),
  silences: silenceColumns(),
  unread_files: unreadColumns(),
};
type Table = keyof typeof LISTS;
const names = (table: Table): string[] =>
  LISTS[table]
    .split(', ')
    .map((n) => n.replace(/"/g, ''))
    .sort();

/** What a newer rlwatch's migration would do while this one runs. */
const ALTER_ALL = Object.keys(LISTS)
  .map((t) => `ALTER TABLE ${t} ADD COLUMN added_later integer DEFAULT 7`)
  .join(';');

/** A batch of steps `from`..`to` with a `loss` each; an error at `from` and, with `finished`, the end at `to`. */
function batchOf(runId: number, fileId: number, from: number, to: number, finished = false): Batch {
  const steps = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return {
    runId,
    fileId,
    metrics: steps.map((step) => ({ step, values: new Map([['loss', step / 10]]) })),
    examples: [],
    events: [
      { step: from, kind: 'error', title: `oom at ${from}`, text: 'CUDA out of memory', fatal: false, context: ['x'] },
      ...(finished ? [{ step: to, kind: 'finished' as const, title: 'done', text: 'training finished' }] : []),
    ],
    skips: new Map(),
    progress: {
      dev: 1,
      ino: 2,
      offset: to * 10,
      size: to * 10,
      mtimeMs: 0,
      seq: 0,
      lines: steps.length,
      records: steps.length,
    },
  };
}

const change = (step: number, summary: string): AlertChange => ({
  step,
  at: step * 1_000,
  severity: 'warning',
  summary,
  details: { step },
});

/** Every statement of PgStore that reads rows of those tables whole, on `store` (the open alert of `openRule`);
 * each row's keys are checked against its table's list, and the rows are returned for the caller to check. */
async function readAll(store: PgStore, runId: number, alertId: number, openRule: string, silenceId: number) {
  const keyed = <T extends object>(table: Table, got: T[]): T[] => {
    for (const row of got) expect(Object.keys(row).sort(), table).toEqual(names(table));
    return got;
  };
  const one = <T extends object>(table: Table, got: T | undefined): T => keyed(table, [got!])[0]!;
  const run = one('runs', await store.runs.byId(runId));
  const files = keyed('files', await store.files.ofRun(runId));
  const opened = one('alerts', await store.alerts.open(runId, openRule, 'loss'));
  const byId = one('alerts', await store.alerts.byId(alertId));
  const open = keyed('alerts', await store.alerts.openOf(runId));
  const listed = keyed('alerts', await store.alerts.list({ runId, all: true }));
  const announceable = keyed('alerts', await store.alerts.announceable(runId, 0));
  const attempts = keyed('attempts', await store.attempts.list(runId));
  const replaying = await store.attempts.replaying(runId, 1_000);
  // events are handed out mapped from their rows (events.ts fromRow): the statements read the listed columns
  const events = await store.events.after(runId, ['error', 'finished'], 0);
  const event = await store.events.byId(events[0]!.id);
  const finished = await store.events.finished(runId);
  const silence = one('silences', await store.silences.byId(silenceId));
  const active = keyed('silences', await store.silences.active(150));
  const expired = keyed('silences', await store.silences.expired(250));
  const byDelivery = one('chat_messages', await store.chat.byDelivery('discord:ops', '1/0'));
  const byRef = one('chat_messages', await store.chat.byRef('discord:ops', 'd1'));
  const ofAlert = keyed('chat_messages', await store.chat.ofAlert(alertId, 'discord:ops'));
  const showing = keyed('chat_messages', await store.chat.showing(alertId));
  const unread = keyed('unread_files', await store.unread.list('grpo'));
  return {
    run,
    files,
    opened,
    byId,
    open,
    listed,
    announceable,
    attempts,
    replaying,
    events,
    event,
    finished,
    silence,
    active,
    expired,
    byDelivery,
    byRef,
    ofAlert,
    showing,
    unread,
  };
}

/** The same PgStore on a connection that prepares every statement, as a watcher's worker holds (liveWorker.ts). */
async function onPreparedConnection(url: string): Promise<PgStore> {
  const client = preparing(newClient(url, 'rlwatch test'));
  await client.connect();
  cleanup.push(() => client.end());
  return PgStore.onConnection(url, client, () => 5_000);
}

describe('PgStore after a migration adds columns under it', () => {
  it("names every column of each table in the statements that read its rows, and the rows' types no more", async () => {
    const url = await freshPgDatabase();
    const store = await PgStore.open(url);
    cleanup.push(() => store.close());
    for (const table of Object.keys(LISTS) as Table[]) {
      const made = await rows<{ c: string }>(
        url,
        `SELECT quote_ident(column_name) AS c FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = $1`,
        [table],
      );
      expect(LISTS[table].split(', ').sort(), table).toEqual(made.map((r) => r.c).sort());
    }
  });

  for (const how of ['prepared', 'pooled'] as const) {
    it(`reads and writes alerts, events, attempts, mutes, chat messages and unread files as before (${how})`, async () => {
      const url = await freshPgDatabase();
      const pooled = await PgStore.open(url, { now: () => 5_000 });
      cleanup.push(() => pooled.close());
      const store = how === 'pooled' ? pooled : await onPreparedConnection(url);
      const run = await store.runs.ensure('grpo', '/runs/grpo');
      const file = await store.files.add(run.id, '/runs/grpo/train.log', 'learning.log');
      await store.commit(batchOf(run.id, file.id, 1, 3), 0);
      const a = await store.alerts.create(run.id, 'rise', 'loss', 'firing', change(2, 'loss rose'));
      await store.alerts.markNotified(a.id, 'firing', 2_500);
      const s = await store.silences.add({
        run: 'grpo',
        rule: null,
        severity: null,
        starts_at: 100,
        ends_at: 200,
        author: 'ana',
        reason: 'sweep',
      });
      const posted = { runId: run.id, alertIds: [a.id], payload: { v: 1 }, delivery: '1/0' };
      await store.chat.record('discord:ops', 'd1', posted, 10);
      await store.unread.note(
        {
          path: '/runs/grpo/notes.txt',
          run: 'grpo',
          run_dir: '/runs/grpo',
          rel_path: 'notes.txt',
          reason: 'no format',
          size: 12,
          seen_at: 3_000,
        },
        '',
      );
      // every statement once before the change: on the prepared connection, each is now prepared
      const before = await readAll(store, run.id, a.id, 'rise', s.id);

      await rows(url, ALTER_ALL);

      // the same statements again, and rows written after the change
      await store.commit(batchOf(run.id, file.id, 4, 6, true), 0);
      const b = await store.alerts.create(run.id, 'nan', 'loss', 'pending', change(5, 'loss is NaN'));
      expect(Object.keys(b).sort()).toEqual(names('alerts'));
      await store.alerts.resolve(a.id, change(6, 'loss fell'));
      const t = await store.silences.add({
        run: null,
        rule: 'nan',
        severity: null,
        starts_at: 120,
        ends_at: 300,
        author: 'bo',
        reason: 'known',
      });
      expect(Object.keys(t).sort()).toEqual(names('silences'));
      await store.chat.record('slack:C1', 's1', { ...posted, delivery: '2/0' }, 11);
      const after = await readAll(store, run.id, a.id, 'nan', s.id);

      expect(after.run).toEqual({ ...before.run, last_step: 6, records: 6, batches: 2, updated_at: 5_000 });
      expect(after.files).toEqual([{ ...before.files[0], offset: 60, size: 60, lines: 6, records: 6, last_step: 6 }]);
      expect(before.opened).toMatchObject({
        id: a.id,
        state: 'firing',
        summary: 'loss rose',
        notified_state: 'firing',
      });
      expect(before.byId).toEqual(before.opened);
      expect(after.opened).toMatchObject({ id: b.id, rule: 'nan', state: 'pending', summary: 'loss is NaN' });
      expect(after.byId).toMatchObject({ id: a.id, state: 'resolved', resolved_step: 6, resolved_at: 6_000 });
      expect([before.open, after.open].map((l) => l.map((x) => x.id))).toEqual([[a.id], [b.id]]);
      expect([before.listed, after.listed].map((l) => l.map((x) => x.id))).toEqual([[a.id], [b.id, a.id]]);
      // announced firing, then resolved: announceable both times; the pending one never
      expect([before.announceable, after.announceable].map((l) => l.map((x) => x.id))).toEqual([[a.id], [a.id]]);
      // the first attempt has no earlier one to rewind (rewound from the start)
      expect(after.attempts).toEqual([
        { run_id: run.id, attempt: 1, resumed_step: 1, at: 5_000, last_step: 6, rewound: 1 },
      ]);
      expect([before.replaying, after.replaying]).toEqual([null, null]);
      expect(after.events.map((e) => [e.kind, e.step, e.title])).toEqual([
        ['error', 1, 'oom at 1'],
        ['error', 4, 'oom at 4'],
        ['finished', 6, 'done'],
      ]);
      expect(after.events[0]).toEqual(before.events[0]);
      expect(after.events[0]).toMatchObject({ runId: run.id, text: 'CUDA out of memory', context: ['x'] });
      expect(after.event).toEqual(before.event);
      expect([before.finished, after.finished?.title]).toEqual([undefined, 'done']);
      expect(after.silence).toEqual(before.silence);
      expect(before.silence).toMatchObject({ run: 'grpo', author: 'ana', author_name: 'ana', ended_at: null });
      expect(after.active.map((x) => x.id)).toEqual([s.id, t.id]);
      expect([before.expired, after.expired].map((l) => l.map((x) => x.id))).toEqual([[s.id], [s.id]]);
      expect(after.byDelivery).toEqual(before.byDelivery);
      expect(after.byRef).toMatchObject({ target: 'discord:ops', ref: 'd1', run_id: run.id, posted_at: 10 });
      expect(JSON.parse(after.byRef.alert_ids)).toEqual([a.id]);
      expect(after.ofAlert).toEqual(before.ofAlert);
      expect(after.showing.map((m) => m.ref)).toEqual(['s1', 'd1']);
      expect(after.unread).toEqual([
        {
          path: '/runs/grpo/notes.txt',
          run: 'grpo',
          run_dir: '/runs/grpo',
          rel_path: 'notes.txt',
          reason: 'no format',
          size: 12,
          seen_at: 3_000,
          scope: '',
        },
      ]);
    });
  }
});
