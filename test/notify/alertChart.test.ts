import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { alertCards } from '../../src/notify/cards.ts';
import { parseNotification } from '../../src/notify/payload.ts';
import { chartSpecOf, specToSvg } from '../../src/render/chart.ts';
import { series, Trace } from '../engine/trace.ts';

describe("an alert card's chart", () => {
  it("draws the rule's line from the config, the records past it and the step it fired at", async () => {
    // the preset's mode_collapse page (past 0.8 for 3) moved to 0.6 by the config
    const config = ConfigSchema.parse({
      alerts: { rules: [{ id: 'mode_collapse', escalate: { value: 0.6, for: 3 } }] },
    });
    const t = new Trace({ book: ruleBookFor(config) });
    const values = [0.1, 0.2, 0.1, 0.3, 0.2, 0.7, 0.7, 0.7];
    t.feed(series('frac_zero_std', values));
    const row = t.outbox().find((r) => r.notification.items.some((i) => i.rule === 'mode_collapse'))!;
    // read back as a notifier reads the outbox row: what the chart needs survives the payload's schema
    const card = alertCards(parseNotification(JSON.stringify(row.notification))).find((c) =>
      c.title.includes('mode_collapse'),
    )!;
    expect(card.chart).toMatchObject({ metric: 'frac_zero_std', markStep: 8 });
    expect(card.chart!.points.map((p) => p.value)).toEqual(values);
    // the early warning's line and the page's; the records past the page's line are its breaches
    expect(card.chart!.guides!.lines).toEqual([
      { value: 0.5, label: 'limit > 0.5', limit: true },
      { value: 0.6, label: 'critical > 0.6', limit: true },
    ]);
    expect(card.chart!.guides!.breaches).toEqual([6, 7, 8].map((step) => ({ step, value: 0.7 })));
    const svg = await specToSvg(chartSpecOf(card.chart!));
    expect(svg).toContain('critical &gt; 0.6');
    expect(svg).toContain('step 8');
  });

  it('a row written before charts carried their evidence still draws its threshold', async () => {
    const item = {
      alertId: 1,
      kind: 'firing',
      severity: 'critical',
      rule: 'mode_collapse',
      metric: 'frac_zero_std',
      summary: 's',
      step: 3,
      epoch: null,
      recent: [],
      examples: null,
      chart: {
        points: [
          { step: 1, value: 0.2 },
          { step: 2, value: 0.9 },
          { step: 3, value: 0.9 },
        ],
        threshold: 0.8,
      },
    };
    const [card] = alertCards(parseNotification(JSON.stringify({ run: 'r', items: [item] })));
    expect(card!.chart).toMatchObject({ threshold: 0.8 });
    expect(card!.chart!.guides).toBeUndefined();
    expect(await specToSvg(chartSpecOf(card!.chart!))).toContain('threshold 0.8');
  });
});
