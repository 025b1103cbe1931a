import { describe, expect, it } from 'vitest';
import { Trace, presetOnly } from './trace.ts';

const rows = (pairs: Array<[number, number]>) =>
  pairs.map(([m, s]) => ({ 'rewards/format': m, 'rewards/format/std': s }));
const book = () => presetOnly('reward_saturated');

describe('saturation (reward_saturated): a component at its max with zero std', () => {
  it('fires after 3 records at the highest value reached with std 0', () => {
    const t = new Trace({ book: book() }).feed(
      rows([
        [0.5, 0.2],
        [0.8, 0.1],
        [1, 0],
        [1, 0],
      ]),
    );
    expect(t.alert('reward_saturated')).toMatchObject({ state: 'pending', started_step: 3 });
    t.feed(rows([[1, 0]]));
    expect(t.alert('reward_saturated')).toMatchObject({
      state: 'firing',
      metric: 'rewards/format',
      severity: 'warning',
      fired_step: 5,
      summary: 'rewards/format saturated at its max 1 with std 0 for 3 steps: no signal left',
    });
  });

  it("at the max with spread, below the max with std 0 (the learning.log guide's collapse at 0.21), or pinned at 0: nothing", () => {
    expect(
      new Trace({ book: book() })
        .feed(
          rows([
            [1, 0.1],
            [1, 0.1],
            [1, 0.1],
          ]),
        )
        .alerts(),
    ).toEqual([]);
    expect(
      new Trace({ book: book() })
        .feed(
          rows([
            [0.35, 0.1],
            [0.21, 0],
            [0.21, 0],
            [0.21, 0],
          ]),
        )
        .alerts(),
    ).toEqual([]);
    expect(
      new Trace({ book: book() })
        .feed(
          rows([
            [0, 0],
            [0, 0],
            [0, 0],
            [0, 0],
          ]),
        )
        .alerts(),
    ).toEqual([]);
  });

  it('a component without its std series is not judged', () => {
    const t = new Trace({ book: book() }).feed([
      { 'rewards/format': 1 },
      { 'rewards/format': 1 },
      { 'rewards/format': 1 },
    ]);
    expect(t.alerts()).toEqual([]);
  });

  it('resolves after 3 records that vary again; batch and live agree', () => {
    const trace = rows([
      [0.8, 0.1],
      [1, 0],
      [1, 0],
      [1, 0],
      [0.9, 0.1],
      [1, 0],
      [0.9, 0.1],
      [0.9, 0.1],
      [0.9, 0.1],
    ]);
    const pick = (t: Trace) => t.alerts().map((a) => [a.state, a.fired_step, a.resolved_step]);
    const live = new Trace({ book: book() }).feed(trace);
    // fired at 4; record 6 (saturated again) is within the 3-record cooldown: one incident, resolved at 9
    expect(pick(live)).toEqual([['resolved', 4, 9]]);
    expect(pick(new Trace({ book: book() }).batch(trace.slice(0, 3)).batch(trace.slice(3)))).toEqual(pick(live));
  });
});
