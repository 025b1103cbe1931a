import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { muteAlerts, muteList } from '../../src/commands/alerts.ts';
import { findCommand, parseText, UsageError } from '../../src/interact/registry.ts';
import { UserError } from '../../src/lib/errors.ts';
import { parseDuration } from '../../src/lib/duration.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

let store: Store;
beforeEach(() => {
  store = Store.open(join(tempDir(), 'test.db'));
});
afterEach(() => store.close());

const NOW = Date.UTC(2026, 0, 1);
const known = { runs: [], metrics: [] };

describe('absurd mute spans and numbers', () => {
  it('refuses a span past a year and stores nothing', async () => {
    const ctx = { store: new SqliteAsyncStore(store) };
    for (const span of ['99999999999999d', '366d', `${'9'.repeat(400)}s`]) {
      await expect(muteAlerts(ctx, { for: span, by: { id: 'ann', name: 'Ann' } }, NOW)).rejects.toThrow(UserError);
      await expect(muteAlerts(ctx, { for: span, by: { id: 'ann', name: 'Ann' } }, NOW)).rejects.toThrow(
        /is longer than a mute may be \(365d\)/,
      );
    }
    expect((await muteList(ctx, NOW)).lines).toEqual([]);
    expect(parseDuration('365d')).toBe(365 * 86_400_000);
    const ok = await muteAlerts(ctx, { for: '365d', by: { id: 'ann', name: 'Ann' } }, NOW);
    expect(ok.title).toBe('Muted for 365d');
  });

  it('lists a mute stored with an end no date can hold, instead of failing every later `mutes`', async () => {
    store.silences.add({
      run: null,
      rule: null,
      severity: null,
      starts_at: NOW,
      ends_at: 8.64e21,
      author: 'bob',
      reason: 'old',
    });
    const reply = await muteList({ store: new SqliteAsyncStore(store) }, NOW);
    expect(reply.lines).toEqual(['#1 everything until an end out of range (unmute it) by bob: old']);
    expect(reply.data).toMatchObject([{ id: 1, endsAt: null }]);
  });

  it('refuses whole numbers past what can be stored exactly', () => {
    const ack = findCommand(['ack'])!.spec;
    expect(() => parseText(ack, ['1e300'], known)).toThrow(UsageError);
    expect(() => parseText(ack, ['9'.repeat(30)], known)).toThrow(/whole number/);
    expect(parseText(ack, ['12'], known)).toMatchObject({ id: 12 });
  });
});
