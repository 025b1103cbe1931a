import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { alertCards } from '../../src/notify/cards.ts';
import { chartRows, lineChartSpec, specToSvg } from '../../src/render/chart.ts';
import { series, Trace } from '../engine/trace.ts';

describe("an alert card's chart", () => {
  it("draws the rule's threshold from the config and marks the step it fired at", async () => {
    // the preset's mode_collapse line (0.8) moved to 0.6 by the config
    const config = ConfigSchema.parse({ alerts: { rules: [{ id: 'mode_collapse', value: 0.6 }] } });
    const t = new Trace({ book: ruleBookFor(config) });
    t.feed(series('frac_zero_std', [0.1, 0.2, 0.1, 0.3, 0.2, 0.7, 0.7, 0.7]));
    const row = t.outbox().find((r) => r.notification.items.some((i) => i.rule === 'mode_collapse'))!;
    const card = alertCards(row.notification).find((c) => c.title.includes('mode_collapse'))!;
    expect(card.chart).toMatchObject({ metric: 'frac_zero_std', threshold: 0.6, markStep: 8 });
    expect(card.chart!.points.map((p) => p.value)).toEqual([0.1, 0.2, 0.1, 0.3, 0.2, 0.7, 0.7, 0.7]);
    const c = card.chart!;
    const svg = await specToSvg(lineChartSpec({ ...c, rows: chartRows(c.points, 1000), width: 800, height: 360 }));
    expect(svg).toContain('threshold 0.6');
    expect(svg).toContain('step 8');
  });

  it('a rule without a line (a trend, a plateau) draws none', () => {
    const t = new Trace();
    // 120 records at 0.5, past the trend's warm-up of 100, then a fall to 0.2
    t.feed(series('reward', Array.from({ length: 240 }, (_, i) => (i < 120 ? 0.5 : 0.2) + (i % 3) * 0.001)));
    const items = t.outbox().flatMap((r) => r.notification.items).filter((i) => i.chart);
    // the fall is a trend; the flat records after it are a plateau (30-record windows, once the fall has left the
    // window means' noise reading): neither has a line
    expect(new Set(items.map((i) => i.rule))).toEqual(new Set(['reward_trend', 'reward_plateau']));
    for (const i of items) expect(i.chart!.threshold).toBeNull();
  });
});
