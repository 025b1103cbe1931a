import { describe, expect, it } from 'vitest';
import { formatValue, jsonValue } from '../../src/lib/numbers.ts';
import { sparkline } from '../../src/render/sparkline.ts';

describe('sparkline', () => {
  it('scales the last values between the lowest and highest bar, with gaps for nan', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7])).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([1, NaN, 1])).toBe('▄ ▄');
    expect(sparkline([9, 0, 7], 2)).toBe('▁█');
  });
});

describe('numbers', () => {
  it('prints values for people and non-finite values as words', () => {
    expect(formatValue(0.123456)).toBe('0.1235');
    expect(formatValue(3.58e-6)).toBe('3.58e-6');
    expect(formatValue(NaN)).toBe('nan');
    expect(formatValue(-Infinity)).toBe('-inf');
    expect(jsonValue(0.5)).toBe(0.5);
    expect(jsonValue(Infinity)).toBe('inf');
  });
});
