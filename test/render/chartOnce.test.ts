import { describe, expect, it } from 'vitest';
import { PNG_SIGNATURE } from '../../src/render/chart.ts';
import { alertChartPng } from '../../src/render/chartOnce.ts';

const spec = (threshold: number) => ({
  title: 'frac_zero_std · grpo',
  metric: 'frac_zero_std',
  markStep: 5,
  threshold,
  points: [0.1, 0.2, 0.1, 0.9, 0.95].map((value, i) => ({ step: i + 1, value })),
});

describe("an alert's chart for every target it goes to", () => {
  it('is rendered once: the same card (a fresh copy, as each target parses its own row) gets the same PNG', async () => {
    const first = await alertChartPng(spec(0.8), 1);
    expect(first.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(await alertChartPng(structuredClone(spec(0.8)), 1)).toBe(first);
    const other = await alertChartPng(spec(0.7), 1);
    expect(other).not.toBe(first);
    expect(other.equals(first)).toBe(false);
  });

  it('keeps only the last few charts', async () => {
    const first = await alertChartPng(spec(0.5), 1);
    for (let i = 0; i < 16; i++) await alertChartPng(spec(0.51 + i / 100), 1);
    expect(await alertChartPng(spec(0.5), 1)).not.toBe(first); // rendered again
  });
});
