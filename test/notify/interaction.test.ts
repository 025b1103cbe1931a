import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/interact/registry.ts';
import type { Log } from '../../src/lib/log.ts';
import { buttonRequest, displayName, interact, type Asker } from '../../src/interact/interaction.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** A run `grpo-7b` with one firing mode_collapse alert. */
function world(): { store: Store; alertId: number; warnings: string[]; asker: (o?: Partial<Asker>) => Asker } {
  const { store } = freshStore();
  stores.push(store);
  const run = store.runs.ensure('grpo-7b', '/runs/grpo-7b');
  const change = {
    step: 33,
    at: 1000,
    severity: 'critical',
    summary: 'frac_zero_std 1 > 0.8 for 3 steps',
    details: {},
  };
  const alert = store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', change);
  const warnings: string[] = [];
  const log: Log = { info: () => {}, warn: (m) => warnings.push(m) } as Log;
  const asker = (o: Partial<Asker> = {}): Asker => ({
    store: new SqliteAsyncStore(store),
    log,
    user: '@ana',
    userName: 'Ana',
    mayWrite: () => true,
    rightsHint: 'x.allow in rlwatch.yaml',
    now: 5000,
    ...o,
  });
  return { store, alertId: alert.id, warnings, asker };
}

describe('one interaction path for typed commands and buttons', () => {
  it('the Ack button is `ack ID`: the same reply, the same record', async () => {
    const w = world();
    const typed = world();
    const byButton = await interact(buttonRequest(`ack:${w.alertId}`)!, w.asker());
    const byText = await interact({ words: ['ack', String(typed.alertId)] }, typed.asker());
    expect(byButton.ok && byText.ok).toBe(true);
    if (!byButton.ok || !byText.ok) return;
    expect(byButton.reply.title).toBe(byText.reply.title);
    expect(byButton.reply.title).toBe(`Acked #${w.alertId} mode_collapse (frac_zero_std) by Ana`);
    // the platform's id for audit, the name beside it for readers
    expect(w.store.alerts.byId(w.alertId)).toMatchObject({ acked_by: '@ana', acked_by_name: 'Ana' });
  });

  it("a button's errors are the command's: an unknown alert says the same from a click and from text", async () => {
    const w = world();
    const click = await interact(buttonRequest('ack:999')!, w.asker());
    const text = await interact({ words: ['ack', '999'] }, w.asker());
    expect(click).toEqual({ ok: false, message: 'no alert #999 (see `alerts --all`)' });
    expect(text).toEqual(click);
    const mute = await interact(buttonRequest('muteRun:999')!, w.asker());
    expect(mute).toEqual(click);
  });

  it("Mute run 1h mutes the alert's run; Mute rule 24h only its rule in that run", async () => {
    const w = world();
    const run = await interact(buttonRequest(`muteRun:${w.alertId}`)!, w.asker());
    const rule = await interact(buttonRequest(`muteRule:${w.alertId}`)!, w.asker());
    expect(run.ok && rule.ok).toBe(true);
    const [a, b] = w.store.silences.active(5000);
    expect(a).toMatchObject({
      run: 'grpo-7b',
      rule: null,
      ends_at: 5000 + 3_600_000,
      author: '@ana',
      author_name: 'Ana',
      reason: `alert #${w.alertId}`,
    });
    expect(b).toMatchObject({ run: 'grpo-7b', rule: 'mode_collapse', ends_at: 5000 + 86_400_000 });
    // the same as typed by name
    const typed = await interact({ words: ['mute'], args: { alert: w.alertId, duration: '2h' } }, w.asker());
    expect(typed.ok && typed.reply.lines[0]).toContain('run grpo-7b ending in 2 h by Ana');
    const both = await interact({ words: ['mute', 'grpo-7b', '2h'], args: { alert: w.alertId } }, w.asker());
    expect(both).toEqual({ ok: false, message: 'give alert, or run and rule, not both' });
  });

  it('rights are checked for write commands only, before parsing, with the same wording for a click', async () => {
    const w = world();
    let asked = 0;
    const denied = w.asker({ mayWrite: () => (asked++, false) });
    const click = await interact(buttonRequest(`ack:${w.alertId}`)!, denied);
    expect(click).toEqual({
      ok: false,
      message: 'You may not use /ack: ask for the ack/mute right (x.allow in rlwatch.yaml).',
    });
    expect(await interact({ words: ['mute', 'nonsense words'] }, denied)).toMatchObject({
      message: expect.stringMatching(/^You may not use \/mute/),
    });
    expect(w.store.alerts.byId(w.alertId)?.acked_by).toBeNull();
    const read = await interact({ words: ['alerts'] }, denied);
    expect(read.ok).toBe(true);
    expect(asked).toBe(2);
  });

  it('a bad argument is a private usage line; an unknown word the usage of its group', async () => {
    const w = world();
    expect(await interact({ words: ['mute', 'grpo-7b'] }, w.asker())).toEqual({
      ok: false,
      message: 'usage: /mute [run] [rule] [info|warning|critical] <duration> [reason]: duration is required',
    });
    const group = await interact({ words: ['run', 'stats'] }, w.asker());
    expect(group.ok === false && group.message.split('\n')).toContain('usage: /run status [run]');
  });

  it('anything else is a short apology with a reference, and a log line with the same reference', async () => {
    const w = world();
    const broken = COMMANDS.find((c) => c.path[0] === 'alerts')!;
    const original = broken.run;
    (broken as { run: typeof original }).run = () => {
      throw new TypeError('boom');
    };
    try {
      const a = await interact({ words: ['alerts'] }, w.asker());
      expect(a.ok).toBe(false);
      if (a.ok) return;
      const ref = /\(ref ([0-9a-f]{6})\)/.exec(a.message)?.[1];
      expect(a.message).toBe(`Sorry, that failed on rlwatch's side (ref ${ref}); its log says why.`);
      expect(a.message).not.toContain('boom');
      expect(w.warnings).toHaveLength(1);
      expect(w.warnings[0]).toContain(`(ref ${ref}): TypeError: boom`);
      expect(a.error).toBeInstanceOf(TypeError);
    } finally {
      (broken as { run: typeof original }).run = original;
    }
  });
});

describe('display names: untrusted text made one short line', () => {
  it('newlines, control and invisible format characters become one space; the id stands in for no name', () => {
    expect(displayName('Ana  Lima', '@ana')).toBe('Ana Lima');
    expect(displayName('ana\n> quoted\r\n# Heading', '@ana')).toBe('ana > quoted # Heading');
    expect(displayName('\u202eevil\u0007 \u200bname\u00a0', '@x')).toBe('evil name');
    expect(displayName(' \t\n', '<@U0001>')).toBe('<@U0001>');
    expect(displayName('👩\u200d👩\u200d👧 family', '@x')).toBe('👩\u200d👩\u200d👧 family');
    expect([...displayName('x'.repeat(500), '@x')]).toHaveLength(64);
  });

  it('what a command records and answers is the cleaned name', async () => {
    const w = world();
    const a = await interact({ words: ['ack', String(w.alertId)] }, w.asker({ userName: 'Ana\n@everyone' }));
    expect(a.ok && a.reply.title).toBe(`Acked #${w.alertId} mode_collapse (frac_zero_std) by Ana @everyone`);
    expect(w.store.alerts.byId(w.alertId)?.acked_by_name).toBe('Ana @everyone');
  });
});
