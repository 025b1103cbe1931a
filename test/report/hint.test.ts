import { describe, expect, it } from 'vitest';
import { alertCards } from '../../src/notify/cards.ts';
import { renderNotification } from '../../src/platforms/terminal/terminal.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { KNOWLEDGE } from '../../src/engine/presets/knowledge.ts';
import { reportOf } from '../../src/commands/runReport.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Trace, presetOnly, rulesOf, series, times } from '../engine/trace.ts';

describe('the "try:" hint on alert cards', () => {
  it("a firing alert carries its rule's hint from the knowledge base; the terminal and the card show it", () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(3, { frac_zero_std: 1 }));
    const [row] = t.outbox();
    const item = row!.notification.items[0]!;
    expect(item.rule).toBe('mode_collapse');
    expect(item.hint).toBe(KNOWLEDGE.mode_collapse!.hint);
    expect(renderNotification(row!.notification, false).split('\n')).toContain(
      `  try: ${KNOWLEDGE.mode_collapse!.hint}`,
    );
    expect(alertCards(row!.notification)[0]!.fields).toContainEqual({
      name: 'Try',
      value: KNOWLEDGE.mode_collapse!.hint,
    });
  });

  it('a resolution and a rule the user added carry none', () => {
    const t = new Trace({
      book: rulesOf({ id: 'my_rule', kind: 'threshold', metric: 'x', op: '>', value: 1, for: 1, recoverFor: 1 }),
    });
    t.feed([{ x: 2 }, { x: 0 }]);
    const items = t.outbox().flatMap((r) => r.notification.items);
    expect(items.map((i) => i.kind)).toEqual(['firing', 'resolved']);
    expect(items.every((i) => i.hint === undefined)).toBe(true);
    expect(renderNotification(t.outbox()[0]!.notification, false)).not.toContain('try:');
  });
});

describe('a hint fits what the alert says', () => {
  const book = () =>
    // from the run's first records (the preset's warm-up is not what this is about)
    RuleBook.build(
      GRPO_PRESET.filter((r) => r.id === 'reward_trend'),
      [{ id: 'reward_trend', window: 20, for: 1, warmup: 0 }],
    );
  const trend = (): Trace => new Trace({ book: book() });
  const itemOf = (t: Trace) =>
    t
      .outbox()
      .flatMap((r) => r.notification.items)
      .find((i) => i.rule === 'reward_trend')!;

  it('a rise of the reward (info) gets no advice for a fall; a fall still does', () => {
    const rise = trend().feed(series('reward', [...Array(20).fill(0.4), ...Array(20).fill(0.5)]));
    expect(itemOf(rise)).toMatchObject({ severity: 'info', summary: expect.stringContaining('↗') });
    expect(itemOf(rise).hint).toMatch(/the run is learning/);
    expect(itemOf(rise).hint).not.toMatch(/fall|lower the learning rate/);
    expect(renderNotification(rise.outbox()[0]!.notification, false)).not.toMatch(/try:.*fall/);

    const fall = trend().feed(series('reward', [...Array(20).fill(0.5), ...Array(20).fill(0.4)]));
    expect(itemOf(fall)).toMatchObject({ severity: 'warning', summary: expect.stringContaining('↘') });
    expect(itemOf(fall).hint).toBe(KNOWLEDGE.reward_trend!.hint);
  });

  it('the run report explains a rise as a rise', async () => {
    const t = trend().feed(series('reward', [...Array(20).fill(0.4), ...Array(20).fill(0.5)]));
    const report = await reportOf({ store: new SqliteAsyncStore(t.store) }, { run: 'r1' }, t.now);
    const finding = report.findings.find((f) => f.id === 'reward_trend')!;
    expect(finding.causes).toEqual(['the run is learning']);
    expect([...finding.causes, ...finding.actions].join(' ')).not.toMatch(/fall|lower the learning rate/);
  });
});
