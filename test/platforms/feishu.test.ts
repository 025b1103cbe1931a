import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { feishu } from '../../src/platforms/feishu/index.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { HOSTILE, PlatformRun } from './pipeline.ts';

type Json = Record<string, any>;
const SECRET = 'lark-secret';

/** A custom bot as Feishu runs it: the signature recomputed from the timestamp and the secret (per Feishu's
 * docs: base64(HMAC-SHA256(key = timestamp + "\n" + secret, message = ""))), an hour of clock skew allowed. */
function feishuBot(r: { raw: string }) {
  const body = JSON.parse(r.raw) as Json;
  const expected = createHmac('sha256', `${body.timestamp}\n${SECRET}`).update(Buffer.alloc(0)).digest('base64');
  const fresh = Math.abs(Date.now() / 1000 - Number(body.timestamp)) < 3600;
  if (body.sign !== expected || !fresh)
    return {
      status: 200,
      body: JSON.stringify({
        code: 19021,
        msg: 'sign match fail or timestamp is not within one hour from current time',
      }),
    };
  if (body.msg_type !== 'interactive' || !body.card?.header)
    return { status: 200, body: JSON.stringify({ code: 19001, msg: 'param invalid' }) };
  return { status: 200, body: JSON.stringify({ code: 0, msg: 'success', data: {} }) };
}

/** Every object with a `tag`, depth first. */
function* tagged(x: unknown): Generator<Json> {
  if (Array.isArray(x)) for (const y of x) yield* tagged(y);
  else if (x && typeof x === 'object') {
    if ('tag' in x) yield x as Json;
    for (const v of Object.values(x)) yield* tagged(v);
  }
}

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

async function setUp(secret: string) {
  const bot = await HttpReceiver.start();
  bot.fallback = feishuBot;
  const run = await PlatformRun.of(
    feishu,
    {},
    { FEISHU_WEBHOOK_URL: bot.url('/open-apis/bot/v2/hook/abc'), FEISHU_SECRET: secret },
  );
  open.push(bot, run);
  return { bot, run };
}

describe('Feishu/Lark custom bot, end to end against a local bot that checks the signature', () => {
  it('posts a signed interactive card; a hostile completion is plain_text, never lark_md or an @all', async () => {
    const { bot, run } = await setUp(SECRET);
    await run.write(30);
    await run.generations([{ reward: 0.9, completion: HOSTILE }]);
    await run.write(4, { frac: 1 });
    await bot.waitFor(() => run.rows()[0]?.done_at != null);
    const body = bot.json<Json>(0);
    expect(feishuBot(bot.received[0]!).body).toContain('"code":0');
    expect(body.card.header).toEqual({
      title: { tag: 'plain_text', content: 'CRITICAL · mode_collapse firing · grpo' },
      template: 'red',
    });
    const tags = [...tagged(body.card)];
    expect(new Set(tags.map((t) => t.tag))).toEqual(new Set(['plain_text', 'div']));
    const texts = tags.filter((t) => t.tag === 'plain_text').map((t) => t.content as string);
    expect(texts).toContain(HOSTILE);
    expect(texts).toEqual(expect.arrayContaining(['Run: grpo', 'Step: 33']));
    expect(texts.some((t) => t.startsWith('frac_zero_std 1 > 0.8'))).toBe(true);

    await run.write(3);
    await bot.waitFor(() => bot.received.length === 2);
    expect(bot.json<Json>(1).card.header).toMatchObject({
      template: 'green',
      title: { content: 'CRITICAL · mode_collapse resolved · grpo' },
    });
  }, 30_000);

  it("a run's milestone report is posted as its card, as of the step that reached the epoch", async () => {
    const { bot, run } = await setUp(SECRET);
    run.engine.caughtUp(); // watched live: reports are sent for what is reached from here on
    await run.write(55); // learning.log's epoch is the line's number / 100: line 50 reaches epoch 0.5
    expect(await run.reports()).toBe(1);
    // the lines may also have raised an alert, posted apart
    const at = (): number => bot.received.findIndex((r) => r.raw.includes('reached epoch 0.5'));
    await bot.waitFor(() => at() >= 0);
    const body = bot.json<Json>(at());
    expect(body.card.header).toEqual({
      title: { tag: 'plain_text', content: expect.stringMatching(/^grpo reached epoch 0\.5: \S/) },
      template: 'blue',
    });
    const texts = [...tagged(body.card)].filter((t) => t.tag === 'plain_text').map((t) => t.content as string);
    expect(texts.some((t) => t.includes('step 50, epoch 0.5'))).toBe(true);
  }, 30_000);

  it('a wrong secret is refused by the bot (code 19021) and set aside; a rate limit (9499) is retried', async () => {
    const wrong = await setUp('not-the-secret');
    await wrong.run.write(30);
    await wrong.run.write(4, { frac: 1 });
    await wrong.bot.waitFor(() => wrong.run.rows()[0]?.dead_at != null);
    expect(wrong.run.rows()[0]!.dead_reason).toMatch(/^feishu default: code 19021 sign match fail/);

    const { bot, run } = await setUp(SECRET);
    bot.answers.push({ status: 200, body: JSON.stringify({ code: 9499, msg: 'too many request' }) });
    await run.write(30);
    await run.write(4, { frac: 1 });
    await bot.waitFor(() => run.rows()[0]?.done_at != null, 5000);
    expect(run.rows()[0]).toMatchObject({ attempts: 1, dead_at: null });
    expect(bot.received).toHaveLength(2);
  }, 30_000);
});
