import { describe, expect, it } from 'vitest';
import { consoleTarget, renderNotification } from '../../src/platforms/terminal/terminal.ts';
import type { Notification, NotificationItem } from '../../src/engine/notification.ts';
import { Trace, presetOnly } from './trace.ts';

const ITEM: NotificationItem = {
  alertId: 7,
  kind: 'firing',
  severity: 'critical',
  rule: 'mode_collapse',
  metric: 'frac_zero_std',
  summary: 'frac_zero_std 1 > 0.8 for 3 steps',
  step: 120,
  epoch: 0.5,
  recent: [0, 0.5, 1, 1],
  examples: null,
};
const note = (...items: Array<Partial<NotificationItem>>): Notification => ({
  run: 'run-a',
  items: items.map((i) => ({ ...ITEM, ...i })),
});

describe('renderNotification, plain', () => {
  it('a firing item: severity, rule, run, step, epoch, summary, sparkline and the ack hint', () => {
    expect(renderNotification(note({}), false)).toBe(
      [
        '[CRITICAL] mode_collapse FIRING #7 · run-a · step 120 · epoch 0.5',
        '  frac_zero_std 1 > 0.8 for 3 steps',
        '  frac_zero_std ▁▅██ (last 4)',
        '  rlwatch ack 7   rlwatch mute --run run-a --rule mode_collapse --for 1h',
      ].join('\n'),
    );
  });

  it('has no escape codes without color, and has them with', () => {
    expect(renderNotification(note({}), false)).not.toContain('\x1b');
    expect(renderNotification(note({}), true)).toContain('\x1b[31m[CRITICAL]\x1b[0m');
  });

  it('a repeat says STILL FIRING; a resolution says RESOLVED and has no ack hint', () => {
    const text = renderNotification(
      note(
        { kind: 'repeat', severity: 'warning', alertId: 1 },
        { kind: 'resolved', alertId: 2, summary: 'frac_zero_std 0.1: back past 0.5 for 3 steps' },
      ),
      false,
    );
    expect(text).toContain('[WARNING] mode_collapse STILL FIRING #1 · run-a · step 120');
    expect(text).toContain('[CRITICAL] mode_collapse RESOLVED #2 · run-a · step 120');
    expect(text).toContain('rlwatch ack 1 ');
    expect(text).not.toContain('rlwatch ack 2');
  });

  it('leaves out the epoch when unknown and the sparkline with fewer than 2 values', () => {
    const text = renderNotification(note({ epoch: null, recent: [1] }), false);
    expect(text.split('\n')[0]).toBe('[CRITICAL] mode_collapse FIRING #7 · run-a · step 120');
    expect(text).not.toContain('(last');
  });

  it('shows the best and worst example of the step', () => {
    const text = renderNotification(
      note({
        examples: {
          step: 118,
          best: [{ reward: 0.9, breakdown: { syntax: 0.5 }, completion: 'let x =\n  1' }],
          worst: [{ reward: 0.05, breakdown: {}, completion: 'aaaa' }],
        },
      }),
      false,
    );
    expect(text).toContain('  best of step 118: 0.9 (syntax 0.5): let x = 1');
    expect(text).toContain('  worst of step 118: 0.05: aaaa');
  });
});

describe('engine → console', () => {
  it('renders what the engine wrote to the outbox', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed([0, 0.3, 1, 1, 1].map((v, i) => ({ frac_zero_std: v, epoch: (i + 1) / 10 })));
    const written: string[] = [];
    await consoleTarget((s) => written.push(s), false).deliver(t.outbox()[0]!.notification, '1', 1, 2);
    const id = t.alert('mode_collapse').id;
    expect(written).toEqual([
      [
        `[CRITICAL] mode_collapse FIRING #${id} · r1 · step 5 · epoch 0.5`,
        '  frac_zero_std 1 > 0.8 for 3 steps',
        '  try: raise the temperature (e.g. 0.9 -> 1.1) and the generations per prompt (e.g. 6 -> 8)',
        '  frac_zero_std ▁▃███ (last 5)',
        `  rlwatch ack ${id}   rlwatch mute --run r1 --rule mode_collapse --for 1h`,
      ].join('\n') + '\n',
    ]);
  });

  it('a notification carries the kept examples of the step, best and worst', async () => {
    const t = new Trace({ book: presetOnly('grad_explosion') });
    t.commit([{ grad_norm: 15.786 }], {
      examples: [
        { step: 1, key: 'a', completion: 'good', reward: 0.9, breakdown: { syntax: 0.9 } },
        { step: 1, key: 'b', completion: 'meh', reward: 0.5, breakdown: {} },
        { step: 1, key: 'c', completion: 'bad', reward: 0.05, breakdown: {} },
      ],
    });
    t.engine.evaluate(t.run.id);
    const item = t.outbox()[0]!.notification.items[0]!;
    expect(item.examples?.step).toBe(1);
    expect(item.examples?.best[0]).toMatchObject({ reward: 0.9, completion: 'good' });
    expect(item.examples?.worst[0]).toMatchObject({ reward: 0.05, completion: 'bad' });
    const text = renderNotification(t.outbox()[0]!.notification, false);
    expect(text).toContain('best of step 1: 0.9 (syntax 0.9): good');
    expect(text).toContain('worst of step 1: 0.05: bad');
  });
});
