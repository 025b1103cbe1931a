import { afterEach, describe, expect, it } from 'vitest';
import { ackAlert, muteAlerts, unmute } from '../../src/commands/alerts.ts';
import { outboxRetry } from '../../src/commands/outbox.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { silentLog } from '../../src/lib/log.ts';
import { endExpiredMutes } from '../../src/notify/cardUpdates.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Platform, PlatformInstance } from '../../src/platforms/platform.ts';
import { telegram } from '../../src/platforms/telegram/index.ts';
import { webhook } from '../../src/platforms/webhook/index.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { FakeTelegram, type FakeTgMessage } from '../fakes/telegramServer.ts';
import { rulesOf, series, Trace } from '../engine/trace.ts';

const CHAT = -1001;
const TG = `telegram:${CHAT}`;
const HOOK = 'webhook:default';
const RULE = { id: 'frac_high', kind: 'threshold', metric: 'frac_zero_std', op: '>', value: 0.8, for: 2 };
const ANA = { id: 99, first_name: 'Ana', last_name: 'Lima' };

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

/** A fired alert posted to a Telegram chat (real bot against the fake Bot API) and to a webhook receiver. */
async function fired(opts: { commands?: boolean; beforeDelivery?: (t: Trace, alertId: number) => Promise<void> } = {}) {
  const tg = await FakeTelegram.start();
  const hook = await HttpReceiver.start();
  open.push(tg, hook);
  const t = new Trace({ book: rulesOf(RULE), run: 'grpo', targets: [TG, HOOK] });
  let dispatcher: Dispatcher | undefined;
  const ctx = {
    store: new SqliteAsyncStore(t.store),
    config: ConfigSchema.parse({}),
    log: silentLog,
    wake: () => {},
    deliverNow: () => void dispatcher?.kick(),
  };
  const make = async <S, T>(p: Platform<S, T>, section: unknown, env: NodeJS.ProcessEnv): Promise<PlatformInstance> =>
    p.create(p.settings(p.section.parse(section), env)!, ctx);
  const tgEnv = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) };
  const bot = await make(telegram, { commands: opts.commands ?? false }, tgEnv);
  const targets = [...bot.targets, ...(await make(webhook, {}, { WEBHOOK_URL: hook.url() })).targets];
  dispatcher = new Dispatcher(ctx.store, targets, { baseBackoffMs: 50, maxBackoffMs: 100 });
  bot.start?.();
  open.push({ close: async () => (await dispatcher!.stop(0), await bot.stop?.()) });
  t.feed(series('frac_zero_std', [0.1, 0.2, 0.1, 0.9, 0.95])); // fires at step 5
  await opts.beforeDelivery?.(t, t.alert('frac_high').id);
  await dispatcher.kick();
  const card = tg.botMessages(CHAT)[0]!;
  expect(card.text).toContain('frac_high firing');
  expect(hook.received).toHaveLength(1);
  return { t, tg, hook, dispatcher, card, alert: t.alert('frac_high') };
}

/** The command context of the trace's store, as a bot or the CLI has it. */
const on = (t: Trace) => ({ store: new SqliteAsyncStore(t.store) });

const buttons = (m: FakeTgMessage): string[] => m.reply_markup!.inline_keyboard.flat().map((b) => b.text);

describe('an ack or a mute edits every card of the alert, from the outbox', () => {
  it('an ack queues one self-contained update per target showing the alert, in the same transaction', async () => {
    const { t, alert } = await fired();
    const posted = JSON.parse(t.store.chatMessages.ofAlert(alert.id, TG)[0]!.payload) as Notification;
    const before = t.outbox(HOOK).length;

    await ackAlert(on(t), { id: alert.id, by: { id: '@ana', name: 'Ana' }, comment: 'on it' }, 1_000);

    // only the target with a message of the alert: the webhook posted nothing it could edit
    expect(t.outbox(HOOK)).toHaveLength(before);
    const row = t.outbox(TG).at(-1)!;
    expect(row.done_at).toBeNull();
    const item = row.notification.items[0]!;
    expect(row.notification.items).toHaveLength(1);
    expect(item).toMatchObject({ alertId: alert.id, kind: 'update', summary: posted.items[0]!.summary });
    expect(item.state?.ack).toEqual({ by: '@ana', name: 'Ana', at: 1_000, comment: 'on it' });
    // what the card shows beyond its state comes from the message as posted: the chart is drawn from the same points
    expect(item.chart).toEqual(posted.items[0]!.chart);
    expect(item.recent).toEqual(posted.items[0]!.recent);
  });

  it('a CLI ack edits the Telegram card in place: no new message, no reply; the webhook sends nothing', async () => {
    const { t, tg, hook, dispatcher, card, alert } = await fired();
    const messages = tg.botMessages(CHAT).length; // the card and its chart
    // a hostile name: Telegram HTML and a mention
    await ackAlert(on(t), { id: alert.id, by: { id: 'ana', name: '<b>Ana</b> @everyone' } });
    // an update for a channel that only posts (as no writer makes it today) is done without a request
    t.store.outbox.add(t.run.id, HOOK, t.outbox(TG).at(-1)!.notification, t.now);
    await dispatcher.kick();

    const edited = tg.botMessages(CHAT)[0]!;
    expect(edited.message_id).toBe(card.message_id);
    expect(edited.edits).toHaveLength(1);
    // escaped, and a word joiner after each @ and / that starts a word: nothing to tap, nobody pinged
    expect(edited.text).toContain('<i>Acked by &lt;b&gt;Ana&lt;/\u2060b&gt; @\u2060everyone</i>');
    expect(buttons(edited)).toEqual([`Mute run 1h #${alert.id}`, `Mute rule 24h #${alert.id}`]);
    expect(tg.botMessages(CHAT)).toHaveLength(messages);
    expect(hook.received).toHaveLength(1);
    expect(t.store.outbox.open()).toEqual([]);
  }, 20_000);

  it('an ack made while the card still waits in the outbox shows on the one card posted', async () => {
    let waiting = 0;
    const { t, tg, hook, alert } = await fired({
      beforeDelivery: async (t, id) => {
        waiting = t.store.outbox.open().length; // the firing rows, not delivered yet
        await ackAlert(on(t), { id, by: { id: '@ana', name: 'Ana' }, comment: 'on it' }, 1_000);
      },
    });
    expect(waiting).toBe(2);
    const cards = tg.botMessages(CHAT).filter((m) => m.text?.includes('frac_high'));
    expect(cards).toHaveLength(1);
    expect(cards[0]!.text).toContain('Acked by Ana: on it');
    expect(buttons(cards[0]!)).not.toContain(`Ack #${alert.id}`);
    expect(tg.calls.filter((c) => c === 'sendMessage')).toHaveLength(1);
    expect(hook.received).toHaveLength(1); // the webhook cannot edit: its update is done unsent
    expect(t.store.outbox.open()).toEqual([]);
  }, 20_000);

  it('a card set aside, acked, then put back by `outbox retry` is posted and then shows the ack', async () => {
    const { tg, alert } = await fired({
      beforeDelivery: async (t, id) => {
        const row = t.store.outbox.open().find((r) => r.target === TG)!;
        t.store.outbox.setAside(row.id, 'chat not found', 900); // the platform refused it for good
        await ackAlert(on(t), { id, by: { id: '@ana', name: 'Ana' }, comment: 'on it' }, 1_000);
        await outboxRetry(on(t), { id: row.id });
      },
    });
    const cards = tg.botMessages(CHAT).filter((m) => m.text?.includes('frac_high'));
    expect(cards).toHaveLength(1);
    expect(cards[0]!.text).toContain('Acked by Ana: on it');
    expect(buttons(cards[0]!)).not.toContain(`Ack #${alert.id}`);
  }, 20_000);

  it('so does a mute', async () => {
    const { tg } = await fired({
      beforeDelivery: async (t, id) => {
        await muteAlerts(on(t), { alert: id, for: '1h', by: { id: 'bo', name: 'Bo' } });
      },
    });
    const cards = tg.botMessages(CHAT).filter((m) => m.text?.includes('frac_high'));
    expect(cards).toHaveLength(1);
    expect(cards[0]!.text).toContain('Muted: recorded, not posted again');
  }, 20_000);

  it('a mute shows "Muted" on the card and an unmute takes it off again', async () => {
    const { t, tg, dispatcher, alert } = await fired();
    const mute = await muteAlerts(on(t), { alert: alert.id, for: '1h', by: { id: 'bo', name: 'Bo' } });
    await dispatcher.kick();
    expect(tg.botMessages(CHAT)[0]!.text).toContain('Muted: recorded, not posted again');
    await unmute(on(t), { id: (mute.data as { id: number }).id });
    await dispatcher.kick();
    const card = tg.botMessages(CHAT)[0]!;
    expect(card.text).not.toContain('Muted');
    expect(card.text).toContain('frac_high firing');
    expect(card.edits).toHaveLength(2);
    expect(buttons(card)).toContain(`Ack #${alert.id}`);
  }, 20_000);

  it('a mute that runs out is marked ended on the tick and the card stops saying "Muted"', async () => {
    const { t, tg, dispatcher, alert } = await fired();
    const now = Date.now();
    const by = { id: 'bo', name: 'Bo' };
    const mute = await muteAlerts(on(t), { alert: alert.id, for: '1h', by }, now - 2 * 3_600_000);
    await dispatcher.kick();
    expect(tg.botMessages(CHAT)[0]!.text).toContain('Muted: recorded');
    expect(await endExpiredMutes(new SqliteAsyncStore(t.store), now)).toBe(1);
    expect(t.store.silences.byId((mute.data as { id: number }).id)?.ended_at).toBe(now - 3_600_000);
    await dispatcher.kick();
    expect(tg.botMessages(CHAT)[0]!.text).not.toContain('Muted');
    expect(await endExpiredMutes(new SqliteAsyncStore(t.store), now)).toBe(0); // once
  }, 20_000);

  it('the pressed card is edited once: the update the press queued finds it already showing the ack', async () => {
    const { t, tg, card, alert } = await fired({ commands: true });
    tg.press(card, ANA, `ack:${alert.id}`);
    const updated = () => t.outbox(TG).at(-1)!.notification.items[0]!.kind === 'update';
    await tg.waitFor(() => updated() && t.store.outbox.open().length === 0);
    await tg.waitFor(() => tg.botMessages(CHAT)[0]!.text!.includes('Acked by Ana Lima'));
    await new Promise((done) => setTimeout(done, 200)); // an edit that would follow has had its time
    expect(tg.botMessages(CHAT)[0]!.edits).toHaveLength(1);
    expect(tg.calls.filter((c) => c === 'editMessageText')).toHaveLength(1);
  }, 20_000);

  it('a card posted from a row written before states were captured is edited from what it has', async () => {
    const { t, tg, dispatcher, alert } = await fired();
    const m = t.store.chatMessages.ofAlert(alert.id, TG)[0]!;
    const old = JSON.parse(m.payload) as Notification;
    for (const i of old.items) {
      delete i.state;
      delete i.chart;
    }
    t.store.chatMessages.setPayload(m.id, old);
    await ackAlert(on(t), { id: alert.id, by: { id: 'ana', name: 'Ana' } });
    expect(t.outbox(TG).at(-1)!.notification.items[0]).not.toHaveProperty('chart');
    await dispatcher.kick();
    expect(tg.botMessages(CHAT)[0]!.text).toContain('Acked by Ana');
    expect(t.store.outbox.open()).toEqual([]);
  }, 20_000);
});
