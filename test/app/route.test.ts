import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { discord } from '../../src/platforms/discord/index.ts';
import { sectionOf } from '../../src/platforms/platform.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { Store } from '../../src/store/store.ts';
import { tempDir } from '../helpers.ts';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** Five records that fire zero_signal_too_easy (info) and truncation (warning), then the outbox rows: target -> rules. */
function routed(config: unknown): Record<string, string[]> {
  const store = Store.open(join(tempDir('rlw-route-'), 'a.db'));
  stores.push(store);
  const run = store.runs.ensure('r1', '/x/r1');
  const file = store.files.add(run.id, '/x/r1/train.jsonl', 'jsonlMetrics');
  const parsed = ConfigSchema.parse(config);
  const platforms = { discord: discord.settings(sectionOf(parsed, discord), { DISCORD_TOKEN: 't', DISCORD_CHANNEL_ID: 'alerts' }) };
  const engine = makeEngine(store, parsed, { terminal: true, platforms, now: () => 1 });
  store.commit(
    {
      runId: run.id,
      fileId: file.id,
      metrics: Array.from({ length: 5 }, (_, i) => ({
        step: i + 1,
        values: new Map([['frac_zero_std', 1], ['reward', 0.95], ['clipped_ratio', 0.2]]),
      })),
      examples: [],
      skips: new Map(),
      progress: { dev: 1, ino: 1, offset: 10, size: 10, mtimeMs: 1, seq: 1, lines: 5, records: 5 },
    },
    2,
  );
  engine.evaluate(run.id);
  const rows = store.db.prepare('SELECT target, payload FROM outbox ORDER BY id').all() as Array<{ target: string; payload: string }>;
  const out: Record<string, string[]> = {};
  for (const r of rows) out[r.target] = (JSON.parse(r.payload) as Notification).items.map((i) => `${i.rule} ${i.severity}`).sort();
  return out;
}

describe('routing of info alerts', () => {
  it('info goes to the terminal only; warnings go to the chat channel too', () => {
    expect(routed({ alerts: { preset: 'grpo' } })).toEqual({
      console: ['mode_collapse critical', 'truncation warning', 'zero_signal_too_easy info'],
      'discord:alerts': ['mode_collapse critical', 'truncation warning'],
    });
  });

  it('a route that names info takes info to its channel', () => {
    const r = routed({ discord: { routes: [{ runs: '*', severity: ['info'], channel: 'trends' }] } });
    expect(r['discord:trends']).toEqual(['zero_signal_too_easy info']);
    expect(r['discord:alerts']).toEqual(['mode_collapse critical', 'truncation warning']);
  });
});
