import { describe, expect, it } from 'vitest';
import { runStatus } from '../../src/commands/runStatus.ts';
import { silentLog } from '../../src/lib/log.ts';
import { interact } from '../../src/interact/interaction.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { MIN, T0, Trace, presetOnly, times } from '../engine/trace.ts';

describe('run status', () => {
  it("shows a restarted job at its newest attempt, with each attempt, its times in the reader's terms", async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(100, { reward: 0.2 })); // attempt 1, read at T0
    t.advance(30 * MIN)
      .resumeAt(40)
      .feed(times(6, { reward: 0.3 })); // steps 40..45, read at T0 + 30 min
    const resumedAt = t.now;
    const readAt = resumedAt + 12 * MIN + 20_000; // someone asks 12 min 20 s later
    const reply = await runStatus({ store: new SqliteAsyncStore(t.store) }, { run: 'r1' }, readAt);
    expect(reply.title).toBe('r1: step 45');
    const minutesBefore = (ms: number): number => Math.floor((readAt - ms) / MIN);
    expect(reply.lines).toEqual([
      `100 records, updated ${minutesBefore(resumedAt)} min ago`,
      `attempt 1: from step 1 ${minutesBefore(T0)} min ago, reached step 100`,
      `attempt 2 (now): resumed at step 40 ${minutesBefore(resumedAt)} min ago, reached step 45`,
    ]);
    expect(reply.lines[0]).toBe('100 records, updated 12 min ago');
    // --json keeps absolute times, for scripts and logs
    expect(reply.data).toMatchObject({
      step: 45,
      updatedAt: new Date(resumedAt).toISOString(),
      attempts: [
        { attempt: 1, resumedStep: 1, at: new Date(T0).toISOString(), lastStep: 100 },
        { attempt: 2, resumedStep: 40, at: new Date(T0 + 30 * MIN).toISOString(), lastStep: 45 },
      ],
      metrics: { reward: 0.3 },
    });
  });

  it('points a chat user at a command chat takes for the other metrics, and only the CLI at --json', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(3, { reward: 0.2, 'actor/pg_clipfrac': 0.1, 'perf/mfu': 0.4 })); // two names outside the canonical ones
    const store = new SqliteAsyncStore(t.store);
    const chat = await runStatus({ store }, { run: 'r1' }, t.now);
    const cli = await runStatus({ store, local: true }, { run: 'r1' }, t.now);
    expect(chat.lines.at(-1)).toBe('2 more metrics logged: see one with `reward history metric=NAME`');
    expect(cli.lines.at(-1)).toBe('2 more metrics logged: see --json or `reward history --metric NAME`');
    expect(JSON.stringify(chat)).not.toContain('--json');
  });

  it('says nothing of attempts for a run that never restarted; a fresh update is "just now"', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(3, { reward: 0.2 }));
    const ctx = { store: new SqliteAsyncStore(t.store) };
    const reply = await runStatus(ctx, { run: 'r1' }, t.now + 30_000);
    expect(reply.title).toBe('r1: step 3');
    expect(reply.lines).toEqual(['3 records, updated just now']);
    expect((await runStatus(ctx, { run: 'r1' }, t.now + 3 * 3_600_000 + 59 * MIN)).lines).toEqual([
      '3 records, updated 3 h ago',
    ]);
  });

  it('through the command tree, reads the clock of the caller', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(3, { reward: 0.2 }));
    const now = t.now + 2 * 86_400_000;
    const asker = {
      store: new SqliteAsyncStore(t.store),
      log: silentLog,
      user: '@ana',
      userName: 'ana',
      mayWrite: () => true,
      rightsHint: '',
      now,
    };
    const a = await interact({ words: ['run', 'status', 'r1'] }, asker);
    expect(a.ok && a.reply.lines).toEqual(['3 records, updated 2 d ago']);
  });
});
