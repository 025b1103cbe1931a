import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ago } from '../../src/commands/context.ts';
import { interact } from '../../src/interact/interaction.ts';
import { silentLog } from '../../src/lib/log.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

describe('run list', () => {
  it('shows the server path to the CLI only, never in a channel; times in the reader terms', async () => {
    const store = Store.open(join(tempDir('rlw-runlist-'), 'a.db'));
    stores.push(store);
    const run = store.runs.ensure('grpo-7b', '/srv/secret/home/ana/runs/grpo-7b');
    const updated = 1_700_000_000_000;
    store.runs.noteBatch(run.id, 1, 10, 10, updated);
    const asker = {
      store: new SqliteAsyncStore(store),
      log: silentLog,
      user: 'ana',
      userName: 'ana',
      mayWrite: () => true,
      rightsHint: '',
      now: updated + 12 * 60_000 + 5000,
    };
    const chat = await interact({ words: ['run', 'list'] }, asker);
    const cli = await interact({ words: ['run', 'list'] }, { ...asker, local: true });
    expect(chat.ok && chat.reply.lines.join('\n')).not.toContain('/srv/secret');
    expect(chat.ok && chat.reply.lines[0]).toContain('updated 12 min ago');
    expect(cli.ok && cli.reply.lines[0]).toContain('/srv/secret/home/ana/runs/grpo-7b');
  });

  it('says how long ago in minutes, hours and days', () => {
    const now = 10 * 86_400_000;
    expect([
      ago(null, now),
      ago(now - 30_000, now),
      ago(now - 12 * 60_000, now),
      ago(now - 3 * 3_600_000, now),
      ago(now - 2 * 86_400_000, now),
    ]).toEqual(['never', 'just now', '12 min ago', '3 h ago', '2 d ago']);
  });
});
