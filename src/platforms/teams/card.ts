/**
 * An alert burst as an Adaptive Card for a Teams Workflows webhook. Every string that may carry untrusted text
 * (run names, summaries, generations, log lines) is a TextRun of a RichTextBlock: Adaptive Cards never read
 * markdown in a TextRun, and `<at>` only mentions someone with msteams entities, which this card never has.
 */
import type { AlertCard } from '../../notify/cards.ts';
import { notificationCards } from '../../notify/delivery.ts';
import type { Notification } from '../../engine/notification.ts';
import { cut } from '../../notify/limits.ts';

/** Teams refuses messages over about 28 KB: generations and log lines are cut well below it. */
const CODE_CHARS = 1200;

type Element = Record<string, unknown>;
const run = (text: string, style: Element = {}): Element => ({ type: 'TextRun', text, ...style });
const rich = (inlines: Element[], extra: Element = {}): Element => ({ type: 'RichTextBlock', inlines, ...extra });
const mono = (text: string): Element =>
  rich([run(cut(text, CODE_CHARS), { fontType: 'Monospace', size: 'Small' })], { spacing: 'Small' });

const COLOR: Record<AlertCard['status'], string> = {
  firing: 'Attention',
  acked: 'Default',
  muted: 'Default',
  resolved: 'Good',
};
const colour = (c: AlertCard): string =>
  c.severity === 'warning' && c.status === 'firing' ? 'Warning' : COLOR[c.status];

function cardElements(c: AlertCard): Element[] {
  return [
    rich([run(c.title, { weight: 'Bolder', size: 'Medium', color: colour(c) })], { separator: true }),
    rich([run(c.summary)], { spacing: 'Small' }),
    ...(c.note ? [rich([run(c.note, { weight: 'Bolder' })])] : []),
    ...c.fields.map((f) => rich([run(`${f.name}: `, { isSubtle: true }), run(f.value)], { spacing: 'None' })),
    ...(c.evidence ? [rich([run(c.evidence.title, { isSubtle: true })]), mono(c.evidence.lines.join('\n'))] : []),
    ...(c.sparkline ? [mono(c.sparkline)] : []),
    ...c.examples.flatMap((e) => [rich([run(e.title, { isSubtle: true })]), mono(e.code)]),
  ];
}

/** The Workflows webhook body: a message with one Adaptive Card attachment. */
export function teamsMessage(n: Notification): Element {
  const cards = notificationCards(n);
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          msteams: { width: 'Full' },
          body: cards.flatMap(cardElements),
        },
      },
    ],
  };
}
