import { afterEach, describe, expect, it } from 'vitest';
import { alertRoute, makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { discord } from '../../src/platforms/discord/index.ts';
import { sectionOf } from '../../src/platforms/platform.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import { ROUTED } from '../../src/store/outbox.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** Five records that fire zero_signal_too_easy (info) and truncation (warning), written by an engine that knows no chat
 * settings (a watcher's), then routed by the dispatcher of a process holding Discord's settings (with no lane, so that
 * the routed rows stay to be read); the outbox rows: target -> rules. */
async function routed(config: unknown): Promise<Record<string, string[]>> {
  const { store } = freshStore();
  stores.push(store);
  const run = store.runs.ensure('r1', '/x/r1');
  const file = store.files.add(run.id, '/x/r1/train.jsonl', 'jsonlMetrics');
  const parsed = ConfigSchema.parse(config);
  const platforms = {
    discord: discord.settings(sectionOf(parsed, discord), { DISCORD_TOKEN: 't', DISCORD_CHANNEL_ID: 'alerts' }),
  };
  const engine = makeEngine(store, parsed, { terminal: false, now: () => 1 });
  store.commit(
    {
      runId: run.id,
      fileId: file.id,
      metrics: Array.from({ length: 5 }, (_, i) => ({
        step: i + 1,
        values: new Map([
          ['frac_zero_std', 1],
          ['reward', 0.95],
          ['clipped_ratio', 0.2],
        ]),
      })),
      examples: [],
      skips: new Map(),
      progress: { dev: 1, ino: 1, offset: 10, size: 10, mtimeMs: 1, seq: 1, lines: 5, records: 5 },
    },
    2,
  );
  engine.evaluate(run.id);
  const written = store.db.prepare('SELECT target FROM outbox').all() as Array<{ target: string }>;
  expect(written).toEqual([{ target: ROUTED }]); // one row, for no platform: the engine routes nothing itself
  const dispatcher = new Dispatcher(new SqliteAsyncStore(store), [], { route: alertRoute(parsed, platforms, true) });
  await dispatcher.kick();
  await dispatcher.stop(0);
  const neutral = store.db.prepare('SELECT done_at FROM outbox WHERE target = ?').all(ROUTED) as Array<{
    done_at: number | null;
  }>;
  expect(neutral.map((r) => r.done_at !== null)).toEqual([true]);
  const rows = store.db
    .prepare('SELECT target, payload FROM outbox WHERE target <> ? ORDER BY id')
    .all(ROUTED) as Array<{ target: string; payload: string }>;
  const out: Record<string, string[]> = {};
  for (const r of rows) {
    expect(out[r.target]).toBeUndefined(); // one row per target
    out[r.target] = (JSON.parse(r.payload) as Notification).items.map((i) => `${i.rule} ${i.severity}`).sort();
  }
  return out;
}

describe('routing at delivery, of info alerts', () => {
  it('info goes to the terminal only; warnings go to the chat channel too', async () => {
    expect(await routed({ alerts: { preset: 'grpo' } })).toEqual({
      console: ['mode_collapse critical', 'truncation warning', 'zero_signal_too_easy info'],
      'discord:alerts': ['mode_collapse critical', 'truncation warning'],
    });
  });

  it('a route that names info takes info to its channel', async () => {
    const r = await routed({ discord: { routes: [{ runs: '*', severity: ['info'], channel: 'trends' }] } });
    expect(r['discord:trends']).toEqual(['zero_signal_too_easy info']);
    expect(r['discord:alerts']).toEqual(['mode_collapse critical', 'truncation warning']);
  });
});
