import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import { deliverCards, type CardChannel } from '../../src/notify/delivery.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

describe('deliverCards: one outbox row to a chat channel', () => {
  it('posts the new alerts of a row before it edits the cards of older ones', async () => {
    const store = Store.open(join(tempDir(), 'rlwatch.db'));
    const async = new SqliteAsyncStore(store);
    const run = store.runs.ensure('grpo', '/runs/grpo');
    const alert = (rule: string, severity: string): NotificationItem => {
      const change = { step: 1, at: Date.now(), severity, summary: rule, details: {} };
      const { id } = store.alerts.create(run.id, rule, 'm', 'firing', change);
      return {
        alertId: id,
        kind: 'firing',
        severity,
        rule,
        metric: 'm',
        summary: rule,
        step: 1,
        epoch: null,
        recent: [],
        examples: null,
      };
    };
    const calls: string[] = [];
    let posted = 0;
    const channel: CardChannel = {
      post: async (cards) => (calls.push(`post ${cards.map((c) => c.alertId).join(',')}`), `m${++posted}`),
      edit: async (ref) => void calls.push(`edit ${ref}`),
      replyResolved: async (ref) => (calls.push(`reply ${ref}`), `r${ref}`),
    };
    const deliver = (items: NotificationItem[], key: string): Promise<void> =>
      deliverCards(
        async.chat,
        'discord:C1',
        { run: 'grpo', items } satisfies Notification,
        { key, runId: run.id },
        channel,
      );
    const warning = alert('milestone_reward', 'warning');
    await deliver([warning], '1');
    const spike = alert('grad_explosion', 'critical');
    await deliver([{ ...warning, kind: 'resolved', step: 5 }, spike], '2');
    expect(calls).toEqual([`post ${warning.alertId}`, `post ${spike.alertId}`, 'edit m1', 'reply m1']);
    // each part once: a retry of the row posts and replies nothing again
    await deliver([{ ...warning, kind: 'resolved', step: 5 }, spike], '2');
    expect(calls.filter((c) => !c.startsWith('edit'))).toEqual([
      `post ${warning.alertId}`,
      `post ${spike.alertId}`,
      'reply m1',
    ]);
    store.close();
  });
});
