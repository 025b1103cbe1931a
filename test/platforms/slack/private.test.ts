import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG_SIGNATURE } from '../../../src/render/chart.ts';
import { slack } from '../../../src/platforms/slack/index.ts';
import { startFakeSlack, type FakeMessage, type FakeResponse, type FakeSlack } from '../../fakes/slackServer.ts';
import { HOSTILE, PlatformRun } from '../pipeline.ts';

const BO = 'U0BO';
const ANA = 'U0ANA';

interface Block {
  type: string;
  block_id?: string;
  text?: { type: string; text: string };
  elements?: Array<{ type: string; text: string | { text: string }; action_id?: string; value?: string }>;
}
const blocksOf = (x: { blocks?: unknown }): Block[] => (x.blocks ?? []) as Block[];
const buttons = (blocks: Block[]): Array<{ id: string; label: string; value: string }> =>
  blocks
    .filter((b) => b.type === 'actions')
    .flatMap((b) =>
      b.elements!.map((e) => ({ id: e.action_id!, label: (e.text as { text: string }).text, value: e.value! })),
    );
const unescapeHtml = (s: string): string => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

describe('Slack without the noise: read answers to the caller alone, generations behind a button', () => {
  let fake: FakeSlack;
  let run: PlatformRun;
  let card: () => FakeMessage;
  /** the step the generations were written at: the card's examples are of that step */
  let genStep: number;
  const channelPosts = (): FakeMessage[] => [...fake.messages.values()].filter((m) => m.channel === fake.channelId);

  beforeAll(async () => {
    fake = await startFakeSlack();
    const env = {
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_APP_TOKEN: fake.appToken,
      SLACK_API_URL: fake.apiUrl,
      SLACK_CHANNEL_ID: fake.channelId,
    };
    run = await PlatformRun.of(slack, { allow: { users: [ANA] } }, env);
    run.instance.start!();
    await fake.waitFor(() => run.instance.ready?.(), 10_000);
    await run.write(30);
    genStep = run.step;
    await run.generations([
      { reward: 0.9, completion: HOSTILE },
      { reward: 0.1, completion: 'the worst answer' },
    ]);
    await run.write(4, { frac: 1 });
    const alert = await fake.waitFor(
      () => channelPosts().find((m) => JSON.stringify(m.blocks).includes('mode_collapse')),
      10_000,
    );
    card = () => fake.messages.get(alert.ts)!;
  }, 30_000);

  afterAll(async () => {
    await run?.close();
    await fake?.close();
  }, 20_000);

  it('an alert card says its generations exist, with their rewards, and shows none of their text', () => {
    const blocks = blocksOf(card());
    const json = JSON.stringify(blocks);
    expect(json).not.toContain('the worst answer');
    expect(json).not.toContain('```');
    const line = blocks
      .filter((b) => b.type === 'context')
      .flatMap((b) => b.elements!.map((e) => e.text as string))
      .find((t) => t.startsWith('Generations: '));
    expect(line).toBe(`Generations: best of step ${genStep}: 0.9 · worst of step ${genStep}: 0.1`);
    expect(buttons(blocks).map((b) => b.label)).toEqual(['Ack', 'Mute run 1h', 'Mute rule 24h', 'Show examples']);
  });

  it("Show examples answers the clicker alone with the card's generations, inert; the card stays as it is", async () => {
    const show = buttons(blocksOf(card())).find((b) => b.label === 'Show examples')!;
    const edits = card().edits;
    const r = await fake.blockAction({ actionId: show.id, messageTs: card().ts, userId: BO, waitForResponses: 1 });
    const body = r.responses[0]!.body as { response_type: string; replace_original: boolean; blocks: Block[] };
    expect(body).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    const texts = body.blocks.map((b) => b.text!.text);
    expect(texts).toHaveLength(2);
    expect(texts[0]!.split('\n')[0]).toBe(`best of step ${genStep}: 0.9`);
    expect(texts[1]).toBe(`worst of step ${genStep}: 0.1\n\`\`\`\nthe worst answer\n\`\`\``);
    // the hostile one whole (its fences broken by a zero-width space), with nothing Slack reads as a mention or a link
    expect(unescapeHtml(texts[0]!).replace(/\u200b/g, '')).toContain(HOSTILE);
    expect(texts[0]).not.toMatch(/<[!@]/);
    expect(r.responses).toHaveLength(1);
    expect(card().edits).toBe(edits);
  });

  it('every click on a card is answered to the clicker alone: Ack, Mute run, Mute rule, Show examples', async () => {
    for (const b of buttons(blocksOf(card()))) {
      const r = await fake.blockAction({ actionId: b.id, messageTs: card().ts, userId: ANA, waitForResponses: 1 });
      expect(r.ack.ms).toBeGreaterThanOrEqual(0);
      expect(r.responses.map((x) => (x.body as { response_type: string }).response_type)).toEqual(['ephemeral']);
      expect(r.responses[0]!.body).toMatchObject({ replace_original: false });
    }
    for (const m of run.store.silences.active(Date.now())) run.store.silences.end(m.id, Date.now());
  });

  it('a click whose answer Slack refuses still tells the clicker; one already answered is not told twice', async () => {
    const show = buttons(blocksOf(card())).find((b) => b.label === 'Show examples')!;
    fake.failNext('response_url', { status: 400, error: 'invalid_blocks' });
    const r = await fake.blockAction({ actionId: show.id, messageTs: card().ts, userId: BO, waitForResponses: 1 });
    expect(r.responses.map((x) => x.body)).toEqual([
      {
        response_type: 'ephemeral',
        replace_original: false,
        text: "Sorry, that click failed on rlwatch's side; its log says why.",
      },
    ]);

    // the mute is set and said; the card's edit then fails: the log's business, not a second message
    const mute = buttons(blocksOf(card())).find((b) => b.label === 'Mute run 1h')!;
    fake.failNext('chat.update', { error: 'internal_error' });
    const muted = await fake.blockAction({
      actionId: mute.id,
      messageTs: card().ts,
      userId: ANA,
      waitForResponses: 1,
      settleMs: 300,
    });
    expect(fake.callsTo('chat.update').at(-1)!.error).toBe('internal_error');
    expect(muted.responses).toHaveLength(1);
    expect((muted.responses[0]!.body as { text: string }).text).toMatch(/^Muted for 1h/);
    for (const m of run.store.silences.active(Date.now())) run.store.silences.end(m.id, Date.now());
  });

  it('a read command is answered to the caller alone, with a Post to channel button; nothing is posted', async () => {
    const posts = channelPosts().length;
    const r = await fake.slashCommand({ command: '/run', text: 'status grpo', userId: BO, waitForResponses: 1 });
    const body = r.responses[0]!.body as { response_type: string; text: string; blocks: Block[] };
    expect(body.response_type).toBe('ephemeral');
    expect(body.text).toBe(`grpo: step ${run.step}, epoch ${Number((run.step / 100).toFixed(2))}`);
    expect(buttons(body.blocks).map((b) => b.label)).toEqual(['Post to channel']);
    expect(body.blocks.at(-2)!.elements![0]!.text).toBe('Only you can see this. Post to channel shows it to everyone.');
    await sleep(100);
    expect(channelPosts()).toHaveLength(posts);
  });

  it('Post to channel posts the same answer for everyone, saying who shared it; the private answer says it is done', async () => {
    const asked = await fake.slashCommand({ command: '/alerts', userId: BO, waitForResponses: 1 });
    const answer = asked.responses[0]!;
    const posts = channelPosts().length;
    const r = await fake.blockAction({ actionId: 'share', ephemeral: answer, userId: BO, waitForResponses: 1 });
    expect(r.payload['message']).toBeUndefined(); // Slack sends no private message back: the bot held it
    expect(r.responses[0]!.body).toMatchObject({
      response_type: 'ephemeral',
      replace_original: true,
      text: 'Posted to the channel.',
    });
    await fake.waitFor(() => channelPosts().length === posts + 1);
    const shared = channelPosts().at(-1)!;
    expect(shared.source).toBe('chat.postMessage');
    const mine = blocksOf(answer.body);
    // the answer's blocks, its note and button replaced by the attribution
    expect(shared.blocks).toEqual([
      ...mine.slice(0, -2),
      { type: 'context', elements: [{ type: 'mrkdwn', text: `shared by <@${BO}>` }] },
    ]);
    expect(shared.text).toBe(`${(answer.body as { text: string }).text} (shared by <@${BO}>)`);

    // a second click (another client still showing the button) posts nothing more, and says why
    const again = await fake.blockAction({ actionId: 'share', ephemeral: answer, userId: BO, waitForResponses: 1 });
    expect((again.responses[0]!.body as { text: string }).text).toMatch(/^This answer is no longer held/);
    await sleep(100);
    expect(channelPosts()).toHaveLength(posts + 1);
  });

  it('only the one who asked can post it, in the channel they asked in', async () => {
    const asked = await fake.slashCommand({ command: '/mutes', userId: BO, waitForResponses: 1 });
    const posts = channelPosts().length;
    const other = await fake.blockAction({
      actionId: 'share',
      ephemeral: asked.responses[0]!,
      userId: ANA,
      waitForResponses: 1,
    });
    expect((other.responses[0]!.body as { text: string }).text).toMatch(/^This answer is no longer held/);
    await sleep(100);
    expect(channelPosts()).toHaveLength(posts);
  });

  it("/reward history uploads no chart while private; posted, its chart goes in the post's thread", async () => {
    const uploads = fake.uploads.length;
    const asked = await fake.slashCommand({
      command: '/reward',
      text: 'history grpo',
      userId: BO,
      waitForResponses: 1,
    });
    const answer = asked.responses[0]!;
    expect(blocksOf(answer.body).at(-2)!.elements![0]!.text).toBe(
      'Only you can see this. Post to channel shows it to everyone with its chart.',
    );
    await sleep(200);
    expect(fake.uploads).toHaveLength(uploads);
    await fake.blockAction({ actionId: 'share', ephemeral: answer, userId: BO, waitForResponses: 1 });
    const upload = await fake.waitFor(() => fake.uploads.slice(uploads).find((u) => u.completed), 10_000);
    const shared = channelPosts().find(
      (m) => m.source === 'chat.postMessage' && m.text.startsWith(`reward of grpo: ${run.step} points`),
    )!;
    expect(upload).toMatchObject({ filename: 'chart.png', channelId: fake.channelId, threadTs: shared.ts });
    expect(upload.bytes!.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });

  it('a post Slack refuses is said to the clicker with what to do, and the answer can be posted once fixed', async () => {
    const asked = await fake.slashCommand({ command: '/files', text: 'grpo', userId: BO, waitForResponses: 1 });
    const answer: FakeResponse = asked.responses[0]!;
    fake.failNext('chat.postMessage', { error: 'not_in_channel' });
    const refused = await fake.blockAction({ actionId: 'share', ephemeral: answer, userId: BO, waitForResponses: 1 });
    expect(refused.responses[0]!.body).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    expect((refused.responses[0]!.body as { text: string }).text).toBe(
      'Not posted: Slack: not_in_channel: the app is not in this channel: type /invite @rlwatch (or the name you gave the app) in the channel',
    );
    const posts = channelPosts().length;
    const ok = await fake.blockAction({ actionId: 'share', ephemeral: answer, userId: BO, waitForResponses: 1 });
    expect(ok.responses[0]!.body).toMatchObject({ text: 'Posted to the channel.' });
    await fake.waitFor(() => channelPosts().length === posts + 1);
  });

  it('a write command stays in the channel: the team sees who acked', async () => {
    const alert = run.store.alerts.list({}).find((a) => a.rule === 'mode_collapse')!;
    const r = await fake.slashCommand({
      command: '/ack',
      text: `${alert.id} looking`,
      userId: ANA,
      waitForResponses: 1,
    });
    expect(r.responses[0]!.body).toMatchObject({ response_type: 'in_channel' });
    expect(buttons(blocksOf(r.responses[0]!.body))).toEqual([]);
  });

  it('a resolved card has no Ack or Mute left, and still shows its generations on a click', async () => {
    const edits = card().edits;
    await run.write(4, { frac: 0 });
    await fake.waitFor(
      () => card().edits > edits && JSON.stringify(card().blocks).includes('Resolved at step'),
      10_000,
    );
    const left = buttons(blocksOf(card()));
    expect(left.map((b) => b.label)).toEqual(['Show examples']);
    const r = await fake.blockAction({ actionId: left[0]!.id, messageTs: card().ts, userId: BO, waitForResponses: 1 });
    expect((r.responses[0]!.body as { blocks: Block[] }).blocks).toHaveLength(2);
  });
});
