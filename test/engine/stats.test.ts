import { describe, expect, it } from 'vitest';
import { StepLookup } from '../../src/engine/evaluate.ts';
import { medianOf } from '../../src/engine/stats.ts';

describe('medianOf', () => {
  it('is the median of the window, odd and even, with ties and negatives', () => {
    const v = [5, -1, 3, 3, 0.5, 9, -7, 3];
    const scratch: number[] = [];
    expect(medianOf(v, 0, 3, scratch)).toBe(3); // 5 -1 3
    expect(medianOf(v, 1, 5, scratch)).toBe(1.75); // -1 3 3 0.5 -> (0.5 + 3) / 2
    expect(medianOf(v, 4, 8, scratch)).toBe(1.75); // 0.5 9 -7 3 -> (0.5 + 3) / 2
    expect(medianOf(v, 2, 4, scratch)).toBe(3);
    expect(medianOf(v, 6, 7, scratch)).toBe(-7);
    expect(medianOf(v, 3, 3, scratch)).toBeNaN();
  });

  it('leaves the values as they were', () => {
    const v = [3, 1, 2];
    medianOf(v, 0, 3, []);
    expect(v).toEqual([3, 1, 2]);
  });
});

describe('StepLookup', () => {
  it('finds the value at each step asked in ascending order, undefined where none was logged', () => {
    const series = [
      { step: 2, value: 0.2 },
      { step: 3, value: NaN },
      { step: 5, value: 0.5 },
      { step: 9, value: -1 },
    ];
    const at = new StepLookup(series);
    expect([1, 2, 3, 4, 5, 8, 9, 10].map((s) => at.get(s))).toEqual([undefined, 0.2, NaN, undefined, 0.5, undefined, -1, undefined]);
  });

  it('answers nothing from an empty series', () => {
    expect(new StepLookup([]).get(1)).toBeUndefined();
  });
});
