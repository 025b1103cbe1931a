/**
 * Acks and mutes clicked and typed at the same moment in chat, answered by the real `startApp` (the real discord.js
 * Client against the local fake Discord, a real SQLite file) while it delivers alerts: every one is answered as done
 * and stored. They used to race for the store's gate: 5 of 6 simultaneous /mute answered "Sorry, that failed".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { WatchedRun } from '../interact/watchedRun.ts';

const ana = { id: '111111111111111111', username: 'ana', globalName: 'Ana Lima' };
const content = (i: { callback: { data?: unknown } | null }): string => JSON.stringify(i.callback?.data ?? null);

describe('simultaneous acks and mutes in chat', () => {
  let fake: FakeDiscord;
  let app: App;
  const run = new WatchedRun();

  beforeAll(async () => {
    fake = await startFakeDiscord();
    run.write(30);
    const config = ConfigSchema.parse({ discord: { allow: { users: [ana.id] } } });
    app = await run.start(config, {
      discord: { token: fake.token, apiUrl: fake.apiUrl, guildId: fake.guildId, channel: fake.channelId, retries: 0 },
    });
  }, 20_000);

  afterAll(async () => {
    await app?.stop();
    await fake?.close();
  }, 20_000);

  it('six /mute at once: all answered as done, six mutes stored', async () => {
    const outs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        fake.command({ name: 'mute', options: { run: 'grpo', duration: `${i + 1}h` }, user: ana, timeoutMs: 15_000 }),
      ),
    );
    expect(outs.map(content).filter((c) => c.includes('Sorry'))).toEqual([]);
    expect(app.store.db.prepare('SELECT count(*) FROM silences').pluck().get()).toBe(6);
  });

  it('20 acks at once as two alerts fire (their posts and charts going out): all answered as done, both acked', async () => {
    run.write(4, { frac: 1, grad: 50 }); // mode_collapse and grad_explosion fire, and are posted
    await fake.waitFor(() => (app.store.alerts.list({}).length >= 2 ? true : null), 10_000);
    const ids = app.store.alerts.list({}).map((a) => a.id);
    const outs = await Promise.all(
      ids.flatMap((id) =>
        Array.from({ length: 10 }, () => fake.command({ name: 'ack', options: { id }, user: ana, timeoutMs: 15_000 })),
      ),
    );
    expect(outs.map(content).filter((c) => c.includes('Sorry'))).toEqual([]);
    expect(
      app.store.alerts
        .list({})
        .filter((a) => a.acked_by !== null)
        .map((a) => a.id),
    ).toEqual(ids);
  });
});
