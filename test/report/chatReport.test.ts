/**
 * `/run report` on a phone: the reply is the summary card; the full Markdown report comes as a file. Real
 * discord.js and Bolt against the local fakes, on a run being watched by `start`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/start.ts';
import type { FakeDiscord } from '../fakes/discordServer.ts';
import type { FakeSlack } from '../fakes/slackServer.ts';
import { startBothChats, stopBothChats, WatchedRun } from '../interact/watchedRun.ts';

describe('/run report in chat: a summary with the full report attached', () => {
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let app: App;
  const run = new WatchedRun();

  beforeAll(async () => {
    run.write(30, { frac: 0.25 }); // every record above frac_zero_std's 0.10: struggling
    ({ discord, slack, app } = await startBothChats(run));
  }, 30_000);

  afterAll(() => stopBothChats({ app, discord, slack }), 20_000);

  it('Discord: the card says the status; grpo-report.md is attached', async () => {
    const out = await discord.command({
      name: 'run',
      subcommand: 'report',
      options: { run: 'grpo' },
      user: { id: '1', username: 'bo' },
    });
    await discord.waitFor(() => out.edits.length > 0, 10_000);
    const file = out.edits[0]!.files.find((f) => f.name === 'grpo-report.md');
    expect(file?.data.toString('utf8')).toMatch(/^# Training report: grpo\n/);
    expect(file?.data.toString('utf8')).toContain(`| frac_zero_std | 0.25 - 0.25 | 0.25 | < 0.1 | 30/30 | 🔴 |`);
    expect(JSON.stringify(out.edits[0]!.body)).toContain('grpo: 🟠 Struggling');
  });

  it('a scheduled report is a card of its own in each channel, with no buttons', async () => {
    const runId = app.store.runs.byName('grpo')!.id;
    const report = {
      kind: 'milestone' as const,
      title: 'grpo reached epoch 0.5: 🟠 Struggling',
      lines: ['try: raise the temperature'],
    };
    for (const target of [`discord:${discord.channelId}`, `slack:${slack.channelId}`]) {
      app.store.outbox.add(runId, target, { run: 'grpo', items: [], report }, Date.now());
    }
    void app.dispatcher.kick();
    const posted = await discord.waitFor(
      () =>
        discord.channelMessages().find((m) => m.embeds.some((e) => (e as { title?: string }).title === report.title)),
      10_000,
    );
    expect(posted.components ?? []).toEqual([]);
    const onSlack = await slack.waitFor(
      () => [...slack.messages.values()].find((m) => JSON.stringify(m.blocks).includes('reached epoch 0.5')),
      10_000,
    );
    expect(JSON.stringify(onSlack.blocks)).toContain('try: raise the temperature');
    expect(JSON.stringify(onSlack.blocks)).not.toContain('"actions"');
  });

  it('Slack: the answer is the summary; posted to the channel, the report is uploaded as a file', async () => {
    const uploads = slack.uploads.length;
    const r = await slack.slashCommand({ command: '/run', text: 'report grpo', userId: 'U0BO', waitForResponses: 1 });
    expect((r.responses[0]!.body as { text: string }).text).toBe('grpo: 🟠 Struggling: requires intervention');
    await slack.blockAction({ actionId: 'share', ephemeral: r.responses[0]!, userId: 'U0BO' });
    const upload = await slack.waitFor(
      () => slack.uploads.slice(uploads).find((u) => u.completed && u.filename === 'grpo-report.md'),
      10_000,
    );
    expect(upload.bytes?.toString('utf8')).toMatch(/^# Training report: grpo\n/);
  });
});
