import { describe, expect, it } from 'vitest';
import { alertCards } from '../../src/notify/cards.ts';
import { renderNotification } from '../../src/platforms/terminal/terminal.ts';
import { KNOWLEDGE } from '../../src/engine/presets/knowledge.ts';
import { Trace, presetOnly, rulesOf, times } from '../engine/trace.ts';

describe('the "try:" hint on alert cards', () => {
  it('a firing alert carries its rule\'s hint from the knowledge base; the terminal and the card show it', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(3, { frac_zero_std: 1 }));
    const [row] = t.outbox();
    const item = row!.notification.items[0]!;
    expect(item.rule).toBe('mode_collapse');
    expect(item.hint).toBe(KNOWLEDGE.mode_collapse!.hint);
    expect(renderNotification(row!.notification, false).split('\n')).toContain(`  try: ${KNOWLEDGE.mode_collapse!.hint}`);
    expect(alertCards(row!.notification)[0]!.fields).toContainEqual({ name: 'Try', value: KNOWLEDGE.mode_collapse!.hint });
  });

  it('a resolution and a rule the user added carry none', () => {
    const t = new Trace({ book: rulesOf({ id: 'my_rule', kind: 'threshold', metric: 'x', op: '>', value: 1, for: 1, recoverFor: 1 }) });
    t.feed([{ x: 2 }, { x: 0 }]);
    const items = t.outbox().flatMap((r) => r.notification.items);
    expect(items.map((i) => i.kind)).toEqual(['firing', 'resolved']);
    expect(items.every((i) => i.hint === undefined)).toBe(true);
    expect(renderNotification(t.outbox()[0]!.notification, false)).not.toContain('try:');
  });
});
