import { afterEach, describe, expect, it } from 'vitest';
import { mattermost } from '../../src/platforms/mattermost/index.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { HOSTILE, PlatformRun } from './pipeline.ts';

type Json = Record<string, any>;

/** What Mattermost would read as markup or a mention in `text`: code blocks taken out first (it reads
 * neither in them), then mentions and unescaped markdown punctuation. */
function markup(text: string): string[] {
  const outside = text.replace(/```\n[\s\S]*?\n```/g, '');
  return [
    ...(outside.match(/@(?:channel|all|here|everyone|U0001)\b/g) ?? []),
    ...(outside.match(/(?<!\\)[*_[\]()<>`~#|]/g) ?? []),
  ];
}

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

describe('Mattermost incoming webhook, end to end against a local receiver', () => {
  it('posts Slack-style attachments of the collapse; a hostile completion pings nobody and formats nothing', async () => {
    const hook = await HttpReceiver.start();
    const run = await PlatformRun.of(mattermost, {}, { MATTERMOST_WEBHOOK_URL: hook.url('/hooks/xyz') });
    open.push(hook, run);
    await run.write(30);
    await run.generations([{ reward: 0.9, completion: HOSTILE }]);
    await run.write(4, { frac: 1 });
    await hook.waitFor(() => run.rows()[0]?.done_at != null);
    const body = hook.json<Json>(0);
    expect(body.text).toMatch(/^CRITICAL · mode\\_collapse firing · grpo: frac\\_zero\\_std 1 \\> 0\.8/);
    expect(body.attachments).toHaveLength(1);
    const a = body.attachments[0];
    expect(a).toMatchObject({ color: '#d7263d', title: 'CRITICAL · mode\\_collapse firing · grpo', footer: 'rlwatch' });
    expect(a.fields).toEqual(
      expect.arrayContaining([
        { title: 'Run', value: 'grpo', short: true },
        { title: 'Step', value: '33', short: true },
      ]),
    );
    // the generation, verbatim inside a code block (its own ``` broken so it cannot close the block early)
    expect(a.text).toContain('```\n@everyone @here @channel @all <!channel>');
    expect(a.text).toContain('`\u200b`` fence `\u200b``');
    for (const t of [body.text, a.text, a.title, ...a.fields.map((f: Json) => f.value)]) expect(markup(t)).toEqual([]);
    // the fallback is plain text (push notifications): no markdown read, but no mention either
    expect(a.fallback).toMatch(/^CRITICAL · mode_collapse firing · grpo: frac_zero_std 1 > 0\.8/);

    await run.write(3);
    await hook.waitFor(() => hook.received.length === 2);
    expect(hook.json<Json>(1).attachments[0]).toMatchObject({
      title: 'CRITICAL · mode\\_collapse resolved · grpo',
      color: '#2a9d8f',
    });
  }, 30_000);

  it("a run's milestone report is posted as its card, as of the step that reached the epoch", async () => {
    const hook = await HttpReceiver.start();
    const run = await PlatformRun.of(mattermost, {}, { MATTERMOST_WEBHOOK_URL: hook.url('/hooks/xyz') });
    open.push(hook, run);
    run.engine.caughtUp(); // watched live: reports are sent for what is reached from here on
    await run.write(55); // learning.log's epoch is the line's number / 100: line 50 reaches epoch 0.5
    expect(await run.reports()).toBe(1);
    // the lines may also have raised an alert, posted apart
    const at = (): number => hook.received.findIndex((r) => r.raw.includes('reached epoch 0.5'));
    await hook.waitFor(() => at() >= 0);
    const body = hook.json<Json>(at());
    expect(body.attachments).toHaveLength(1);
    expect(body.attachments[0].title).toMatch(/^grpo reached epoch 0\.5: \S/);
    expect(body.attachments[0].text).toContain('step 50, epoch 0.5');
  }, 30_000);

  it('a summary or run name cannot mention: @channel in plain text is broken by a zero-width space', async () => {
    const { mdEscape } = await import('../../src/platforms/mattermost/message.ts');
    expect(mdEscape('run @channel [x](y) **b**')).toBe('run @\u200bchannel \\[x\\]\\(y\\) \\*\\*b\\*\\*');
    expect(markup(mdEscape(HOSTILE))).toEqual([]);
  });
});
