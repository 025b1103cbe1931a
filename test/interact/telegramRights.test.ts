import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telegram } from '../../src/platforms/telegram/index.ts';
import { FakeTelegram, type FakeTgMessage } from '../fakes/telegramServer.ts';
import { PlatformRun } from '../platforms/pipeline.ts';

const DEFAULT_CHAT = -1001;
const TEAM_A_CHAT = -2002;
const STRANGER_CHAT = -3003;
const A = 'team-a/grpo';
const B = 'team-b/ppo';
const alice = { id: 7, username: 'alice', first_name: 'Alice' };

describe('Telegram: commands only from the chats alerts go to, each reading about the runs routed to it', () => {
  let tg: FakeTelegram;
  let run: PlatformRun;
  let alertB: number;

  beforeAll(async () => {
    tg = await FakeTelegram.start();
    const env = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(DEFAULT_CHAT) };
    run = await PlatformRun.of(telegram, { routes: [{ runs: 'team-a/*', channel: String(TEAM_A_CHAT) }] }, env);
    for (const name of [A, B]) {
      const id = run.store.runs.ensure(name, `/runs/${name}`).id;
      const alert = run.store.alerts.create(id, 'mode_collapse', 'frac_zero_std', 'firing', {
        step: 3,
        at: Date.now(),
        severity: 'critical',
        summary: 'frac_zero_std 1 > 0.8',
        details: {},
      });
      if (name === B) alertB = alert.id;
    }
    run.instance.start!();
  }, 30_000);

  afterAll(async () => {
    await run?.close();
    await tg?.close();
  });

  const reply = async (chat: number, text: string): Promise<FakeTgMessage> => {
    const before = tg.botMessages(chat).length;
    tg.say(chat, alice, text);
    await tg.waitFor(() => tg.botMessages(chat).length > before);
    return tg.botMessages(chat).at(-1)!;
  };
  /** the text as read: the word joiner that keeps `#2` from being a hashtag taken out */
  const read = (m: FakeTgMessage): string => m.text!.replaceAll('\u2060', '');

  it("the team's chat cannot see another team's run: status, alerts, ack by id", async () => {
    expect((await reply(TEAM_A_CHAT, `/status ${B}`)).text).toBe(`unknown run '${B}' (known: ${A})`);
    const alerts = (await reply(TEAM_A_CHAT, '/alerts all')).text!;
    expect(alerts).toContain(A);
    expect(alerts).not.toContain(B);
    expect(read(await reply(TEAM_A_CHAT, `/ack ${alertB}`))).toBe(`no alert #${alertB} (see \`alerts --all\`)`);
    expect(run.store.alerts.byId(alertB)?.acked_by).toBeNull();
  });

  it('a chat alerts do not go to is not answered, and nothing runs; the default chat acks its run with no allow list', async () => {
    tg.say(STRANGER_CHAT, alice, `/ack ${alertB}`);
    // updates are read in order: once the default chat's ack is answered, the stranger's was read before it
    expect(read(await reply(DEFAULT_CHAT, `/ack ${alertB}`))).toContain(`Acked #${alertB}`);
    expect(tg.botMessages(STRANGER_CHAT)).toEqual([]);
    expect(run.store.alerts.byId(alertB)?.acked_by).toBe('@alice');
  });
});
