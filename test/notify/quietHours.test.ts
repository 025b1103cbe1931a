/**
 * Quiet hours: the local time of a zone (winter and summer time, an interval past midnight, its start days), and
 * what the dispatcher does with them on a real SQLite outbox: warnings held and summed up in one message once the
 * interval ends (after a restart too), a critical posted at once, a held alert that resolved or was acked left out.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import { Engine } from '../../src/engine/engine.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { DeliveryError, Dispatcher, type Target } from '../../src/notify/dispatcher.ts';
import { isQuiet, QuietSchema } from '../../src/notify/quietHours.ts';
import { redactingTarget, redactorOf } from '../../src/notify/redact.ts';
import { quietOf, router } from '../../src/notify/routing.ts';
import { webhook } from '../../src/platforms/webhook/index.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

const at = (iso: string): number => Date.parse(iso);

describe('isQuiet: the local time of the zone', () => {
  const paris = QuietSchema.parse({ hours: '22:00-07:00', timezone: 'Europe/Paris' });

  it('22:00-07:00 in Paris: winter (UTC+1) and summer (UTC+2) time, both ends', () => {
    expect(isQuiet(paris, at('2026-01-15T21:30:00Z'))).toBe(true); // 22:30 CET
    expect(isQuiet(paris, at('2026-01-15T20:59:00Z'))).toBe(false); // 21:59
    expect(isQuiet(paris, at('2026-01-16T05:59:00Z'))).toBe(true); // 06:59
    expect(isQuiet(paris, at('2026-01-16T06:00:00Z'))).toBe(false); // 07:00: the end is not quiet
    expect(isQuiet(paris, at('2026-07-15T20:30:00Z'))).toBe(true); // 22:30 CEST
    // the same instant in UTC is 20:30: not quiet
    expect(isQuiet(QuietSchema.parse({ hours: '22:00-07:00' }), at('2026-07-15T20:30:00Z'))).toBe(false);
  });

  it('days are the days an interval starts: Friday night runs into Saturday morning, Thursday night is not quiet', () => {
    const fridays = QuietSchema.parse({ hours: '22:00-07:00', days: ['fri'], timezone: 'Europe/Paris' });
    expect(isQuiet(fridays, at('2026-01-16T21:30:00Z'))).toBe(true); // Friday 22:30
    expect(isQuiet(fridays, at('2026-01-17T05:00:00Z'))).toBe(true); // Saturday 06:00
    expect(isQuiet(fridays, at('2026-01-15T21:30:00Z'))).toBe(false); // Thursday 22:30
    expect(isQuiet(fridays, at('2026-01-16T05:00:00Z'))).toBe(false); // Friday 06:00: Thursday's night
  });

  it('an interval within a day', () => {
    const lunch = QuietSchema.parse({ hours: '12:00-14:00' });
    expect(isQuiet(lunch, at('2026-01-15T13:00:00Z'))).toBe(true);
    expect(isQuiet(lunch, at('2026-01-15T14:00:00Z'))).toBe(false);
    expect(isQuiet(lunch, at('2026-01-15T11:59:00Z'))).toBe(false);
  });

  it('refuses hours, days and zones it cannot read', () => {
    expect(QuietSchema.safeParse({ hours: '25:00-07:00' }).success).toBe(false);
    expect(QuietSchema.safeParse({ hours: '22:00-22:00' }).success).toBe(false);
    expect(QuietSchema.safeParse({ hours: '22:00-07:00', days: ['friday'] }).success).toBe(false);
    expect(QuietSchema.safeParse({ hours: '22:00-07:00', timezone: 'Mars/Olympus' }).success).toBe(false);
  });
});

const stores: Store[] = [];
const dispatchers: Dispatcher[] = [];
afterEach(async () => {
  for (const d of dispatchers.splice(0)) await d.stop(0);
  for (const s of stores.splice(0)) s.close();
});

/** A webhook destination `ops` with quiet hours, its alerts written by the engine on an injected clock. */
function setUp(quiet: Record<string, unknown>) {
  const config = ConfigSchema.parse({});
  const section = webhook.section.parse({ channel: 'ops', quiet, urls: { ops: 'http://127.0.0.1:9/' } });
  const { store } = freshStore();
  stores.push(store);
  const clock = { now: 0 };
  const engine = new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: 4 * 3600_000,
    now: () => clock.now,
  });
  const delivered: Array<{ n: Notification; key: string }> = [];
  const refusals: Error[] = []; // the next deliveries fail with these
  // wrapped as the app wraps every target: the wrapper must pass the quiet hours on
  const target: Target = redactingTarget(
    {
      name: 'webhook:ops',
      quiet: quietOf(section, 'ops'),
      deliver: async (n, key) => {
        const refused = refusals.shift();
        if (refused) throw refused;
        delivered.push({ n, key });
      },
    },
    redactorOf(config),
  );
  const dispatcher = (quiet = true): Dispatcher => {
    const { quiet: _q, ...unquiet } = target;
    const d = new Dispatcher(new SqliteAsyncStore(store), [quiet ? target : unquiet], {
      now: () => clock.now,
      baseBackoffMs: 20,
      route: router('webhook', section, 'ops'),
    });
    dispatchers.push(d);
    return d;
  };
  const fire = (run: string, rule: string, severity: string): number => {
    const r = store.runs.ensure(run, `/runs/${run}`);
    const a = store.alerts.create(r.id, rule, 'm', 'firing', {
      step: 7,
      at: clock.now,
      severity,
      summary: `${rule} of ${run}\nmore`,
      details: {},
    });
    engine.announce(r.id);
    return a.id;
  };
  return { store, clock, engine, delivered, refusals, dispatcher, fire };
}

describe('quiet hours in the dispatcher', () => {
  it('holds warnings, posts a critical at once, and sums up the held ones still firing in one message at the end, after a restart', async () => {
    const { store, clock, engine, delivered, dispatcher, fire } = setUp({
      hours: '22:00-07:00',
      timezone: 'Europe/Paris',
    });
    clock.now = at('2026-01-15T21:30:00Z'); // 22:30 in Paris
    const first = dispatcher();
    const w1 = fire('grpo-a', 'entropy_drop', 'warning');
    const w2 = fire('grpo-b', 'kl_blowup', 'warning');
    const w3 = fire('grpo-b', 'slow_steps', 'warning');
    const crit = fire('grpo-a', 'mode_collapse', 'critical');
    const gone = fire('grpo-a', 'length_collapse', 'warning');
    const acked = fire('grpo-b', 'truncation', 'warning');
    await first.kick();
    // only the critical went out
    expect(delivered.map((d) => d.n.items.map((i) => i.alertId))).toEqual([[crit]]);
    // one warning resolves in the night: its resolution is held too (its card was never posted); one is acked
    clock.now += 60_000;
    store.alerts.resolve(gone, { step: 9, at: clock.now, severity: 'warning', summary: 'back', details: {} });
    engine.announce(store.runs.byName('grpo-a')!.id);
    store.alerts.ack(acked, { id: 'U1', name: 'ana' }, null, clock.now);
    await first.kick();
    expect(delivered).toHaveLength(1);
    await first.stop(0);

    // 07:05 in Paris, another process: the held rows were in the outbox all along
    clock.now = at('2026-01-16T06:05:00Z');
    await dispatcher().kick();
    expect(delivered).toHaveLength(2);
    const summary = delivered[1]!.n;
    expect(summary.items).toEqual([]);
    expect(summary.report?.title).toBe('While quiet (22:00-07:00): 3 warnings on 2 runs');
    expect(summary.report?.lines).toEqual([
      `WARNING · entropy_drop · grpo-a: entropy_drop of grpo-a (#${w1}, step 7)`,
      `WARNING · kl_blowup · grpo-b: kl_blowup of grpo-b (#${w2}, step 7)`,
      `WARNING · slow_steps · grpo-b: slow_steps of grpo-b (#${w3}, step 7)`,
    ]);
    expect(store.outbox.open()).toEqual([]);
    // nothing is posted twice
    await dispatcher().kick();
    expect(delivered).toHaveLength(2);
  });

  it('criticals: hold holds a critical with the warnings; outside quiet hours nothing is held', async () => {
    const { clock, delivered, dispatcher, fire } = setUp({ hours: '22:00-07:00', criticals: 'hold' });
    clock.now = at('2026-01-16T06:30:00Z');
    const d = dispatcher();
    const crit = fire('grpo-a', 'mode_collapse', 'critical');
    await d.kick();
    expect(delivered).toEqual([]);
    clock.now = at('2026-01-16T08:00:00Z');
    const warn = fire('grpo-a', 'slow_steps', 'warning');
    await d.kick();
    // the day's warning as it came; the summary of the night's critical (looked at on that drain, before the rows)
    const titles = delivered.map((x) => x.n.report?.title ?? x.n.items.map((i) => i.alertId));
    expect(titles).toEqual(['While quiet (22:00-07:00): 1 critical on 1 run', [warn]]);
    expect(delivered[0]!.n.report?.lines[0]).toContain(`(#${crit}, step 7)`);
  });

  it('a summary the destination refused is tried again after the wait, and posted once', async () => {
    const { store, clock, delivered, refusals, dispatcher, fire } = setUp({ hours: '22:00-07:00' });
    clock.now = at('2026-01-15T23:00:00Z');
    const d = dispatcher();
    fire('grpo-a', 'slow_steps', 'warning');
    await d.kick();
    clock.now = at('2026-01-16T07:30:00Z');
    refusals.push(new DeliveryError('HTTP 503'));
    await d.kick();
    expect(delivered).toEqual([]);
    expect(store.outbox.open().map((r) => r.target)).toEqual(['held:webhook:ops']);
    for (let i = 0; i < 500 && delivered.length === 0; i++) await sleep(10); // the lane's retry timer
    expect(delivered.map((x) => x.n.report?.title)).toEqual(['While quiet (22:00-07:00): 1 warning on 1 run']);
    expect(store.outbox.open()).toEqual([]);
    await d.kick();
    expect(delivered).toHaveLength(1);
  });

  it('what was held for a destination whose quiet hours left the config is summed up at the next start', async () => {
    const { store, clock, delivered, dispatcher, fire } = setUp({ hours: '22:00-07:00' });
    clock.now = at('2026-01-15T23:00:00Z');
    const held = dispatcher();
    const warn = fire('grpo-a', 'slow_steps', 'warning');
    await held.kick();
    await held.stop(0);
    expect(delivered).toEqual([]);
    clock.now += 60_000; // still night, but no quiet hours any more
    await dispatcher(false).kick();
    expect(delivered.map((d) => d.n.report?.title)).toEqual(['While quiet: 1 warning on 1 run']);
    expect(delivered[0]!.n.report?.lines).toEqual([
      `WARNING · slow_steps · grpo-a: slow_steps of grpo-a (#${warn}, step 7)`,
    ]);
    expect(store.outbox.open()).toEqual([]);
  });
});
