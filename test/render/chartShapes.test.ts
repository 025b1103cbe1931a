import * as vega from 'vega';
import type { TopLevelSpec } from 'vega-lite';
import { describe, expect, it } from 'vitest';
import { svgToPng } from '../../src/render/chart.ts';
import { specToSvg, templateOf } from '../../src/render/chartShapes.ts';
import { compileVegaLite, useDejaVuTextMetrics, viewOptions } from '../../src/render/vegaEnv.ts';
import { cases, specOf } from './chartCases.ts';

/** The whole path, as charts were drawn before shapes were kept: compile, parse and a new view for every chart. */
async function uncachedSvg(spec: TopLevelSpec): Promise<string> {
  useDejaVuTextMetrics();
  const view = new vega.View(vega.parse(compileVegaLite(spec).spec), viewOptions());
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

describe('charts drawn from a kept shape', () => {
  it('draw the SVG the whole path draws, chart for chart, whatever shape was drawn before', async () => {
    const expected = new Map<string, string>();
    for (const c of cases) expected.set(c.name, await uncachedSvg(specOf(c)));
    // in order, then backwards, then all at once
    for (const c of cases) expect(await specToSvg(specOf(c)), c.name).toBe(expected.get(c.name));
    for (const c of [...cases].reverse()) expect(await specToSvg(specOf(c)), c.name).toBe(expected.get(c.name));
    const together = await Promise.all(cases.map((c) => specToSvg(specOf(c))));
    together.forEach((svg, i) => {
      expect(svg, cases[i]!.name).toBe(expected.get(cases[i]!.name));
    });
  });

  it('rasterise to the same PNG bytes', async () => {
    for (const c of cases.filter((x) => /untrusted|a card|no data$|second/.test(x.name))) {
      const spec = specOf(c);
      const width = c.width ?? 800;
      const kept = await svgToPng(await specToSvg(spec), width);
      expect(kept.equals(await svgToPng(await uncachedSvg(spec), width)), c.name).toBe(true);
    }
  });

  it('the untrusted texts stay text: escaped in the SVG, never part of the shape', async () => {
    const c = cases.find((x) => x.name.startsWith('untrusted'))!;
    const svg = await specToSvg(specOf(c));
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&lt;script&gt;');
    expect(templateOf(specOf(c)).key).not.toContain('alert(1)');
  });

  it('one shape for charts that differ only in their rows, titles and y range', () => {
    const [a, b] = cases;
    expect(templateOf(specOf(a!)).key).toBe(templateOf(specOf(b!)).key);
    const flat = cases.filter((c) => c.name.startsWith('flat'));
    expect(templateOf(specOf(flat[0]!)).key).toBe(templateOf(specOf(flat[1]!)).key);
    // a mark's label on the other side, point marks, a second series: other shapes
    const keys = new Set(cases.slice(0, 8).map((c) => templateOf(specOf(c)).key));
    expect(keys.size).toBe(7);
  });
});
