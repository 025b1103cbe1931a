import { describe, expect, it } from 'vitest';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import { alertCards } from '../../src/notify/cards.ts';

describe('alert cards of a burst', () => {
  it('two alerts of the same step show its best and worst generations once, on the first card', () => {
    const [a, b] = [{ id: 1 }, { id: 2 }];
    const examples = {
      step: 40,
      best: [{ reward: 1, breakdown: {}, completion: 'the best answer' }],
      worst: [{ reward: 0, breakdown: {}, completion: 'the worst' }],
    };
    const item = (alertId: number, rule: string): NotificationItem => ({
      alertId,
      kind: 'firing',
      severity: 'critical',
      rule,
      metric: 'activity',
      summary: `${rule} fired`,
      step: 40,
      epoch: null,
      recent: [],
      examples,
    });
    const n: Notification = { run: 'grpo', items: [item(a.id, 'mode_collapse'), item(b.id, 'truncation')] };
    const [first, second] = alertCards(n);
    expect(first!.examples.map((e) => e.code)).toEqual(['the best answer', 'the worst']);
    expect(second!.examples).toEqual([]);
    expect(second!.note).toBe('generations of step 40: on the first card');
    // a card of another step keeps its own
    const other: Notification = {
      run: 'grpo',
      items: [item(a.id, 'mode_collapse'), { ...item(b.id, 'truncation'), examples: { ...examples, step: 41 } }],
    };
    expect(alertCards(other)[1]!.examples).toHaveLength(2);
  });
});
