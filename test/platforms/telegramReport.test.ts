import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telegram } from '../../src/platforms/telegram/index.ts';
import { FakeTelegram, type FakeTgMessage } from '../fakes/telegramServer.ts';
import { PlatformRun } from './pipeline.ts';

const CHAT = -1002;

describe('Telegram: a scheduled report reaches the chat as its own message', () => {
  let tg: FakeTelegram;
  let run: PlatformRun;
  let report: FakeTgMessage;

  beforeAll(async () => {
    tg = await FakeTelegram.start();
    const env = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) };
    run = await PlatformRun.of(telegram, { commands: false }, env);
    run.engine.caughtUp(); // watched live: reports are sent for what is reached from here on
    await run.write(55); // learning.log's epoch is the line's number / 100: line 50 reaches epoch 0.5
    expect(await run.reports()).toBe(1);
    const sent = (): FakeTgMessage | undefined => tg.botMessages(CHAT).find((m) => m.text?.includes('reached epoch'));
    await tg.waitFor(() => sent() !== undefined);
    report = sent()!;
  }, 30_000);

  afterAll(async () => {
    await run?.close();
    await tg?.close();
  });

  it('the milestone report is sent through sendMessage in HTML: its title bold, its lines below, no empty line', () => {
    expect(report.parse_mode).toBe('HTML');
    const lines = report.text!.split('\n');
    expect(lines[0]).toMatch(/^<b>grpo reached epoch 0\.5: \S.*<\/b>$/);
    expect(lines).toContain('step 50, epoch 0.5'); // as of the step that reached it, not the 55th
    expect(lines.some((l) => /^verdict: \w+/.test(l))).toBe(true);
    expect(lines.filter((l) => l.trim() === '')).toEqual([]);
    expect(lines.at(-1)).toBe('<i>mute with `mute --rule report`</i>');
  });

  it('a report has nothing to ack: no buttons, and it is never edited', async () => {
    expect(report.reply_markup?.inline_keyboard ?? []).toEqual([]);
    await run.write(1);
    expect(report.edits).toEqual([]);
    expect(run.rows().every((r) => r.done_at !== null && r.dead_at === null)).toBe(true);
  });
});
