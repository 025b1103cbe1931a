/**
 * Quiet hours on PostgreSQL: the held rows are the outbox's, written and read back through the PostgreSQL store,
 * so a bot that takes over (another process, another connection) sums up what the one before held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Notification } from '../../src/engine/notification.ts';
import { Dispatcher, type Target } from '../../src/notify/dispatcher.ts';
import { QuietSchema } from '../../src/notify/quietHours.ts';
import { PgStore } from '../../src/store/postgres/pgStore.ts';
import { freshPgDatabase } from '../pg/pgTest.ts';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('quiet hours on PostgreSQL', () => {
  it('a warning held by one bot is summed up by the next once the interval ended; the critical went at once', async () => {
    const url = await freshPgDatabase();
    const clock = { now: Date.parse('2026-01-15T23:00:00Z') };
    const quiet = QuietSchema.parse({ hours: '22:00-07:00' });
    const delivered: Notification[] = [];
    const target: Target = { name: 'webhook:ops', quiet: () => quiet, deliver: async (n) => void delivered.push(n) };
    const bot = async (): Promise<{ store: PgStore; dispatcher: Dispatcher }> => {
      const store = await PgStore.open(url);
      const dispatcher = new Dispatcher(store, [target], { now: () => clock.now });
      cleanup.push(
        () => store.close(),
        () => dispatcher.stop(0),
      );
      return { store, dispatcher };
    };
    const first = await bot();
    const run = await first.store.runs.ensure('grpo', '/runs/grpo');
    const alert = async (rule: string, severity: string) => {
      const change = { step: 3, at: clock.now, severity, summary: `${rule} high`, details: {} };
      const a = await first.store.alerts.create(run.id, rule, 'm', 'firing', change);
      return {
        alertId: a.id,
        kind: 'firing' as const,
        severity,
        rule,
        metric: 'm',
        summary: change.summary,
        step: 3,
        epoch: null,
        recent: [],
        examples: null,
      };
    };
    const warning = await alert('slow_steps', 'warning');
    const critical = await alert('mode_collapse', 'critical');
    await first.store.outbox.add(run.id, target.name, { run: 'grpo', items: [warning, critical] }, clock.now);
    await first.dispatcher.kick();
    expect(delivered.map((n) => n.items.map((i) => i.alertId))).toEqual([[critical.alertId]]);
    expect((await first.store.outbox.open()).map((r) => r.target)).toEqual(['held:webhook:ops']);
    await first.dispatcher.stop(0);

    clock.now = Date.parse('2026-01-16T07:10:00Z');
    const next = await bot();
    await next.dispatcher.kick();
    expect(delivered.map((n) => n.report?.title ?? null)).toEqual([
      null,
      'While quiet (22:00-07:00): 1 warning on 1 run',
    ]);
    expect(delivered[1]!.report?.lines).toEqual([
      `WARNING · slow_steps · grpo: slow_steps high (#${warning.alertId}, step 3)`,
    ]);
    expect(await next.store.outbox.open()).toEqual([]);
  }, 60_000);
});
