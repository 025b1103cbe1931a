import { describe, expect, it } from 'vitest';
import { runStatus } from '../../src/commands/runStatus.ts';
import { MIN, T0, Trace, presetOnly, times } from '../engine/trace.ts';

describe('run status', () => {
  it('shows a restarted job at its newest attempt, with each attempt', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(100, { reward: 0.2 }));
    t.advance(30 * MIN).resumeAt(40).feed(times(6, { reward: 0.3 })); // steps 40..45
    const reply = runStatus({ store: t.store }, { run: 'r1' });
    expect(reply.title).toBe('r1: step 45');
    expect(reply.lines).toEqual([
      '100 records, updated 2025-01-01T03:30:00.000Z',
      'attempt 1: from step 1 at 2025-01-01T03:00:00.000Z, reached step 100',
      'attempt 2 (now): resumed at step 40 at 2025-01-01T03:30:00.000Z, reached step 45',
    ]);
    expect(reply.data).toMatchObject({
      step: 45,
      attempts: [
        { attempt: 1, resumedStep: 1, at: new Date(T0).toISOString(), lastStep: 100 },
        { attempt: 2, resumedStep: 40, at: new Date(T0 + 30 * MIN).toISOString(), lastStep: 45 },
      ],
      metrics: { reward: 0.3 },
    });
  });

  it('says nothing of attempts for a run that never restarted', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(3, { reward: 0.2 }));
    const reply = runStatus({ store: t.store }, { run: 'r1' });
    expect(reply.title).toBe('r1: step 3');
    expect(reply.lines).toEqual(['3 records, updated 2025-01-01T03:00:00.000Z']);
  });
});
