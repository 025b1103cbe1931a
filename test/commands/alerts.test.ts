import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLog } from '../../src/lib/log.ts';
import { interact, type Asker } from '../../src/interact/interaction.ts';
import { MIGRATIONS_DIR } from '../../src/lib/paths.ts';
import { migrate } from '../../src/store/sqlite/migrate.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { tempDir } from '../helpers.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const T = Date.UTC(2026, 10, 22, 9, 0, 0);

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** A run `grpo-7b` with a collapse that fired at T and a spike that fired at T + 5 min and resolved at T + 20 min. */
function world() {
  const { store } = freshStore();
  stores.push(store);
  const run = store.runs.ensure('grpo-7b', '/runs/grpo-7b');
  const collapse = store.alerts.create(run.id, 'mode_collapse', 'frac_zero_std', 'firing', {
    step: 33,
    at: T,
    severity: 'critical',
    summary: 'frac_zero_std 1 > 0.8 for 3 steps',
    details: {},
  });
  const spike = store.alerts.create(run.id, 'grad_explosion', 'grad_norm', 'firing', {
    step: 40,
    at: T + 5 * MIN,
    severity: 'warning',
    summary: 'grad_norm 15.8 > 10',
    details: {},
  });
  store.alerts.resolve(spike.id, {
    step: 45,
    at: T + 20 * MIN,
    severity: 'warning',
    summary: 'back under 10',
    details: {},
  });
  return { store, collapse, spike };
}

/** A Slack user: recorded by mention, shown by the name Slack's payload carries. */
const slackAna = (store: Store, now: number): Asker => ({
  store: new SqliteAsyncStore(store),
  log: silentLog,
  user: '<@U0ANA>',
  userName: 'ana',
  mayWrite: () => true,
  rightsHint: '',
  now,
});

describe("/alerts: times in the reader's terms, ackers by name", () => {
  it("says when each alert fired or resolved, relative to the caller's clock; --json keeps ISO", async () => {
    const { store, collapse, spike } = world();
    const now = T + 47 * MIN;
    const a = await interact({ words: ['alerts', 'all'] }, slackAna(store, now));
    if (!a.ok) throw new Error(a.message);
    const lines = a.reply.lines;
    expect(lines).toHaveLength(2);
    // newest first: the spike resolved (now - (T + 20 min)) ago, the collapse fired (now - T) ago
    expect(lines[0]).toContain(`#${spike.id} `);
    expect(lines[0]).toContain(`step 40: grad_norm 15.8 > 10 · resolved ${(now - (T + 20 * MIN)) / MIN} min ago`);
    expect(lines[1]).toContain(`step 33: frac_zero_std 1 > 0.8 for 3 steps · fired ${(now - T) / MIN} min ago`);
    for (const l of lines) expect(l).not.toMatch(/\d{4}-\d\d-\d\dT/);
    expect(a.reply.data).toMatchObject([
      {
        id: spike.id,
        startedAt: new Date(T + 5 * MIN).toISOString(),
        resolvedAt: new Date(T + 20 * MIN).toISOString(),
      },
      { id: collapse.id, startedAt: new Date(T).toISOString(), resolvedAt: null },
    ]);
    expect(a.reply.title).toBe('2 alerts');
    const later = await interact({ words: ['alerts'] }, slackAna(store, T + 26 * HOUR));
    expect(later.ok && later.reply.title).toBe('1 firing alert');
    expect(later.ok && later.reply.lines[0]).toContain('fired 1 d ago');
  });

  it('counts warnings and criticals as firing, an info alert (a run finished) apart; lines need no fixed-width font', async () => {
    const { store, collapse } = world();
    const run = store.runs.byName('grpo-7b')!;
    const finished = store.alerts.create(run.id, 'run_finished', 'run', 'firing', {
      step: 50,
      at: T + 30 * MIN,
      severity: 'info',
      summary: 'training finished',
      details: {},
    });
    const a = await interact({ words: ['alerts'] }, slackAna(store, T + HOUR));
    if (!a.ok) throw new Error(a.message);
    expect(a.reply.title).toBe('1 firing alert (and 1 info)');
    expect(a.reply.lines.map((l) => l.split(':')[0])).toEqual([
      `#${finished.id} info · firing · grpo-7b · run_finished at step 50`,
      `#${collapse.id} critical · firing · grpo-7b · mode_collapse at step 33`,
    ]);
    // no column padding: a proportional font would collapse it
    for (const l of a.reply.lines) expect(l).not.toMatch(/ {2}/);
  });

  it('a pending alert says when it was first seen', async () => {
    const { store } = world();
    const run = store.runs.byName('grpo-7b')!;
    const pending = store.alerts.create(run.id, 'entropy_collapse', 'entropy', 'pending', {
      step: 50,
      at: T + 30 * MIN,
      severity: 'warning',
      summary: 'entropy 0.03 < 0.04',
      details: {},
    });
    const a = await interact({ words: ['alerts', 'all'] }, slackAna(store, T + 30 * MIN + 40_000));
    expect(a.ok && a.reply.lines.find((l) => l.startsWith(`#${pending.id} `))).toContain(
      'step 50: entropy 0.03 < 0.04 · first seen just now',
    );
  });

  it('a Slack user who acked shows by name, not as <@U…>; the mention stays recorded for audit', async () => {
    const { store, collapse } = world();
    const ack = await interact({ words: ['ack', String(collapse.id), 'looking'] }, slackAna(store, T + MIN));
    expect(ack.ok && ack.reply.title).toBe(`Acked #${collapse.id} mode_collapse (frac_zero_std) by ana`);
    expect(ack.ok && ack.reply.data).toMatchObject({
      ackedBy: '<@U0ANA>',
      ackedByName: 'ana',
      ackedAt: new Date(T + MIN).toISOString(),
    });
    expect(store.alerts.byId(collapse.id)).toMatchObject({
      acked_by: '<@U0ANA>',
      acked_by_name: 'ana',
      ack_comment: 'looking',
    });
    // read by someone else, on another platform
    const bo: Asker = {
      store: new SqliteAsyncStore(store),
      log: silentLog,
      user: '@bo',
      userName: 'Bo',
      mayWrite: () => false,
      rightsHint: '',
      now: T + 2 * MIN,
    };
    const list = await interact({ words: ['alerts'] }, bo);
    expect(list.ok && list.reply.lines[0]).toMatch(/\[acked by ana\]$/);
    expect(JSON.stringify(list.ok && list.reply.lines)).not.toContain('U0ANA');
    expect(list.ok && list.reply.data).toMatchObject([{ ackedBy: '<@U0ANA>', ackedByName: 'ana' }]);
  });
});

describe("/mutes: the end in the reader's terms, the author by name", () => {
  it("a mute says when it ends from the caller's clock, and who set it by name", async () => {
    const { store } = world();
    const set = await interact({ words: ['mute', 'grpo-7b', '2h', 'noisy'] }, slackAna(store, T));
    expect(set.ok && set.reply.lines).toEqual(['#1 run grpo-7b ending in 2 h by ana: noisy']);
    expect(store.silences.byId(1)).toMatchObject({ author: '<@U0ANA>', author_name: 'ana', ends_at: T + 2 * HOUR });
    // 1 h 45 min before the end: rounded up, never told it ends sooner than it does
    const list = await interact({ words: ['mutes'] }, slackAna(store, T + 15 * MIN));
    expect(list.ok && list.reply.lines).toEqual([
      `#1 run grpo-7b ending in ${Math.ceil((2 * HOUR - 15 * MIN) / HOUR)} h by ana: noisy`,
    ]);
    const soon = await interact({ words: ['mutes'] }, slackAna(store, T + 2 * HOUR - 12 * MIN));
    expect(soon.ok && soon.reply.lines[0]).toContain('ending in 12 min');
    expect(soon.ok && soon.reply.data).toMatchObject([
      { author: '<@U0ANA>', authorName: 'ana', endsAt: new Date(T + 2 * HOUR).toISOString() },
    ]);
    const end = await interact({ words: ['unmute', '1'] }, slackAna(store, T + 30 * MIN));
    expect(end.ok && end.reply.lines).toEqual(['#1 run grpo-7b ended just now by ana: noisy']);
  });
});

describe('migration 017 on a database from before it', () => {
  it('gives old acks and mutes their recorded id as name, so nothing shows blank', () => {
    const dir = tempDir('rlw-mig-');
    const before = join(dir, 'before');
    mkdirSync(before);
    for (const f of readdirSync(MIGRATIONS_DIR).filter((f) => /^\d+_.*\.sql$/.test(f) && Number(f.slice(0, 3)) < 17)) {
      copyFileSync(join(MIGRATIONS_DIR, f), join(before, f));
    }
    const path = join(dir, 'old.db');
    const db = new Database(path);
    migrate(db, before);
    db.prepare(`INSERT INTO runs (id, name, path, created_at) VALUES (1, 'grpo', '/r/grpo', 0)`).run();
    db.prepare(`INSERT INTO alerts (id, run_id, rule, metric, severity, state, summary, details, started_step, started_at,
      acked_by, acked_at) VALUES (1, 1, 'mode_collapse', 'frac_zero_std', 'critical', 'firing', 's', '{}', 1, 0, '<@U0OLD>', 5)`).run();
    db.prepare(`INSERT INTO alerts (id, run_id, rule, metric, severity, state, summary, details, started_step, started_at)
      VALUES (2, 1, 'grad_explosion', 'grad_norm', 'warning', 'firing', 's', '{}', 1, 0)`).run();
    db.prepare(
      `INSERT INTO silences (run, rule, severity, starts_at, ends_at, author, reason) VALUES ('grpo', NULL, NULL, 0, 1, '@bo', '')`,
    ).run();
    db.close();
    const store = Store.open(path);
    stores.push(store);
    expect(store.alerts.byId(1)).toMatchObject({ acked_by: '<@U0OLD>', acked_by_name: '<@U0OLD>' });
    expect(store.alerts.byId(2)).toMatchObject({ acked_by: null, acked_by_name: null });
    expect(store.silences.byId(1)).toMatchObject({ author: '@bo', author_name: '@bo' });
  });
});
