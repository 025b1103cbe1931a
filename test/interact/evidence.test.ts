import { describe, expect, it } from 'vitest';
import type { AlertCard } from '../../src/notify/cards.ts';
import { renderNotification } from '../../src/platforms/terminal/terminal.ts';
import { cardsMessage } from '../../src/platforms/discord/bot.ts';
import { tailBlock } from '../../src/notify/limits.ts';
import { cardBlocks } from '../../src/platforms/slack/bot.ts';

/** log lines as a hostile job could print them */
const hostile = [
  ...Array.from({ length: 18 }, (_, i) => `  File "/app/train.py", line ${i}, in step ${'x'.repeat(300)}`),
  '```\n@everyone <!channel> <@U123> <https://evil.example|click> @here',
  'RuntimeError: the end \x07\x1b]0;title\x07',
];
const EXCEPTION = 'RuntimeError: the end';

const card = (): AlertCard => ({
  alertId: 7,
  run: 'grpo',
  title: 'CRITICAL · run_crashed firing · grpo',
  severity: 'critical',
  status: 'firing',
  summary: 'RuntimeError: the end <!channel>',
  fields: [{ name: 'Run', value: 'grpo' }],
  note: null,
  sparkline: null,
  examples: [],
  evidence: { title: 'RuntimeError: the end', lines: hostile },
  chart: null,
  buttons: [{ id: 'ack:7', label: 'Ack', disabled: false }],
});

describe('evidence on cards', () => {
  it('keeps the last lines, cut from the start to fit, inside one unbroken code block', () => {
    const block = tailBlock(hostile, 1000);
    expect(block.length).toBeLessThanOrEqual(1000);
    expect(block.match(/```/g)).toHaveLength(2); // the fence in the log cannot close the block
    expect(block).toContain(EXCEPTION);
    expect(block).not.toContain('line 0,');
  });

  it('Discord: within the embed limits, the exception line shown, and no mention allowed', async () => {
    const m = await cardsMessage([card()]);
    const e = m.embeds[0]!.toJSON();
    expect(e.description!.length).toBeLessThanOrEqual(4096);
    expect(e.description).toContain(EXCEPTION);
    expect((e.description!.match(/```/g) ?? []).length).toBe(2);
    expect(m.allowedMentions).toEqual({ parse: [] });
  });

  it('Slack: mentions and links in log lines are escaped', () => {
    const text = JSON.stringify(cardBlocks([card()]));
    expect(text).toContain(EXCEPTION);
    for (const s of ['<!channel>', '<@U123>', '<https://evil']) expect(text).not.toContain(s);
    expect(text).toContain('&lt;!channel>');
  });

  it('terminal: the lines under the summary, without control characters', () => {
    const out = renderNotification(
      {
        run: 'grpo',
        items: [
          {
            alertId: 7,
            kind: 'firing',
            severity: 'critical',
            rule: 'run_crashed',
            metric: 'log:crash',
            summary: 'RuntimeError: the end',
            step: 3,
            epoch: null,
            recent: [],
            examples: null,
            evidence: { title: 'RuntimeError: the end', lines: hostile },
          },
        ],
      },
      false,
    );
    expect(out).toContain(`│ ${EXCEPTION}`);
    expect(out).not.toMatch(/[\x07\x1b]/);
  });
});
