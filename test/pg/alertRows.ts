import type pg from 'pg';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { globMatch } from '../../src/lib/duration.ts';
import type { StoreContract } from '../../src/store/contract.ts';
import type { FakeDiscord } from '../fakes/discordServer.ts';

/**
 * Outbox rows for the fake Discord's channel, written through the store as the engine writes them: each an alert
 * of its own (created first: posted cards are linked to their alerts), firing, of run `name`. Returns the alert
 * ids, in order.
 */
export async function enqueueAlerts(
  store: StoreContract,
  fake: FakeDiscord,
  n: number,
  name = 'host-a/grpo',
): Promise<number[]> {
  const run = await store.runs.ensure(name, `/runs/${name}`);
  const ids: number[] = [];
  const before = (await store.alerts.list({ all: true })).length;
  for (let i = before; i < before + n; i++) {
    const summary = `frac_zero_std high (${i})`;
    const change = { step: i, at: Date.now(), severity: 'critical', summary, details: {} };
    const a = await store.alerts.create(run.id, `rule_${i}`, 'frac_zero_std', 'firing', change);
    const item = {
      alertId: a.id,
      kind: 'firing' as const,
      severity: 'critical',
      rule: a.rule,
      metric: a.metric,
      summary,
      step: i,
      epoch: null,
      recent: [],
      examples: null,
    };
    const n: Notification = { run: run.name, items: [item] };
    await store.outbox.add(run.id, `discord:${fake.channelId}`, n, Date.now());
    ids.push(a.id);
  }
  return ids;
}

/** How many cards of each alert the fake's channel holds: an alert's card carries its Ack button (`ack:ID`), and a
 * message holds up to five cards (rows that waited together go as one). */
export function postedPerAlert(fake: FakeDiscord): Map<number, number> {
  const count = new Map<number, number>();
  for (const m of fake.channelMessages()) {
    const ids = new Set([...JSON.stringify(m.components).matchAll(/"ack:(\d+)"/g)].map((x) => Number(x[1])));
    for (const id of ids) count.set(id, (count.get(id) ?? 0) + 1);
  }
  return count;
}

/** The Discord settings of the fake, without retries. */
export const discordOf = (fake: FakeDiscord) => ({
  token: fake.token,
  apiUrl: fake.apiUrl,
  guildId: fake.guildId,
  channel: fake.channelId,
  retries: 0,
});

/** An alert that fired, as the database has it. */
export interface FiredAlert {
  id: number;
  run: string;
  rule: string;
  severity: string;
  fired: number;
  resolved: number | null;
}

/**
 * The alerts that fired, and the news among them: those a chat is posted (not info, and not a symptom that fired
 * while its run's mode_collapse fired: the preset's inhibition records it without posting it).
 */
export async function firedAlerts(db: pg.Client): Promise<{ alerts: FiredAlert[]; news: FiredAlert[] }> {
  const { rows: alerts } = await db.query<FiredAlert>(
    `SELECT a.id::int AS id, r.name AS run, a.rule, a.severity, a.fired_step::int AS fired, a.resolved_step::int AS resolved
     FROM alerts a JOIN runs r ON r.id = a.run_id WHERE a.fired_at IS NOT NULL ORDER BY a.id`,
  );
  const collapseHolds = GRPO_PRESET.find((r) => r.id === 'mode_collapse')!.inhibits;
  const held = (x: FiredAlert): boolean =>
    collapseHolds.some((p) => globMatch(p, x.rule)) &&
    alerts.some(
      (c) =>
        c.rule === 'mode_collapse' &&
        c.run === x.run &&
        c.fired <= x.fired &&
        (c.resolved === null || c.resolved > x.fired),
    );
  return { alerts, news: alerts.filter((x) => x.severity !== 'info' && !held(x)) };
}
