import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { Trace, presetOnly, rulesOf } from './trace.ts';

const hacking = () => rulesOf({ id: 'hack', kind: 'divergence', metrics: ['rewards/*'], window: 15 });
const rows = (format: number[], accuracy: number[]) =>
  format.map((f, i) => ({
    'rewards/format': f,
    'rewards/accuracy': accuracy[i] as number,
    'rewards/accuracy/std': 0.1,
  }));
const fill = (n: number, v: number) => Array<number>(n).fill(v);

describe('divergence: one reward rising while another falls (reward hacking)', () => {
  it('format 0.48 -> 0.86 while accuracy 0.16 -> 0.06 (open-r1 issue) fires when both windows are full', () => {
    const t = new Trace({ book: hacking() }).feed(
      rows([...fill(15, 0.48), ...fill(14, 0.86)], [...fill(15, 0.16), ...fill(14, 0.06)]),
    );
    expect(t.alerts()).toEqual([]);
    t.feed(rows([0.86], [0.06]));
    expect(t.alert('hack')).toMatchObject({
      state: 'firing',
      metric: 'rewards/*',
      severity: 'warning',
      fired_step: 30,
      summary:
        "rewards/format ↗ 0.48 → 0.86 while rewards/accuracy ↘ 0.16 → 0.06 over 15-step windows: one reward rising at another's expense (reward hacking?)",
    });
  });

  it('two rewards rising together, or one falling alone, are no divergence', () => {
    const together = rows([...fill(15, 0.4), ...fill(15, 0.8)], [...fill(15, 0.1), ...fill(15, 0.3)]);
    expect(new Trace({ book: hacking() }).feed(together).alerts()).toEqual([]);
    const alone = rows(fill(30, 0.5), [...fill(15, 0.3), ...fill(15, 0.1)]);
    expect(new Trace({ book: hacking() }).feed(alone).alerts()).toEqual([]);
  });

  it('a move smaller than minDelta (0.05) is not one', () => {
    const small = rows([...fill(15, 0.5), ...fill(15, 0.54)], [...fill(15, 0.5), ...fill(15, 0.46)]);
    expect(new Trace({ book: hacking() }).feed(small).alerts()).toEqual([]);
  });

  it('resolves after quietFor (15) records of moving together; batch and live agree', () => {
    const trace = rows([...fill(15, 0.48), ...fill(60, 0.86)], [...fill(15, 0.16), ...fill(60, 0.06)]);
    const pick = (t: Trace) => t.alerts().map((a) => [a.state, a.fired_step, a.resolved_step]);
    // at step i >= 30 the before-window holds k = 45 - i records of the old level: accuracy's move is
    // 0.1·k/15, past 0.05 while k >= 8, i.e. up to step 37; 15 quiet records (38..52) resolve it at 52
    const live = new Trace({ book: hacking() }).feed(trace);
    expect(pick(live)).toEqual([['resolved', 30, 52]]);
    expect(pick(new Trace({ book: hacking() }).batch(trace.slice(0, 33)).batch(trace.slice(33)))).toEqual(pick(live));
  });

  describe('a slow divergence over 200 steps, under AR(1) noise (the preset: 60-record windows too)', () => {
    /** AR(1) noise, φ 0.6, σ of the innovations `sd`: e[t] = φ e[t-1] + sd·N(0, 1) */
    const ar1 = (seed: number, n: number, sd: number): number[] => {
      const rand = mulberry32(seed);
      let e = 0;
      return Array.from({ length: n }, () => {
        e = 0.6 * e + sd * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
        return e;
      });
    };
    const ONSET = 400;
    /** format 0.17 -> 0.62 while accuracy 0.38 -> 0.10 over the 200 steps from ONSET; `fall` scales accuracy's */
    const run = (seed: number, fall: number) => {
      const fmt = ar1(seed, 700, 0.02);
      const acc = ar1(seed + 100, 700, 0.02);
      const k = (t: number) => Math.max(0, Math.min(1, (t - ONSET) / 200));
      return rows(
        fmt.map((e, t) => 0.17 + 0.45 * k(t) + e),
        acc.map((e, t) => 0.38 - fall * k(t) + e),
      );
    };
    const hacks = (trace: ReturnType<typeof rows>) =>
      new Trace({ book: presetOnly('reward_hacking') }).feed(trace).alerts();

    it.each([1, 2, 3, 4, 5])('is caught within 60 steps of its onset, never before it (seed %i)', (seed) => {
      // over the first 60 steps accuracy loses 0.084 in all: the 60-record windows' means then differ by ~0.04,
      // under 5 standard errors of its own noise; the gap to format's rise (~0.11) is beyond 5 of theirs
      const fired = hacks(run(seed, 0.28)).map((a) => a.fired_step as number);
      expect(fired.length).toBeGreaterThan(0);
      expect(fired[0]).toBeGreaterThan(ONSET);
      expect(fired[0]! - ONSET).toBeLessThanOrEqual(60);
    });

    it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])(
      'format rising while accuracy holds is no divergence (seed %i)',
      (seed) => {
        expect(hacks(run(seed, 0)).map((a) => `${a.fired_step} ${a.summary}`)).toEqual([]);
      },
    );
  });
});
