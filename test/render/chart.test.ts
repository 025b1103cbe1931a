import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  chartRows,
  lineChartSpec,
  PNG_SIGNATURE,
  RAW_WIDTH,
  renderLineChart,
  SMOOTH_WIDTH,
  specToSvg,
  svgToPng,
  withEma,
} from '../../src/render/chart.ts';
import { dejaVuTextWidth } from '../../src/render/vegaEnv.ts';

/** Width and height from the IHDR chunk, which always comes first after the signature. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

function expectPng(png: Buffer, width = 800, height = 360): void {
  expect(Buffer.isBuffer(png)).toBe(true);
  expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  expect(pngSize(png)).toEqual({ width, height });
  // A real picture, not just a header.
  expect(png.length).toBeGreaterThan(2_000);
}

const curve = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    step: i * 10,
    value: 0.2 + 0.5 * (1 - Math.exp(-i / 60)) + 0.03 * Math.sin(i / 4),
  }));

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('renderLineChart', () => {
  it('renders a 300-point series as an 800x360 PNG', async () => {
    const png = await renderLineChart({ title: 'run a · reward', metric: 'reward/mean', points: curve(300) });
    expectPng(png);
  });

  it('honours width and height', async () => {
    const png = await renderLineChart({ title: 'small', metric: 'kl', points: curve(50), width: 400, height: 240 });
    expectPng(png, 400, 240);
  });

  it('renders an empty series as a chart saying "no data"', async () => {
    const png = await renderLineChart({ title: 'run a · kl', metric: 'kl', points: [] });
    expectPng(png, 800, 360);
    const svg = await specToSvg(
      lineChartSpec({ title: 'run a · kl', metric: 'kl', rows: [], width: 800, height: 360 }),
    );
    expect(svg).toContain('no data');
    expect(svg).toContain('run a · kl');
  });

  it('renders a series of only non-finite values as "no data"', async () => {
    const points = [NaN, Infinity, -Infinity].map((value, step) => ({ step, value }));
    expectPng(await renderLineChart({ title: 't', metric: 'kl', points }));
    expect(chartRows(points, 1000)).toEqual([]);
  });

  it('drops NaN and Infinity and leaves a gap instead of crashing', async () => {
    const points = curve(300).map((p, i) =>
      i >= 100 && i < 110 ? { ...p, value: NaN } : i === 200 ? { ...p, value: Infinity } : p,
    );
    expectPng(await renderLineChart({ title: 'gappy', metric: 'loss', points }));

    const rows = chartRows(points, 1000);
    expect(rows.filter((r) => r.value !== null)).toHaveLength(289);
    // One break where the NaN run was, one for the Infinity, each between its neighbours.
    const breaks = rows.filter((r) => r.value === null);
    expect(breaks).toHaveLength(2);
    expect(breaks[0]!.step).toBeGreaterThan(990);
    expect(breaks[0]!.step).toBeLessThan(1100);
    expect(breaks[1]!.step).toBe(2000);
  });

  it('draws a red rule at markStep', async () => {
    const png = await renderLineChart({ title: 'fired', metric: 'reward', points: curve(300), markStep: 2400 });
    expectPng(png);
    const svg = await specToSvg(
      lineChartSpec({
        title: 'fired',
        metric: 'reward',
        rows: chartRows(curve(300), 1000),
        markStep: 2400,
        width: 800,
        height: 360,
      }),
    );
    expect(svg.toLowerCase()).toContain('#d62728');
    expect(svg).toContain('step 2,400');
    expect(svg).toContain('>reward<');
    expect(svg).toContain('>step<');
    // No mark without markStep.
    const plain = await specToSvg(
      lineChartSpec({ title: 'x', metric: 'reward', rows: chartRows(curve(300), 1000), width: 800, height: 360 }),
    );
    expect(plain.toLowerCase()).not.toContain('#d62728');
  });

  it('renders a markStep outside the data and a single point', async () => {
    expectPng(await renderLineChart({ title: 'one', metric: 'kl', points: [{ step: 5, value: 0.1 }], markStep: 50 }));
    expectPng(await renderLineChart({ title: 'nan mark', metric: 'kl', points: curve(20), markStep: NaN }));
  });

  it('sorts out-of-order steps', () => {
    const rows = chartRows(
      [
        { step: 3, value: 3 },
        { step: 1, value: 1 },
        { step: NaN, value: 9 },
        { step: 2, value: 2 },
      ],
      1000,
    );
    expect(rows).toEqual([
      { step: 1, value: 1 },
      { step: 2, value: 2 },
      { step: 3, value: 3 },
    ]);
  });

  it('down-samples to at most 1,000 points and renders 1,000,000 points', async () => {
    const points = Array.from({ length: 1_000_000 }, (_, i) => ({
      step: i,
      value: Math.sin(i / 40_000) + (i === 500_000 ? 10 : 0),
    }));
    const rows = chartRows(points, 1000);
    expect(rows).toHaveLength(1000);
    expect(rows).toContainEqual({ step: 500_000, value: 10 + Math.sin(500_000 / 40_000) });

    const started = performance.now();
    const png = await renderLineChart({ title: 'a million', metric: 'loss', points, markStep: 500_000 });
    const ms = performance.now() - started;
    expectPng(png);
    if (ms > 1_000) console.log(`rendering 1,000,000 points took ${ms.toFixed(0)} ms`);
  });

  it('never touches the network and puts no URLs in the spec', async () => {
    const fetchSpy = vi.fn(() => Promise.reject(new Error('network used')));
    vi.stubGlobal('fetch', fetchSpy);
    expectPng(await renderLineChart({ title: 't', metric: 'm', points: curve(30), markStep: 100 }));
    expect(fetchSpy).not.toHaveBeenCalled();
    const spec = JSON.stringify(
      lineChartSpec({
        title: 't',
        metric: 'm',
        rows: chartRows(curve(30), 1000),
        markStep: 100,
        width: 800,
        height: 360,
      }),
    );
    expect(spec).not.toMatch(/"url"/);
  });

  it('still produces a PNG when no fonts are available', async () => {
    const svg = await specToSvg(
      lineChartSpec({ title: 't', metric: 'm', rows: chartRows(curve(30), 1000), width: 800, height: 360 }),
    );
    expectPng(await svgToPng(svg, 800, { loadSystemFonts: false }));
  });

  it("measures text with DejaVu Sans advance widths instead of vega's 0.8 em guess", () => {
    expect(dejaVuTextWidth({ text: '0123456789', fontSize: 10 })).toBeCloseTo(63.6);
    expect(dejaVuTextWidth({ text: 'step', fontSize: 14, fontWeight: 'bold' })).toBeGreaterThan(
      dejaVuTextWidth({ text: 'step', fontSize: 14 }),
    );
    expect(dejaVuTextWidth({ fontSize: 12 }, 'abc')).toBeGreaterThan(0);
    expect(dejaVuTextWidth({ text: null })).toBe(0);
  });
});

describe('living beside other libraries', () => {
  it("leaves Set.prototype as it found it (vega-lite's toJSON breaks discord.js's event emitter)", async () => {
    const { renderLineChart: render } = await import('../../src/render/chart.ts');
    await render({
      title: 't',
      metric: 'm',
      points: [
        { step: 1, value: 1 },
        { step: 2, value: 2 },
      ],
    });
    expect(Object.getOwnPropertyNames(Set.prototype)).not.toContain('toJSON');
  });
});

describe('a chart read on a phone', () => {
  const noisy = Array.from({ length: 100 }, (_, i) => ({ step: i + 1, value: i % 2 === 0 ? 0.505 : 0.495 }));
  type Layer = {
    mark: { type: string; opacity?: number; strokeWidth?: number };
    data?: { values: Array<Record<string, unknown>> };
    encoding: { y?: { field?: string; scale?: { domain?: number[] } } };
  };
  const layers = (rows: Array<{ step: number; value: number | null }>): Layer[] =>
    (
      lineChartSpec({ title: 't', metric: 'reward', rows, markStep: 50, width: 800, height: 360 }) as unknown as {
        layer: Layer[];
      }
    ).layer;

  it('noise of ±0.005 on 0.5 is drawn in a range of at least 0.05, not stretched to the full height', () => {
    const raw = layers(noisy).find((l) => l.encoding.y?.field === 'value')!;
    const [lo, hi] = raw.encoding.y!.scale!.domain!;
    // a tenth of the largest value around the values, and over it the room of the firing step's label (26 px of the
    // 260-px plot)
    const span = 0.1 * 0.505;
    expect(lo).toBeCloseTo(0.5 - span / 2, 9);
    expect(hi).toBeCloseTo(0.5 + span / 2 + (26 / 260) * span, 9);
    // a real move keeps its own range
    const moving = layers(noisy.map((p) => ({ ...p, value: p.step / 100 }))).find(
      (l) => l.encoding.y?.field === 'value',
    )!;
    expect(moving.encoding.y!.scale!.domain![0]).toBe(0.01);
    expect(moving.encoding.y!.scale!.domain![1]).toBeCloseTo(1 + (26 / 260) * 0.99, 9);
  });

  it('a thin EMA line is drawn over the bold raw line', () => {
    const ls = layers(noisy);
    const ema = ls.find((l) => l.encoding.y?.field === 'ema')!;
    const raw = ls.find((l) => l.encoding.y?.field === 'value')!;
    expect(raw.mark.opacity).toBeUndefined();
    expect(raw.mark.strokeWidth).toBe(RAW_WIDTH);
    expect(ema.mark.strokeWidth).toBe(SMOOTH_WIDTH);
    expect(SMOOTH_WIDTH).toBeLessThan(RAW_WIDTH);
    // alpha = 2 / (5 + 1) for 100 points; by hand: 0.505, then 0.505 + (0.495 - 0.505) / 3
    const values = ema.data!.values.map((r) => r.ema as number);
    expect(values[0]).toBeCloseTo(0.505, 12);
    expect(values[1]).toBeCloseTo(0.505 - 0.01 / 3, 12);
    expect(
      withEma(
        [
          { step: 1, value: 1 },
          { step: 2, value: null },
          { step: 3, value: 3 },
        ],
        0.5,
      ).map((r) => r.ema),
    ).toEqual([1, null, 2]);
  });
});

describe('the y axis', () => {
  it("keeps its rotated title clear of the tick labels (frac_zero_std's underscores reach towards them)", async () => {
    const points = Array.from({ length: 43 }, (_, i) => ({
      step: i + 1,
      value: i < 40 ? 0.2 + 0.05 * Math.sin(i) : 0.9,
    }));
    const svg = await specToSvg(
      lineChartSpec({ title: 't', metric: 'frac_zero_std', rows: chartRows(points, 1000), width: 800, height: 360 }),
    );
    // the tick labels are right-aligned at x; the title is rotated a quarter turn, its baseline at x + dy
    const labels = [
      ...svg.matchAll(
        /text-anchor="end" transform="translate\(([-\d.]+),[-\d.]+\)"[^>]*font-size="18px"[^>]*>(0\.\d)</g,
      ),
    ].map((m) => Number(m[1]) - dejaVuTextWidth({ fontSize: 18 }, m[2]));
    expect(labels.length).toBeGreaterThanOrEqual(3);
    const title = /translate\(([-\d.]+),[-\d.]+\) rotate\(-90\) translate\(0,([-\d.]+)\)[^>]*>frac_zero_std</.exec(
      svg,
    )!;
    const baseline = Number(title[1]) + Number(title[2]);
    // DejaVu Sans Bold's underscore reaches 0.3 em under the baseline: 5.4 px at 18 px; 4 px more of air
    expect(baseline + 0.3 * 18 + 4).toBeLessThanOrEqual(Math.min(...labels));
  });
});

describe('the alert rule drawn on the chart', () => {
  it('a threshold is a dashed horizontal rule at its value, labelled, and the y range reaches it', async () => {
    const points = curve(100).map((p) => ({ ...p, value: p.value * 0.5 })); // 0.1 .. 0.36, all under the line
    const spec = lineChartSpec({
      title: 't',
      metric: 'frac_zero_std',
      rows: chartRows(points, 1000),
      threshold: 0.8,
      markStep: 500,
      width: 800,
      height: 360,
    });
    const layers = (
      spec as {
        layer: Array<{
          mark: { type: string; strokeDash?: number[] };
          data?: { values: unknown[] };
          encoding: Record<string, { field?: string }>;
        }>;
      }
    ).layer;
    const rule = layers.find((l) => l.mark.type === 'rule' && l.encoding.y?.field === 'threshold')!;
    // the line is the range's top: its label goes under it
    expect(rule.data?.values).toEqual([{ threshold: 0.8, label: 'threshold 0.8', up: false }]);
    expect(rule.mark.strokeDash).toBeDefined();
    // the firing step keeps its own (vertical) rule
    expect(layers.find((l) => l.mark.type === 'rule' && l.encoding.x?.field === 'step')?.data?.values).toEqual([
      { step: 500 },
    ]);
    const svg = await specToSvg(spec);
    expect(svg).toContain('threshold 0.8');
    expect(svg).toContain('>0.8<'); // a y label at (or past) the line: the range was stretched to show it
    expectPng(await renderLineChart({ title: 't', metric: 'frac_zero_std', points, threshold: 0.8, markStep: 500 }));
    const plain = await specToSvg(
      lineChartSpec({ title: 't', metric: 'x', rows: chartRows(points, 1000), width: 800, height: 360 }),
    );
    expect(plain).not.toContain('threshold');
  });
});
