import { afterEach, describe, expect, it } from 'vitest';
import { silentLog } from '../../src/lib/log.ts';
import { interact, type Asker } from '../../src/interact/interaction.ts';
import { commandPlaces, CommandsSchema, NOT_HERE, type Route } from '../../src/notify/routing.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';

const T = Date.UTC(2026, 10, 22, 9, 0, 0);
const A = 'team-a/grpo';
const B = 'team-b/ppo';
/** team-a's runs go to its own channel; everything else to the default one */
const routes: Route[] = [{ runs: 'team-a/*', channel: 'C-A' }];

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** Runs A and B, each with a firing alert, and a chat asker from `channel` as the Slack bot would build it. */
function world(commands: object = {}) {
  const { store } = freshStore();
  stores.push(store);
  const alertOf = (run: string) =>
    store.alerts.create(store.runs.ensure(run, `/runs/${run}`).id, 'mode_collapse', 'frac_zero_std', 'firing', {
      step: 3,
      at: T,
      severity: 'critical',
      summary: 'frac_zero_std 1 > 0.8',
      details: {},
    });
  const a = alertOf(A);
  const b = alertOf(B);
  const place = commandPlaces({ routes, commands: CommandsSchema.parse(commands) }, 'C-DEFAULT');
  const from = (channel: string): Asker => {
    const p = place(channel);
    return {
      store: new SqliteAsyncStore(store),
      log: silentLog,
      user: '<@U1>',
      userName: 'ana',
      mayWrite: () => true,
      rightsHint: '',
      now: T,
      ...(p.refused !== undefined ? { refused: p.refused } : { seesRun: p.seesRun }),
    };
  };
  return { store, a, b, from };
}

const message = async (words: string[], asker: Asker): Promise<string> => {
  const answer = await interact({ words }, asker);
  if (answer.ok) throw new Error(`expected a refusal, got ${answer.reply.title}`);
  return answer.message;
};

describe('a channel sees only the runs whose alerts are routed to it', () => {
  it("reads about another channel's run get the answer a run that does not exist gets", async () => {
    const w = world();
    const teamA = w.from('C-A');
    for (const words of [
      ['run', 'status'],
      ['run', 'logs'],
      ['examples'],
      ['reward', 'history'],
      ['run', 'report'],
      ['files'],
      ['alerts'],
    ]) {
      const unseen = await message([...words, B], teamA);
      const missing = await message([...words, 'team-b/none'], teamA);
      expect(unseen.replaceAll(B, 'X')).toBe(missing.replaceAll('team-b/none', 'X'));
      expect(unseen).not.toContain(`known: ${A}, ${B}`);
    }
    // with no run named, the only run the channel sees is the run meant
    const status = await interact({ words: ['run', 'status'] }, teamA);
    expect(status.ok && status.reply.title).toMatch(new RegExp(`^${A}: step`));
  });

  it('lists only its runs, alerts and mutes', async () => {
    const w = world();
    w.store.silences.add({
      run: B,
      rule: null,
      severity: null,
      starts_at: T,
      ends_at: T + 3_600_000,
      author: 'bo',
      reason: 'b only',
    });
    const teamA = w.from('C-A');
    const list = await interact({ words: ['run', 'list'] }, teamA);
    expect(list.ok && list.reply.data).toMatchObject([{ name: A }]);
    expect(list.ok && (list.reply.data as unknown[]).length).toBe(1);
    const alerts = await interact({ words: ['alerts'] }, teamA);
    expect(alerts.ok && (alerts.reply.data as Array<{ id: number }>).map((r) => r.id)).toEqual([w.a.id]);
    const mutes = await interact({ words: ['mutes'] }, teamA);
    expect(mutes.ok && mutes.reply.title).toBe('No mutes in force');
    // the default channel sees B (no route takes it elsewhere), not A (team-a's route takes all of its alerts)
    const def = await interact({ words: ['alerts'] }, w.from('C-DEFAULT'));
    expect(def.ok && (def.reply.data as Array<{ id: number }>).map((r) => r.id)).toEqual([w.b.id]);
  });

  it("cannot ack, mute or unmute another channel's run by id, and is told as of an id that does not exist", async () => {
    const w = world();
    const teamA = w.from('C-A');
    expect(await message(['ack', String(w.b.id)], teamA)).toBe(`no alert #${w.b.id} (see \`alerts --all\`)`);
    expect(w.store.alerts.byId(w.b.id)?.acked_by).toBeNull();
    const byButton = await interact({ words: ['mute'], args: { alert: w.b.id, duration: '1h' } }, teamA);
    expect(byButton).toEqual({ ok: false, message: `no alert #${w.b.id} (see \`alerts --all\`)` });
    const s = w.store.silences.add({
      run: B,
      rule: null,
      severity: null,
      starts_at: T,
      ends_at: T + 3_600_000,
      author: 'bo',
      reason: '',
    });
    expect(await message(['unmute', String(s.id)], teamA)).toBe(`no mute #${s.id} in force (see \`mutes\`)`);
    expect(w.store.silences.active(T).map((x) => x.id)).toEqual([s.id]);
    // its own run's alert it acks
    expect((await interact({ words: ['ack', String(w.a.id)] }, teamA)).ok).toBe(true);
  });

  it('a mute of every run, or a glob, from a channel that does not see every run is refused; from one that does, set', async () => {
    const w = world();
    expect(await message(['mute', 'all', '2h'], w.from('C-A'))).toMatch(
      /^from this channel, mute a run it sees by name/,
    );
    expect(await message(['mute', 'team-*', '2h'], w.from('C-A'))).toMatch(/^from this channel/);
    expect(w.store.silences.active(T)).toEqual([]);
    // team-a/* reaches only what C-A sees
    expect((await interact({ words: ['mute', 'team-a/*', '2h'] }, w.from('C-A'))).ok).toBe(true);
    const everywhere = world({ all_runs: true });
    const all = await interact({ words: ['mute', 'all', '2h'] }, everywhere.from('C-A'));
    expect(all.ok).toBe(true);
    expect(everywhere.store.silences.active(T)).toMatchObject([{ run: null, rule: null, severity: null }]);
  });

  it('a channel rlwatch does not take commands from gets a refusal and nothing runs', async () => {
    const w = world();
    expect(await message(['ack', String(w.a.id)], w.from('C-ELSEWHERE'))).toBe(NOT_HERE);
    expect(await message(['run', 'list'], w.from('D-DM'))).toBe(NOT_HERE);
    expect(w.store.alerts.byId(w.a.id)?.acked_by).toBeNull();
  });

  it('commands.channels replaces the channels taken from; one alerts never go to sees every run', async () => {
    const w = world({ channels: ['C-A', 'C-OPS'] });
    expect(await message(['run', 'list'], w.from('C-DEFAULT'))).toBe(NOT_HERE);
    const ops = await interact({ words: ['alerts'] }, w.from('C-OPS'));
    expect(ops.ok && (ops.reply.data as Array<{ id: number }>).map((r) => r.id).sort()).toEqual(
      [w.a.id, w.b.id].sort(),
    );
    expect((await interact({ words: ['ack', String(w.b.id)] }, w.from('C-OPS'))).ok).toBe(true);
  });
});

describe('commandPlaces', () => {
  it('a route that takes only some severities leaves the run visible in the default channel too', () => {
    const place = commandPlaces(
      { routes: [{ runs: 'team-a/*', severity: ['critical'], channel: 'C-A' }] },
      'C-DEFAULT',
    );
    const seen = (channel: string, run: string): boolean => {
      const p = place(channel);
      return p.refused === undefined && p.seesRun(run);
    };
    expect([seen('C-A', A), seen('C-A', B), seen('C-DEFAULT', A), seen('C-DEFAULT', B)]).toEqual([
      true,
      false,
      true,
      true,
    ]);
  });
});
