import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import { alertCards } from '../../src/notify/cards.ts';
import { Store } from '../../src/store/store.ts';
import { tempDir } from '../helpers.ts';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

describe('alert cards of a burst', () => {
  it('two alerts of the same step show its best and worst generations once, on the first card', () => {
    const store = Store.open(join(tempDir('rlw-cards-'), 'a.db'));
    stores.push(store);
    const run = store.runs.ensure('grpo', '/runs/grpo');
    const change = { step: 40, at: 1, severity: 'critical', summary: 's', details: {} };
    const a = store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', change);
    const b = store.alerts.create(run.id, 'truncation', 'clipped_ratio', 'firing', { ...change, severity: 'warning' });
    const examples = { step: 40, best: [{ reward: 1, breakdown: {}, completion: 'the best answer' }], worst: [{ reward: 0, breakdown: {}, completion: 'the worst' }] };
    const item = (alertId: number, rule: string): NotificationItem => ({
      alertId, kind: 'firing', severity: 'critical', rule, metric: 'activity', summary: `${rule} fired`, step: 40, epoch: null, recent: [], examples,
    });
    const n: Notification = { run: 'grpo', items: [item(a.id, 'mode_collapse'), item(b.id, 'truncation')] };
    const [first, second] = alertCards(store, n);
    expect(first!.examples.map((e) => e.code)).toEqual(['the best answer', 'the worst']);
    expect(second!.examples).toEqual([]);
    expect(second!.note).toBe('generations of step 40: on the first card');
    // a card of another step keeps its own
    const other: Notification = { run: 'grpo', items: [item(a.id, 'mode_collapse'), { ...item(b.id, 'truncation'), examples: { ...examples, step: 41 } }] };
    expect(alertCards(store, other)[1]!.examples).toHaveLength(2);
  });
});
