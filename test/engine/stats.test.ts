import { describe, expect, it } from 'vitest';
import { StepLookup } from '../../src/engine/context.ts';
import { median, medianOf, SlidingMedian } from '../../src/engine/stats.ts';
import { mulberry32 } from '../../scripts/rng.ts';

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

describe('SlidingMedian', () => {
  it.each([10, 12])(
    'gives the median of each window of a stream held in a buffer of %i, as a fresh sort of it does',
    (size) => {
      const rand = mulberry32(size);
      // a stream with ties and both signs, read through a shifting buffer (as a rule keeps its window: at 10, the
      // value that leaves the window has just left the buffer)
      const stream = Array.from({ length: 3000 }, () => Math.round((rand() - 0.3) * 40) / 4 + 0); // + 0: no -0
      const buffer: number[] = [];
      const sliding = new SlidingMedian();
      let offset = 0;
      let checked = 0;
      for (let i = 0; i < stream.length; i++) {
        buffer.push(stream[i]!);
        const gone = buffer.length > size ? buffer.shift() : undefined;
        if (gone !== undefined) offset++;
        // mostly the window slides by one; now and then it jumps or shrinks, as a warm-up or a held baseline makes it
        const width = rand() < 0.05 ? 1 + Math.floor(rand() * 10) : 10;
        const to = i + 1 - (rand() < 0.03 ? 1 : 0);
        const from = Math.max(offset, to - width);
        if (to <= from) continue;
        expect(sliding.at(buffer, offset, from, to, gone)).toBe(median(stream.slice(from, to)));
        checked++;
      }
      expect(checked).toBeGreaterThan(2900);
    },
  );
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
    expect([1, 2, 3, 4, 5, 8, 9, 10].map((s) => at.get(s))).toEqual([
      undefined,
      0.2,
      NaN,
      undefined,
      0.5,
      undefined,
      -1,
      undefined,
    ]);
  });

  it('answers nothing from an empty series', () => {
    expect(new StepLookup([]).get(1)).toBeUndefined();
  });
});
