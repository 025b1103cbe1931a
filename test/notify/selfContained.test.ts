import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { silentLog } from '../../src/lib/log.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { telegram } from '../../src/platforms/telegram/index.ts';
import type { WebhookBody } from '../../src/platforms/webhook/body.ts';
import { webhook } from '../../src/platforms/webhook/index.ts';
import type { Platform, PlatformInstance } from '../../src/platforms/platform.ts';
import { PNG_SIGNATURE } from '../../src/render/chart.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { FakeTelegram } from '../fakes/telegramServer.ts';
import { rulesOf, series, T0, Trace } from '../engine/trace.ts';

const CHAT = -1001;
const RULE = { id: 'frac_high', kind: 'threshold', metric: 'frac_zero_std', op: '>', value: 0.8, for: 2 };

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

async function instance<S, T>(
  t: Trace,
  platform: Platform<S, T>,
  section: unknown,
  env: NodeJS.ProcessEnv,
): Promise<PlatformInstance> {
  const settings = platform.settings(platform.section.parse(section), env)!;
  const ctx = { store: new SqliteAsyncStore(t.store), config: ConfigSchema.parse({}), log: silentLog, wake: () => {} };
  return platform.create(settings, ctx);
}

/** What a delivery that read the store back would show instead of the captured card. */
function scramble(t: Trace): void {
  t.store.db.exec(`
    UPDATE alerts SET summary = 'SCRAMBLED', details = '{}', state = 'firing', started_at = 0, fired_at = 0,
      resolved_step = NULL, resolved_at = NULL, acked_by = '@nobody';
    DELETE FROM points; DELETE FROM examples;`);
}

describe('delivery renders what the outbox row carries, never the store', () => {
  it('a card, its chart, its webhook times and its resolution go out right after the store lost them', async () => {
    const tg = await FakeTelegram.start();
    const hook = await HttpReceiver.start();
    open.push(tg, hook);
    const t = new Trace({ book: rulesOf(RULE), run: 'grpo', targets: [`telegram:${CHAT}`, 'webhook:default'] });
    const tgEnv = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_URL: tg.apiUrl, TELEGRAM_CHAT_ID: String(CHAT) };
    const targets = [
      ...(await instance(t, telegram, { commands: false }, tgEnv)).targets,
      ...(await instance(t, webhook, { charts: true }, { WEBHOOK_URL: hook.url() })).targets,
    ];
    const dispatcher = new Dispatcher(new SqliteAsyncStore(t.store), targets, { baseBackoffMs: 50, maxBackoffMs: 100 });
    open.push({ close: () => dispatcher.stop(0) });

    t.feed(series('frac_zero_std', [0.1, 0.2, 0.1, 0.9, 0.95])); // fires at step 5, at T0
    expect(t.outbox(`telegram:${CHAT}`)).toHaveLength(1);
    scramble(t);
    await dispatcher.kick();

    const card = tg.botMessages(CHAT)[0]!;
    expect(card.text!.split('\n')[0]).toBe('<b>WARNING · frac_high firing · grpo</b>');
    expect(card.text).toContain('frac_zero_std 0.95 &gt; 0.8 for 2 steps');
    expect(card.text).not.toContain('SCRAMBLED');
    expect(card.text).not.toContain('nobody');
    const photo = tg.botMessages(CHAT)[1]!;
    expect(photo.reply_to_message_id).toBe(card.message_id);
    expect(photo.photo!.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    const fired = hook.json<WebhookBody>(0).alerts[0]!;
    expect(fired).toMatchObject({
      status: 'firing',
      startsAt: new Date(T0).toISOString(),
      values: [0.1, 0.2, 0.1, 0.9, 0.95],
    });
    expect(Buffer.from(fired.chart!, 'base64').subarray(0, 8)).toEqual(PNG_SIGNATURE);

    // the engine captures what the store says at the change: put back what the scramble took from the alert
    t.store.db.prepare('UPDATE alerts SET acked_by = NULL, started_at = ?, fired_at = ?').run(T0, T0);
    t.advance(60_000).feed(series('frac_zero_std', [0.1])); // resolves at step 6
    scramble(t);
    await dispatcher.kick();

    expect(tg.botMessages(CHAT)[0]!.text!.split('\n')[0]).toBe('<b>WARNING · frac_high resolved · grpo</b>');
    expect(tg.botMessages(CHAT)[0]!.text).toContain('frac_zero_std 0.95 &gt; 0.8 for 2 steps'); // as posted
    expect(tg.botMessages(CHAT)[0]!.text).toContain('Resolved at step 6: frac_zero_std 0.1: back past 0.8');
    expect(tg.botMessages(CHAT)[0]!.text).not.toMatch(/SCRAMBLED|nobody/);
    const reply = tg.botMessages(CHAT)[2]!;
    expect(reply.reply_to_message_id).toBe(card.message_id);
    expect(reply.text).toMatch(/^✅ WARNING · frac_high resolved · grpo: Resolved at step 6/);
    const resolved = hook.json<WebhookBody>(1).alerts[0]!;
    expect(resolved).toMatchObject({
      status: 'resolved',
      startsAt: new Date(T0).toISOString(),
      endsAt: new Date(T0 + 60_000).toISOString(),
    });
    expect(t.store.outbox.open()).toEqual([]);
  }, 20_000);

  it('a row written before cards carried their state (no `state`, no `chart`) is still delivered', async () => {
    const hook = await HttpReceiver.start();
    open.push(hook);
    const t = new Trace({ book: rulesOf(RULE), run: 'grpo', targets: ['webhook:default'] });
    const dispatcher = new Dispatcher(
      new SqliteAsyncStore(t.store),
      (await instance(t, webhook, { charts: true }, { WEBHOOK_URL: hook.url() })).targets,
    );
    open.push({ close: () => dispatcher.stop(0) });
    const old = {
      run: 'grpo',
      items: [
        {
          alertId: 7,
          kind: 'resolved',
          severity: 'warning',
          rule: 'frac_high',
          metric: 'frac_zero_std',
          summary: 'back under 0.8',
          step: 9,
          epoch: null,
          recent: [0.9, null, 0.1],
          examples: null,
        },
      ],
    };
    t.store.outbox.add(t.run.id, 'webhook:default', old, T0);
    t.store.outbox.add(t.run.id, 'webhook:default', { run: 'grpo', items: 'not a list' }, T0);
    await dispatcher.kick();
    const body = hook.json<WebhookBody>(0).alerts[0]!;
    expect(body).toMatchObject({
      status: 'resolved',
      state: 'resolved',
      step: 9,
      startsAt: '0001-01-01T00:00:00Z',
      annotations: { summary: 'back under 0.8' },
    });
    expect(body.values).toEqual([0.9, null, 0.1]); // a NaN of the series goes out as JSON's null, as before
    expect(body.chart).toBeUndefined();
    // a payload that is no notification is set aside with the reason, never a crash
    expect(t.store.outbox.open()).toMatchObject([
      { dead_reason: expect.stringMatching(/^outbox row #2: its payload is not a notification \(items:/) },
    ]);
  });
});
