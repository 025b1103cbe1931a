/**
 * Slack reads `<!channel>`, `<@U123>` and `<url|text>` in mrkdwn, and a `>` starting a line as a quote:
 * untrusted text gets `&` and `<` escaped, and a line-starting `>`, which makes every control sequence plain
 * text (a `>` mid-line cannot open anything and shows as itself: `reward 1 > 0.8` stays readable in the API).
 */
export const slackEscape = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/^>/gm, '&gt;');
