import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Notification } from '../../../src/engine/notification.ts';
import type { Target } from '../../../src/notify/dispatcher.ts';
import { DiscordBot } from '../../../src/platforms/discord/bot.ts';
import { DiscordSection } from '../../../src/platforms/discord/index.ts';
import { SqliteAsyncStore } from '../../../src/store/sqlite/sqliteAsync.ts';
import { freshStore } from '../../fixtures/pipeline.ts';
import { startFakeDiscord, type FakeDiscord, type RecordedRequest } from '../../fakes/discordServer.ts';

describe("Discord: a channel's posts go one at a time, the most urgent first (the real client, a local fake)", () => {
  let fake: FakeDiscord;
  let bot: DiscordBot;
  let target: Target;
  const { store } = freshStore();
  /** A firing alert of a run of its own, and the delivery of its card (`key` and outbox urgency). */
  const deliver = (rule: string, severity: string, key: string, urgency: number): Promise<void> => {
    const run = store.runs.ensure(rule, `/runs/${rule}`);
    const change = { step: 1, at: Date.now(), severity, summary: rule, details: {} };
    const alertId = store.alerts.create(run.id, rule, 'm', 'firing', change).id;
    const n: Notification = {
      run: rule,
      items: [
        {
          alertId,
          kind: 'firing',
          severity,
          rule,
          metric: 'm',
          summary: rule,
          step: 1,
          epoch: null,
          recent: [],
          examples: null,
        },
      ],
    };
    return target.deliver(n, key, run.id, urgency);
  };

  beforeAll(async () => {
    fake = await startFakeDiscord();
    bot = new DiscordBot({
      token: fake.token,
      apiUrl: fake.apiUrl,
      guildId: fake.guildId,
      channel: fake.channelId,
      retries: 0,
      section: DiscordSection.parse({}),
      store: new SqliteAsyncStore(store),
      log: { info: () => {}, warn: () => {} },
    });
    await bot.start();
    target = bot.targets()[0]!;
  }, 20_000);

  afterAll(async () => {
    await bot?.stop();
    await fake?.close();
    store.close();
  });

  it('a critical card handed over behind two warnings is posted right after the one on its way', async () => {
    const posts = new RegExp(`^/channels/${fake.channelId}/messages$`);
    const first = fake.holdNext('POST', posts);
    const deliveries = [deliver('first_warning', 'warning', '1', 1)];
    await first.arrived;
    deliveries.push(deliver('second_warning', 'warning', '2', 1));
    await sleep(300); // the second warning waits for its turn
    deliveries.push(deliver('the_critical', 'critical', '3', 2));
    await sleep(300);
    first.release();
    await Promise.all(deliveries);
    const rule = (r: RecordedRequest): string =>
      (r.body as { embeds: Array<{ description: string }> }).embeds[0]!.description;
    const order = fake.requests.filter((r) => r.method === 'POST' && posts.test(r.path)).map(rule);
    expect(order).toEqual(['first_warning', 'the_critical', 'second_warning']);
  }, 20_000);
});
