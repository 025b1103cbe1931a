import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG_SIGNATURE } from '../../src/render/chart.ts';
import { telegram } from '../../src/platforms/telegram/index.ts';
import { FakeTelegram, type FakeTgMessage, type FakeTgUser } from '../fakes/telegramServer.ts';
import { HOSTILE, PlatformRun } from './pipeline.ts';

const CHAT = -1001;
const alice = { id: 7, username: 'alice', first_name: 'Alice', last_name: 'Liddell' };
const mallory = { id: 9, username: 'mallory', first_name: 'Mallory' };

/** What Telegram would read in HTML parse mode outside <pre>: tags other than <b>/<i>, and mentions, bot
 * commands and hashtags (which notify, or send a command on one tap). */
function live(html: string): string[] {
  const outside = html.replace(/<pre>[\s\S]*?<\/pre>/g, '');
  return [
    ...(outside.match(/<(?!\/?[bi]>)[^>]*>/g) ?? []),
    ...(outside.replace(/<\/?[bi]>/g, ' ').match(/(?:^|[^\w\u2060])[@/#]\w+/g) ?? []),
  ];
}
const decode = (s: string): string => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

describe('Telegram, end to end against a local fake of the Bot API', () => {
  let tg: FakeTelegram;
  let run: PlatformRun;
  let card: () => FakeTgMessage;
  const reply = async (text: string, user: FakeTgUser = alice): Promise<FakeTgMessage> => {
    const before = tg.botMessages(CHAT).length;
    tg.say(CHAT, user, text);
    await tg.waitFor(() => tg.botMessages(CHAT).length > before);
    return tg.botMessages(CHAT).at(-1)!;
  };

  beforeAll(async () => {
    tg = await FakeTelegram.start();
    const env = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) };
    run = await PlatformRun.of(telegram, { allow: { users: [7] } }, env);
    run.instance.start!();
    await run.write(30);
    await run.generations([{ reward: 0.9, completion: HOSTILE }]);
    await run.write(4, { frac: 1 });
    await tg.waitFor(() => tg.botMessages(CHAT).length === 2); // the card and its chart
    card = () => tg.botMessages(CHAT)[0]!;
  }, 30_000);

  afterAll(async () => {
    await run?.close();
    await tg?.close();
  });

  it('posts the card in HTML with Ack/Mute buttons and the chart as a photo replying to it', () => {
    const m = card();
    expect(m.parse_mode).toBe('HTML');
    expect(m.text!.split('\n')[0]).toBe('<b>CRITICAL · mode_collapse firing · grpo</b>');
    expect(m.text).toContain('Step: 33');
    expect(m.reply_markup!.inline_keyboard).toEqual([
      [
        { text: 'Ack #1', callback_data: 'ack:1' },
        { text: 'Mute run 1h #1', callback_data: 'muteRun:1' },
        { text: 'Mute rule 24h #1', callback_data: 'muteRule:1' },
      ],
    ]);
    const photo = tg.botMessages(CHAT)[1]!;
    expect(photo.reply_to_message_id).toBe(m.message_id);
    expect(photo.photo!.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });

  it('a hostile completion sits in <pre>, escaped: no tag, mention, command or hashtag outside it', () => {
    const text = card().text!;
    const pre = [...text.matchAll(/<pre>([\s\S]*?)<\/pre>/g)].map((x) => decode(x[1]!));
    expect(pre).toContain(HOSTILE);
    expect(live(text)).toEqual([]);
  });

  it('a button press runs the command: Ack by an allowed user acks and edits the card; others are refused', async () => {
    tg.press(card(), mallory, 'muteRun:1');
    await tg.waitFor(() => tg.callbackAnswers.length === 1);
    expect(tg.callbackAnswers[0]).toMatchObject({
      show_alert: true,
      text: expect.stringMatching(/^You may not use \/mute/),
    });
    expect(run.store.silences.active(Date.now())).toEqual([]);

    tg.press(card(), alice, 'ack:1');
    await tg.waitFor(() => tg.callbackAnswers.length === 2);
    // recorded by username, shown by the name Telegram shows (first and last name)
    expect(tg.callbackAnswers[1]!.text).toBe('Acked #1 mode_collapse (frac_zero_std) by Alice Liddell');
    expect(run.store.alerts.byId(1)).toMatchObject({ acked_by: '@alice', acked_by_name: 'Alice Liddell' });
    await tg.waitFor(() => card().edits.length === 1);
    expect(card().text).toContain('<i>Acked by Alice Liddell</i>');
    expect(card().reply_markup!.inline_keyboard[0]!.map((b) => b.callback_data)).toEqual(['muteRun:1', 'muteRule:1']);

    tg.press(card(), alice, 'muteRun:1');
    await tg.waitFor(() => tg.callbackAnswers.length === 3);
    expect(run.store.silences.active(Date.now())).toMatchObject([
      { run: 'grpo', rule: null, author: '@alice', author_name: 'Alice Liddell' },
    ]);
  });

  it('answers commands from the tree: /alerts, /status@bot, usage for a bad one, rights for /ack', async () => {
    expect((await reply('/alerts')).text).toContain('mode_collapse');
    const status = await reply('/status@rlwatch_bot grpo');
    expect(status.text).toMatch(/^<b>.*grpo/);
    expect(status.reply_to_message_id).toBeGreaterThan(0);
    expect((await reply('/ack 1 on it', mallory)).text).toMatch(/^You may not use \/\u2060ack/);
    expect((await reply('/ack')).text).toMatch(/^usage: \/\u2060ack/);
    // the shared interaction path's wording, as on every platform (the word joiner keeps /nonsense from being a tappable command)
    expect((await reply('/nonsense')).text).toMatch(/^unknown command \/\u2060nonsense/);
  });

  it('the resolution edits the card in place (no buttons left)', async () => {
    const edits = card().edits.length;
    await run.write(3);
    await tg.waitFor(() => card().edits.length > edits);
    expect(card().text!.split('\n')[0]).toBe('<b>CRITICAL · mode_collapse resolved · grpo</b>');
    expect(card().reply_markup).toEqual({ inline_keyboard: [] });
    expect(run.rows().every((r) => r.done_at !== null)).toBe(true);
  });

  it('the resolution also replies to the card, so the chat hears it ended; the chart photo is not sent again', () => {
    const replies = tg.botMessages(CHAT).filter((m) => m.reply_to_message_id === card().message_id);
    expect(replies.filter((m) => m.photo)).toHaveLength(1); // the chart, once, at the post
    const said = replies.filter((m) => m.text?.startsWith('✅'));
    expect(said).toHaveLength(1);
    expect(said[0]!.text).toMatch(
      /^✅ CRITICAL · mode_collapse resolved · grpo: Resolved at step \d+: frac_zero_std 0: back past/,
    );
  });
});

describe('Telegram refusals', () => {
  it('a refused token settles `failure`; a 429 on sendMessage waits its retry_after', async () => {
    const tg = await FakeTelegram.start();
    const bad = await PlatformRun.of(
      telegram,
      {},
      { TELEGRAM_BOT_TOKEN: 'nope', TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) },
    );
    bad.instance.start!();
    expect((await bad.instance.failure!).message).toMatch(/^Telegram refused the token .*401 Unauthorized/);
    await bad.close();

    tg.failSend.push({
      status: 429,
      body: {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 1',
        parameters: { retry_after: 1 },
      },
    });
    const run = await PlatformRun.of(
      telegram,
      { commands: false },
      { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) },
    );
    await run.write(30);
    await run.write(4, { frac: 1 });
    await tg.waitFor(() => run.rows()[0]?.done_at != null, 5000);
    expect(run.rows()[0]).toMatchObject({ attempts: 1, dead_at: null });
    expect(tg.calls.filter((c) => c === 'sendMessage')).toHaveLength(2);
    await run.close();
    await tg.close();
  }, 20_000);
});
