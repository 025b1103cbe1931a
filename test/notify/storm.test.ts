import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import type { AlertCard } from '../../src/notify/cards.ts';
import { queueCardUpdates } from '../../src/notify/cardUpdates.ts';
import { deliverCards, type CardChannel } from '../../src/notify/delivery.ts';
import { DeliveryError, Dispatcher, type Target } from '../../src/notify/dispatcher.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { alertMail } from '../../src/platforms/email/message.ts';
import { feishuCard } from '../../src/platforms/feishu/card.ts';
import { mattermostMessage } from '../../src/platforms/mattermost/message.ts';
import { teamsMessage } from '../../src/platforms/teams/card.ts';
import { tempDir } from '../helpers.ts';

const RUNS = 20;
const PER_RUN = 500;
/** the engine's rows of one run: one per batch, as the storm's two batches of saturated reward functions wrote them */
const ROW_ITEMS = 250;
/** runs with one critical alert too, written last (a storm's first cards in order would not show it) */
const CRITICAL_RUNS = 5;
const TARGET = 'discord:C1';
const SUMMARY = /^\+(\d+) more alerts on (.+?)(: all resolved)?$/;

interface Sent {
  kind: 'post' | 'edit' | 'reply';
  ref: string;
  cards: AlertCard[];
}

/** A chat channel that records what it is asked to send, answering 429 while `limited`. */
function channel(sent: Sent[], state: { limited: boolean; refused: number }): CardChannel {
  let n = 0;
  const answer = (): void => {
    if (!state.limited) return;
    state.refused++;
    throw new DeliveryError('rate limited', 5);
  };
  return {
    post: async (cards) => {
      answer();
      const ref = `m${++n}`;
      sent.push({ kind: 'post', ref, cards });
      return ref;
    },
    edit: async (ref, cards) => {
      answer();
      sent.push({ kind: 'edit', ref, cards });
    },
    replyResolved: async (ref, cards) => {
      answer();
      sent.push({ kind: 'reply', ref, cards });
      return `r${++n}`;
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('an alert storm through the dispatcher and a rate-limited chat channel', () => {
  it('10,000 alerts of 20 runs go out as a bounded number of messages, every one accounted for', async () => {
    const store = Store.open(join(tempDir(), 'rlwatch.db'));
    const async = new SqliteAsyncStore(store);
    const sent: Sent[] = [];
    const limit = { limited: true, refused: 0 };
    const ch = channel(sent, limit);
    const target: Target = {
      name: TARGET,
      edits: true,
      deliver: (n, key, runId) => deliverCards(async.chat, TARGET, n, { key, runId }, ch),
    };
    const d = new Dispatcher(async, [target], { baseBackoffMs: 5, maxBackoffMs: 5 });
    const drained = async (): Promise<void> => {
      await d.kick();
      await vi.waitFor(() => expect(store.outbox.open()).toHaveLength(0), { timeout: 20_000, interval: 20 });
    };

    // the storm: every reward function of every run saturates at step 40; the engine writes a row per batch
    const items = new Map<number, NotificationItem>();
    const runs: Array<{ id: number; name: string; alerts: NotificationItem[] }> = [];
    const points = [
      { step: 39, value: 0.9 },
      { step: 40, value: 1 },
    ];
    for (let r = 0; r < RUNS; r++) {
      const name = `exp/run-${r}`;
      const run = store.runs.ensure(name, `/runs/${name}`);
      const alerts: NotificationItem[] = [];
      for (let k = 0; k < PER_RUN; k++) {
        const isCritical = k === PER_RUN - 1 && r < CRITICAL_RUNS;
        const [rule, metric, severity] = isCritical
          ? ['grad_explosion', 'grad_norm', 'critical']
          : ['reward_saturated', `rewards/fn${k}`, 'warning'];
        const change = { step: 40, at: Date.now(), severity, summary: rule, details: {} };
        const { id } = store.alerts.create(run.id, rule, metric, 'firing', change);
        const item: NotificationItem = {
          alertId: id,
          kind: 'firing',
          severity,
          rule,
          metric,
          summary: `${metric} saturated`,
          step: 40,
          epoch: null,
          recent: [0.9, 1],
          examples: null,
          chart: { points, threshold: null },
          state: { startsAt: 0, firedStep: 40, ack: null, muted: false, resolved: null },
        };
        alerts.push(item);
        items.set(id, item);
      }
      runs.push({ id: run.id, name, alerts });
    }
    // Discord answers 429 to everything while the storm is written: the rows wait, tried again and again
    for (const run of runs) {
      for (let i = 0; i < PER_RUN; i += ROW_ITEMS) {
        await async.outbox.add(
          run.id,
          TARGET,
          { run: run.name, items: run.alerts.slice(i, i + ROW_ITEMS) },
          Date.now(),
        );
        await d.kick();
      }
    }
    await vi.waitFor(() => expect(limit.refused).toBeGreaterThan(3), { timeout: 5000, interval: 5 });
    limit.limited = false;
    await drained();

    const posts = sent.filter((s) => s.kind === 'post');
    // a message per row: the storm's two batches of each run
    expect(posts).toHaveLength(RUNS * (PER_RUN / ROW_ITEMS));
    const carded = new Set<number>();
    let summed = 0;
    let charts = 0;
    for (const p of posts) {
      const summaries = p.cards.filter((c) => SUMMARY.test(c.title));
      expect(summaries).toHaveLength(1);
      const [, k, run] = SUMMARY.exec(summaries[0]!.title)!;
      const shown = p.cards.filter((c) => !SUMMARY.test(c.title));
      // what the summary names adds up to what it sums up, and all of one run
      const perRule = [...summaries[0]!.summary.matchAll(/(\w+) × (\d+)/g)].reduce((a, m) => a + Number(m[2]), 0);
      expect(perRule).toBe(Number(k));
      expect(shown.length + Number(k)).toBe(ROW_ITEMS);
      expect(new Set(shown.map((c) => c.run))).toEqual(new Set([run]));
      for (const c of shown) carded.add(c.alertId);
      summed += Number(k);
      // one chart per message at most, or one per critical card (a run with a critical alert waiting draws only those)
      const criticals = shown.filter((c) => c.severity === 'critical').length;
      expect(shown.filter((c) => c.chart).length).toBeLessThanOrEqual(Math.max(1, criticals));
      charts += shown.filter((c) => c.chart).length;
    }
    expect(carded.size + summed).toBe(RUNS * PER_RUN);
    // the runs without a critical alert: a chart on their first card; with one: on the critical card alone
    expect(charts).toBe((RUNS - CRITICAL_RUNS) * (PER_RUN / ROW_ITEMS) + CRITICAL_RUNS);
    // every alert is in the record of exactly one message (what a resolution or an ack edits)
    const recorded = store.db.prepare('SELECT count(*) AS n, count(DISTINCT alert_id) AS d FROM alert_messages').get();
    expect(recorded).toEqual({ n: RUNS * PER_RUN, d: RUNS * PER_RUN });
    // a critical alert is never summed up
    const criticalIds = [...items.values()].filter((i) => i.severity === 'critical').map((i) => i.alertId);
    expect(criticalIds).toHaveLength(CRITICAL_RUNS);
    for (const id of criticalIds) expect(carded.has(id)).toBe(true);

    // an ack of a summed-up alert changes nothing a message shows: no edit; of a shown card: its message's edit
    const run0 = runs[0]!;
    const shownId = run0.alerts[0]!.alertId;
    const summedId = run0.alerts[100]!.alertId;
    const before = sent.length;
    for (const id of [summedId, shownId]) {
      await async.transaction(async (tx) => {
        await tx.alerts.ack(id, { id: '@ops', name: 'ops' }, null, Date.now());
        await queueCardUpdates(tx, [id], Date.now());
      });
    }
    await drained();
    expect(sent.slice(before).map((s) => s.kind)).toEqual(['edit']);
    const acked = sent[before]!.ref;

    // the storm resolves in rows of 50 while Discord answers 429 again
    limit.limited = true;
    for (const run of runs) {
      for (let i = 0; i < PER_RUN; i += 50) {
        const resolved = run.alerts.slice(i, i + 50).map(
          (a): NotificationItem => ({
            ...a,
            kind: 'resolved',
            state: { ...a.state!, resolved: { step: 60, at: Date.now(), summary: 'recovered' } },
          }),
        );
        await async.outbox.add(run.id, TARGET, { run: run.name, items: resolved } satisfies Notification, Date.now());
        await d.kick();
      }
    }
    await vi.waitFor(() => expect(limit.refused).toBeGreaterThan(6), { timeout: 5000, interval: 5 });
    // the edits waiting for a run's messages are one row: all but the one already tried (it may be sent in part)
    const waiting = store.outbox.open();
    expect(waiting.length).toBeLessThanOrEqual(2 * RUNS);
    expect(waiting.reduce((k, r) => k + JSON.parse(r.payload).items.length, 0)).toBe(RUNS * PER_RUN);
    limit.limited = false;
    await drained();
    await d.stop();

    const edits = sent.filter((s) => s.kind === 'edit');
    const replies = sent.filter((s) => s.kind === 'reply');
    // a message is edited once per row that changes what it shows: the row tried first may resolve its first cards,
    // the merged rest shows the last state of all (the ack above was one more, of run 0's first message)
    const perMessage = new Map<string, number>();
    for (const e of edits) perMessage.set(e.ref, (perMessage.get(e.ref) ?? 0) + 1);
    for (const [ref, n] of perMessage) expect(n, ref).toBeLessThanOrEqual(ref === acked ? 3 : 2);
    expect(posts.length + edits.length + replies.length).toBeLessThanOrEqual(200);
    // the last state of every message: all its cards resolved, its summary says so
    const last = new Map<string, AlertCard[]>();
    for (const s of sent) if (s.kind !== 'reply') last.set(s.ref, s.cards);
    for (const cards of last.values()) {
      expect(cards.every((c) => c.status === 'resolved')).toBe(true);
      expect(cards.filter((c) => SUMMARY.exec(c.title)?.[3])).toHaveLength(1);
    }
    store.close();
  }, 60_000);

  it('a storm of critical alerts is never summed up: five critical cards a message, the warnings summed up', async () => {
    const store = Store.open(join(tempDir(), 'rlwatch.db'));
    const async = new SqliteAsyncStore(store);
    const run = store.runs.ensure('exp/hot', '/runs/exp/hot');
    const items: NotificationItem[] = [];
    // warnings first, criticals interleaved: the order the engine wrote them in, not the order they are shown in
    for (let k = 0; k < 42; k++) {
      const severity = k % 3 === 2 ? 'critical' : 'warning';
      const rule = severity === 'critical' ? 'grad_explosion' : 'reward_saturated';
      const { id } = store.alerts.create(run.id, rule, `m${k}`, 'firing', {
        step: 1,
        at: 1,
        severity,
        summary: rule,
        details: {},
      });
      items.push({
        alertId: id,
        kind: 'firing',
        severity,
        rule,
        metric: `m${k}`,
        summary: rule,
        step: 1,
        epoch: null,
        recent: [],
        examples: null,
      });
    }
    const sent: Sent[] = [];
    const ch = channel(sent, { limited: false, refused: 0 });
    await deliverCards(async.chat, TARGET, { run: 'exp/hot', items }, { key: '1', runId: run.id }, ch);
    const criticals = items.filter((i) => i.severity === 'critical').map((i) => i.alertId);
    const warnings = items.length - criticals.length;
    expect(sent.map((s) => s.kind)).toEqual(Array(Math.ceil(criticals.length / 5)).fill('post'));
    const cards = sent.flatMap((s) => s.cards);
    expect(
      cards
        .filter((c) => c.severity === 'critical')
        .map((c) => c.alertId)
        .sort((a, b) => a - b),
    ).toEqual(criticals);
    // the first message: its five critical cards, then the warnings as one summary
    const summary = sent[0]!.cards.at(-1)!;
    expect(SUMMARY.exec(summary.title)?.[1]).toBe(String(warnings));
    expect(summary.summary).toBe(`reward_saturated × ${warnings}`);
    expect(sent.slice(1).every((s) => s.cards.every((c) => c.severity === 'critical'))).toBe(true);
    store.close();
  });

  it('a storm row to a platform that cannot edit (Teams, Mattermost, Feishu, email) is five cards and a summary', async () => {
    const items: NotificationItem[] = Array.from({ length: 500 }, (_, k) => ({
      alertId: k + 1,
      kind: 'firing',
      severity: 'warning',
      rule: k < 400 ? 'reward_saturated' : 'reward_trend',
      metric: `rewards/fn${k}`,
      summary: `fn${k}`,
      step: 40,
      epoch: null,
      recent: [],
      examples: null,
    }));
    const n: Notification = { run: 'exp/wide', items };
    const summed = '+495 more alerts on exp/wide';
    const text = (v: unknown): string => JSON.stringify(v);
    expect(text(teamsMessage(n))).toContain(summed);
    const mm = mattermostMessage(n) as { attachments: unknown[] };
    expect(mm.attachments).toHaveLength(6);
    expect(text(mm)).toContain('reward_saturated × 395, reward_trend × 100');
    expect(text(feishuCard(n))).toContain('500 alerts · exp/wide');
    const mail = await alertMail(n, 'example.org');
    expect(mail.subject).toBe('[rlwatch] 500 alerts · exp/wide');
    expect(mail.text.split('\n\n----\n\n')).toHaveLength(6);
  });
});
