import { describe, expect, it } from 'vitest';
import type { AlertCard } from '../../../src/notify/cards.ts';
import { cardsMessage, discordCommands, replyMessage } from '../../../src/platforms/discord/bot.ts';

const card = (id: number): AlertCard => ({
  alertId: id,
  run: 'r',
  title: `CRITICAL · rule ${'x'.repeat(400)}`,
  severity: 'critical',
  status: 'firing',
  summary: 's'.repeat(5000),
  fields: Array.from({ length: 40 }, (_, i) => ({ name: `f${i}`, value: 'v'.repeat(2000) })),
  note: null,
  sparkline: null,
  examples: [{ title: 'best', code: '```'.repeat(3000) }],
  chart: null,
  buttons: [{ id: `ack:${id}`, label: 'Ack', disabled: false }],
});

/** What Discord counts against the 6,000 characters of a message's embeds. */
const embedChars = (e: {
  title?: string;
  description?: string;
  fields?: Array<{ name: string; value: string }>;
}): number =>
  (e.title?.length ?? 0) +
  (e.description?.length ?? 0) +
  (e.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0);

describe("Discord's limits", () => {
  it('cuts a reply to title 256, description 4096, 25 fields of 1024, without breaking a code block', async () => {
    const m = await replyMessage({
      title: 't'.repeat(1000),
      fields: Array.from({ length: 40 }, (_, i) => ({ name: 'n'.repeat(300) + i, value: 'v'.repeat(3000) })),
      lines: Array.from({ length: 100 }, () => 'l'.repeat(300)),
      blocks: [{ title: 'gen', code: 'c'.repeat(10_000) }],
      data: null,
    });
    const e = m.embeds[0]!.toJSON();
    expect(e.title!.length).toBeLessThanOrEqual(256);
    expect(e.description!.length).toBeLessThanOrEqual(4096);
    expect(e.fields!.length).toBeLessThanOrEqual(25);
    expect(e.fields!.every((f) => f.name.length <= 256 && f.value.length <= 1024)).toBe(true);
    expect(embedChars(e)).toBeLessThanOrEqual(6000);
    expect((e.description!.match(/```/g) ?? []).length % 2).toBe(0);
  });

  it('puts at most 5 alerts, each with its row of buttons, in one message within the limits', async () => {
    const m = await cardsMessage([1, 2, 3, 4, 5].map(card));
    expect(m.embeds.length).toBeLessThanOrEqual(10);
    expect(m.components).toHaveLength(5);
    expect(m.embeds.map((x) => embedChars(x.toJSON())).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(6000);
    for (const embed of m.embeds.map((x) => x.toJSON())) {
      expect(embed.title!.length).toBeLessThanOrEqual(256);
      expect(embed.description!.length).toBeLessThanOrEqual(4096);
      expect(embed.fields?.length ?? 0).toBeLessThanOrEqual(25);
      expect((embed.description!.match(/```/g) ?? []).length % 2).toBe(0);
    }
  });

  it('registers commands Discord accepts: required options first, descriptions of at most 100', () => {
    for (const c of discordCommands()) {
      const opts = (c.options ?? []) as Array<{
        type: number;
        required?: boolean;
        description: string;
        options?: Array<{ required?: boolean; description: string }>;
      }>;
      const leaves = opts.some((o) => o.type === 1) ? opts.map((o) => o.options ?? []) : [opts];
      for (const list of leaves) {
        const firstOptional = list.findIndex((o) => !o.required);
        expect(list.slice(firstOptional < 0 ? list.length : firstOptional).every((o) => !o.required)).toBe(true);
        expect(list.every((o) => o.description.length <= 100)).toBe(true);
      }
    }
  });
});
