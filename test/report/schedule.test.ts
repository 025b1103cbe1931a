import { describe, expect, it } from 'vitest';
import { renderNotification } from '../../src/platforms/terminal/terminal.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { ReportSchedule } from '../../src/report/schedule.ts';
import type { StoreTx } from '../../src/store/contract.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { HOUR, MIN, T0, Trace, presetOnly } from '../engine/trace.ts';

/** `n` records from epoch `from`, 100 records per epoch, with this reward and frac_zero_std 0.25. */
const records = (n: number, from: number, reward: number) =>
  Array.from({ length: n }, (_, i) => ({ epoch: from + (i + 1) / 100, reward, reward_std: 0.02, frac_zero_std: 0.25 }));

function setup(config = ConfigSchema.parse({ report: { digest: '09:00' } })) {
  const t = new Trace({ book: presetOnly('mode_collapse') });
  const schedule = new ReportSchedule(
    new SqliteAsyncStore(t.store),
    config,
    () => ['console', 'discord:c1'],
    () => t.now,
  );
  return { t, schedule };
}

describe('scheduled reports', () => {
  it('a watched run reaching epoch 0.5 and 1.0 gets one report each, to every target of its warnings', async () => {
    const { t, schedule } = setup();
    t.feed(records(30, 0, 0.3)); // fed after the engine caught up: watched live
    expect(await schedule.tick()).toBe(0); // epoch 0.3: nothing due
    t.feed(records(25, 0.3, 0.3)); // epoch 0.55
    expect(await schedule.tick()).toBe(2);
    expect(await schedule.tick()).toBe(0); // once
    const [row] = t.outbox('discord:c1');
    expect(row!.notification.items).toEqual([]);
    expect(row!.notification.report).toMatchObject({
      kind: 'milestone',
      title: expect.stringMatching(/^r1 reached epoch 0.5: /),
    });
    // every record has frac_zero_std 0.25, above its 0.10: struggling, as `run report` says
    expect(row!.notification.report!.title).toContain('Struggling');
    expect(renderNotification(row!.notification, false).split('\n')[0]).toBe(
      `[REPORT] ${row!.notification.report!.title}`,
    );
    t.feed(records(50, 0.55, 0.4)); // epoch 1.05
    await schedule.tick();
    expect(t.outbox('console').map((r) => r.notification.report?.title.split(':')[0])).toEqual([
      'r1 reached epoch 0.5',
      'r1 reached epoch 1',
    ]);
  });

  it('a tick started while one runs adds nothing; a milestone seen marked is not asked of the store again', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    let marks = 0; // reports.mark calls, in the transactions the schedule opens
    const inner = new SqliteAsyncStore(t.store);
    const counted = (tx: StoreTx): StoreTx =>
      Object.assign(Object.create(tx) as StoreTx, {
        reports: {
          ...tx.reports,
          mark: (...args: Parameters<StoreTx['reports']['mark']>) => (marks++, tx.reports.mark(...args)),
        },
      });
    const store = Object.assign(Object.create(inner) as SqliteAsyncStore, {
      transaction: <T>(fn: (tx: StoreTx) => Promise<T>) => inner.transaction((tx) => fn(counted(tx))),
    });
    const schedule = new ReportSchedule(
      store,
      ConfigSchema.parse({}),
      () => ['console'],
      () => t.now,
    );
    t.feed(records(55, 0, 0.3)); // epoch 0.55
    expect(await Promise.all([schedule.tick(), schedule.tick()])).toEqual([1, 0]);
    expect(t.outbox('console')).toHaveLength(1);
    expect(marks).toBe(1); // epoch 1.0 not reached: not asked
    expect(await schedule.tick()).toBe(0);
    expect(marks).toBe(1);
    t.feed(records(50, 0.55, 0.3)); // epoch 1.05
    expect(await schedule.tick()).toBe(1);
    expect(marks).toBe(2);
  });

  it('a milestone passed before the run was watched live is not announced; a mute on rule report holds them', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.restart(() => t.feed(records(60, 0, 0.3), false)); // read at start-up as history: epoch 0.6, not live
    const schedule = new ReportSchedule(
      new SqliteAsyncStore(t.store),
      ConfigSchema.parse({}),
      () => ['console'],
      () => t.now,
    );
    expect(await schedule.tick()).toBe(0);
    t.store.silences.add({
      run: 'r1',
      rule: 'report',
      severity: null,
      author: 'ana',
      reason: 'known',
      starts_at: t.now,
      ends_at: t.now + 2 * HOUR,
    });
    t.feed(records(45, 0.6, 0.3)); // epoch 1.05, muted
    expect(await schedule.tick()).toBe(0);
    expect(t.outbox('console')).toEqual([]);
  });

  it('the daily digest: once a day after its time, one message per channel, reward since yesterday', async () => {
    const { t, schedule } = setup(); // T0 is 03:00 UTC; the digest is at 09:00
    t.feed(records(20, 0, 0.2));
    t.advance(23 * HOUR); // 02:00 the next day: the rewards logged from now on are today's
    t.feed(records(20, 0.2, 0.5));
    expect(await schedule.tick()).toBe(0); // before 09:00
    t.advance(7 * HOUR + 30 * MIN);
    expect(await schedule.tick()).toBe(2); // 09:30, one message per channel
    const digest = t.outbox('discord:c1')[0]!.notification;
    expect(digest.report).toMatchObject({ kind: 'digest', title: 'rlwatch daily digest, 2025-01-02' });
    expect(digest.report!.lines).toEqual([
      expect.stringMatching(/^r1: 🟠 Struggling.* · step 40 · no alert firing · reward 0.5 \(yesterday 0.2\)$/),
    ]);
    t.advance(30 * MIN);
    expect(await schedule.tick()).toBe(0); // once a day
  });

  it("the digest carries each run's info alerts of the last 24 h: how many per rule, and the metric's last value", async () => {
    const { t, schedule } = setup(); // T0 is Jan 1, 03:00 UTC; the digest at 09:00
    t.feed(records(20, 0, 0.2)); // reward 0.2 and frac_zero_std 0.25 are the last values
    // incidents that fired then, each resolved an hour later (one key is open once at a time)
    const add = (rule: string, metric: string, severity: string, hoursAfterT0: number): void => {
      const at = T0 + hoursAfterT0 * HOUR;
      const a = t.store.alerts.create(t.run.id, rule, metric, 'firing', {
        step: 20,
        at,
        severity,
        summary: `${rule} fired`,
        details: {},
      });
      t.store.alerts.resolve(a.id, { step: 20, at: at + HOUR, severity, summary: 'resolved', details: {} });
    };
    add('reward_trend', 'reward', 'info', 5); // Jan 1 08:00: more than 24 h before Jan 2 09:30
    add('reward_trend', 'reward', 'info', 9); // Jan 1 12:00
    add('reward_trend', 'reward', 'info', 26); // Jan 2 05:00
    add('zero_signal_too_hard', 'frac_zero_std', 'info', 22); // Jan 2 01:00
    add('truncation', 'clipped_ratio', 'warning', 23); // a warning went to the channel already
    t.advance(30 * HOUR + 30 * MIN); // Jan 2 09:30
    expect(await schedule.tick()).toBe(2);
    const lines = t.outbox('discord:c1')[0]!.notification.report!.lines;
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^r1: .* · step 20 · no alert firing · reward 0.2 \(yesterday 0.2\)$/);
    expect(lines[1]).toBe(
      '  info, last 24 h: reward_trend ×2 (reward now 0.2), zero_signal_too_hard ×1 (frac_zero_std now 0.25)',
    );
    // the terminal gets the same message
    expect(t.outbox('console')[0]!.notification.report!.lines).toEqual(lines);
  });

  it("the digest time is read in `report.digestZone`, and the day in its title is that zone's", async () => {
    // 09:00 in Tokyo is 00:00 UTC; T0 (03:00 UTC) is 12:00 there, past today's digest
    const config = ConfigSchema.parse({ report: { digest: '09:00', digestZone: 'Asia/Tokyo' } });
    const { t, schedule } = setup(config);
    t.feed(records(5, 0, 0.2));
    expect(await schedule.tick()).toBe(0);
    t.advance(20 * HOUR + 50 * MIN); // Jan 1 23:50 UTC: 08:50 on Jan 2 in Tokyo
    expect(await schedule.tick()).toBe(0);
    t.advance(20 * MIN); // 09:10 in Tokyo
    expect(await schedule.tick()).toBe(2);
    expect(t.outbox('console')[0]!.notification.report!.title).toBe('rlwatch daily digest, 2025-01-02');
    expect(() => ConfigSchema.parse({ report: { digestZone: 'Mars/Olympus' } })).toThrow(/IANA time zone/);
  });

  it('no digest for a day whose time had passed when the process started, nor when it is off or muted', async () => {
    const late = new Trace({ book: presetOnly('mode_collapse'), now: T0 + 7 * HOUR }); // 10:00
    late.feed(records(5, 0, 0.2));
    const config = ConfigSchema.parse({});
    expect(
      await new ReportSchedule(
        new SqliteAsyncStore(late.store),
        config,
        () => ['console'],
        () => late.now,
      ).tick(),
    ).toBe(0);
    const off = ConfigSchema.parse({ report: { digest: 'off' } });
    late.advance(24 * HOUR);
    expect(
      await new ReportSchedule(
        new SqliteAsyncStore(late.store),
        off,
        () => ['console'],
        () => late.now - 2 * HOUR,
      ).tick(),
    ).toBe(0);
    late.store.silences.add({
      run: '*',
      rule: 'digest',
      severity: null,
      author: 'ana',
      reason: 'weekend',
      starts_at: late.now,
      ends_at: late.now + 48 * HOUR,
    });
    const s = new ReportSchedule(
      new SqliteAsyncStore(late.store),
      config,
      () => ['console'],
      () => late.now,
    );
    expect(await s.tick()).toBe(0);
    expect(() => ConfigSchema.parse({ report: { digest: '9am' } })).toThrow(/HH:MM/);
  });
});
