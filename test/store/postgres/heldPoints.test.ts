/**
 * HeldPoints (src/store/postgres/heldPoints.ts): the newest points of each series a watcher wrote, kept so that the rules'
 * look-back windows (`upTo`) are answered on its thread. A backfill's batch holds thousands of points, and the rules
 * evaluate from steps deep inside it: the tail keeps the whole batch and the points before it.
 */
import { describe, expect, it } from 'vitest';
import { HeldPoints } from '../../../src/store/postgres/heldPoints.ts';
import type { MetricRow } from '../../../src/store/metricRows.ts';

const rows = (from: number, to: number): MetricRow[] =>
  Array.from({ length: to - from + 1 }, (_, k) => ({ step: from + k, values: new Map([['loss', (from + k) / 2]]) }));

/** The last `n` points up to `step` of the series 1..last (value step / 2), counted out by hand. */
const window = (step: number, n: number): Array<{ step: number; value: number }> =>
  Array.from({ length: n }, (_, k) => step - n + 1 + k).map((s) => ({ step: s, value: s / 2 }));

describe('HeldPoints', () => {
  it('answers look-backs from any step of a big batch, and from the points before it', () => {
    const held = new HeldPoints();
    held.note(1, null, rows(1, 600));
    held.note(1, 600, rows(601, 5600)); // a backfill's batch of 5,000 steps
    expect(held.upTo(1, 'loss', 700, 200, false)).toEqual(window(700, 200)); // 100 of them from before the batch
    expect(held.upTo(1, 'loss', 3000, 50, false)).toEqual(window(3000, 50));
    expect(held.upTo(1, 'loss', 5600, 200, false)).toEqual(window(5600, 200));
    // 512 points are kept before the batch (steps 89-600): further back, the database has to say
    expect(held.upTo(1, 'loss', 98, 10, false)).toEqual(window(98, 10));
    expect(held.upTo(1, 'loss', 95, 10, false)).toBeUndefined();
    // live lines after it: the tail is cut back to the newest again once it grows past its bound
    for (let s = 5601; s <= 5700; s++) held.note(1, s - 1, rows(s, s));
    expect(held.upTo(1, 'loss', 5700, 200, false)).toEqual(window(5700, 200));
    expect(held.upTo(1, 'loss', 2000, 10, false)).toBeUndefined();
  });
});
