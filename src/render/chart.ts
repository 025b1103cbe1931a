import { Resvg, renderAsync, type ResvgRenderOptions } from '@resvg/resvg-js';
import type { TopLevelSpec } from 'vega-lite';
import { specToSvg } from './chartShapes.ts';
import { chartFonts, type FontSource } from './fonts.ts';
import { lttbIndices } from './lttb.ts';

/** The eight bytes every PNG file starts with. */
export const PNG_SIGNATURE: Buffer = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** At most this many points are drawn; longer series are down-sampled with LTTB. */
export const MAX_CHART_POINTS = 1000;

export const DEFAULT_CHART_WIDTH = 800;
export const DEFAULT_CHART_HEIGHT = 360;

const FONT = 'DejaVu Sans';
const BACKGROUND = '#ffffff';
const LINE_COLOUR = '#1f6fb4';
const MARK_COLOUR = '#d62728';
/** the rule's threshold: dashed, darker than the series, so that it reads as a line drawn by the rule */
const THRESHOLD_COLOUR = '#6a4c93';
const TEXT_COLOUR = '#222222';
/** the second run of a comparison: orange beside the first run's blue */
const SECOND_COLOUR = '#e76f51';
const GRID_COLOUR = '#e6e6e6';
/** the y range is never narrower than this fraction of the values' magnitude */
const MIN_SPAN = 0.1;
/** series longer than this get an EMA-smoothed line over the raw one */
const SMOOTH_FROM = 20;

/** The rows with an exponential moving average of the values (`alpha` the weight of each new point). */
export function withEma(rows: readonly ChartRow[], alpha: number): Array<ChartRow & { ema: number | null }> {
  let ema: number | null = null;
  return rows.map((r) => {
    if (r.value === null) return { ...r, ema: null };
    ema = ema === null ? r.value : ema + alpha * (r.value - ema);
    return { ...r, ema };
  });
}

export interface LineChartOptions {
  title: string;
  metric: string;
  points: ReadonlyArray<{ step: number; value: number }>;
  /** Draws a red vertical rule at this step (e.g. the step at which an alert fired). */
  markStep?: number;
  /** Draws a dashed horizontal rule at this value (the alert rule's threshold). */
  threshold?: number;
  /** Width of the PNG in pixels (default 800). */
  width?: number;
  /** Height of the chart in pixels (default 360). */
  height?: number;
  /** a second series drawn over the first in another colour (run compare); say which is which in the title */
  second?: { points: ReadonlyArray<{ step: number; value: number }> };
  /** the x axis title (default `step`; run compare aligns by `epoch`) */
  xTitle?: string;
}

/** One row of chart data; `value: null` breaks the line (a gap where the series had nan/inf). */
export interface ChartRow {
  step: number;
  value: number | null;
}

/**
 * Renders a line chart of `metric` over steps as PNG bytes. Never touches the network. `raster` turns its SVG into
 * the PNG: on libuv's pool by default, here and now on the chart thread (`svgToPngHere`).
 */
export async function renderLineChart(
  opts: LineChartOptions, raster: (svg: string, width: number) => Buffer | Promise<Buffer> = svgToPng,
): Promise<Buffer> {
  const width = positiveInt(opts.width, DEFAULT_CHART_WIDTH);
  const height = positiveInt(opts.height, DEFAULT_CHART_HEIGHT);
  const rows = chartRows(opts.points, MAX_CHART_POINTS);
  const markStep = opts.markStep !== undefined && Number.isFinite(opts.markStep) ? opts.markStep : undefined;
  const rows2 = opts.second ? chartRows(opts.second.points, MAX_CHART_POINTS) : undefined;
  const threshold = opts.threshold !== undefined && Number.isFinite(opts.threshold) ? opts.threshold : undefined;
  const spec = lineChartSpec({
    title: opts.title, metric: opts.metric, rows, markStep, threshold, width, height, rows2, xTitle: opts.xTitle,
  });
  const svg = await specToSvg(spec);
  return raster(svg, width);
}

/**
 * The rows to draw: non-finite steps and values dropped, ordered by step, down-sampled with LTTB to
 * at most `maxPoints` points, with a `value: null` row wherever the series had non-finite values
 * between two drawn points (so the line shows a gap there instead of bridging it).
 */
export function chartRows(points: ReadonlyArray<{ step: number; value: number }>, maxPoints: number): ChartRow[] {
  const len = points.length;
  const xs = new Float64Array(len);
  const ys = new Float64Array(len);
  // gapsUpTo[k]: how many runs of non-finite values precede finite point k (a prefix count).
  const gapsUpTo = new Uint32Array(len);
  let n = fillFinite(points, xs, ys, gapsUpTo);
  if (n < 0) {
    // Rare (steps normally arrive in order): sort a copy and go again. NaN steps are dropped anyway.
    const sorted = points.filter((p) => Number.isFinite(p.step)).sort((a, b) => a.step - b.step);
    n = fillFinite(sorted, xs, ys, gapsUpTo);
  }
  if (n <= 0) return [];

  const kept = lttbIndices(xs, ys, n, maxPoints);
  const rows: ChartRow[] = [];
  let prev = -1;
  for (let i = 0; i < kept.length; i++) {
    const idx = kept[i] as number;
    if (prev >= 0 && (gapsUpTo[idx] as number) > (gapsUpTo[prev] as number)) {
      rows.push({ step: ((xs[prev] as number) + (xs[idx] as number)) / 2, value: null });
    }
    rows.push({ step: xs[idx] as number, value: ys[idx] as number });
    prev = idx;
  }
  return rows;
}

/**
 * Copies the points with finite step and value into `xs`/`ys` and returns how many there are, or
 * -1 as soon as the steps turn out not to be in order.
 */
function fillFinite(
  points: ReadonlyArray<{ step: number; value: number }>,
  xs: Float64Array,
  ys: Float64Array,
  gapsUpTo: Uint32Array,
): number {
  let gaps = 0;
  let inGap = false;
  let lastStep = -Infinity;
  let n = 0;
  for (let i = 0; i < points.length; i++) {
    const p = points[i] as { step: number; value: number };
    const step = p.step;
    const value = p.value;
    if (!Number.isFinite(step)) continue;
    if (step < lastStep) return -1;
    lastStep = step;
    if (!Number.isFinite(value)) {
      if (!inGap) gaps++;
      inGap = true;
      continue;
    }
    inGap = false;
    xs[n] = step;
    ys[n] = value;
    gapsUpTo[n] = gaps;
    n++;
  }
  return n;
}

/** The vega-lite spec of the chart (exported for tests and debugging). */
export function lineChartSpec(o: {
  title: string;
  metric: string;
  rows: ChartRow[];
  markStep?: number | undefined;
  threshold?: number | undefined;
  width: number;
  height: number;
  rows2?: ChartRow[] | undefined;
  xTitle?: string | undefined;
}): TopLevelSpec {
  const base = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: o.width,
    height: o.height,
    autosize: { type: 'fit', contains: 'padding' },
    padding: { left: 12, right: 20, top: 12, bottom: 10 },
    background: BACKGROUND,
    title: { text: o.title, anchor: 'start', fontSize: 22, fontWeight: 'bold', color: TEXT_COLOUR, offset: 12, limit: Math.max(100, o.width - 40) },
    config: {
      font: FONT,
      view: { stroke: '#cccccc' },
      // a phone scales the 800-px picture to about 360 px: these read as 8 pt there
      axis: {
        labelFontSize: 18,
        titleFontSize: 18,
        titleFontWeight: 'bold',
        labelColor: TEXT_COLOUR,
        titleColor: TEXT_COLOUR,
        gridColor: GRID_COLOUR,
        domainColor: '#888888',
        tickColor: '#888888',
        labelOverlap: true,
      },
    },
  } as const;

  const xAxisBase = { title: o.xTitle ?? 'step', tickCount: 6, labelFlush: true };
  const all = o.rows2 ? [...o.rows, ...o.rows2] : o.rows;
  // Vega measures text by estimate (no canvas in Node): a long rotated metric name must be cut to the
  // plot's height, or the axis grows above the plot and pushes the chart title off the picture.
  const yAxis = { title: o.metric, tickCount: 5, titleLimit: Math.max(60, o.height - 110) };

  if (all.every((r) => r.value === null)) {
    // Keep the axes (titled) so the picture still says what it is about, and say there is nothing to draw.
    return {
      ...base,
      data: { values: [{}] },
      layer: [
        {
          mark: { type: 'text', fontSize: 22, color: '#888888', align: 'center', baseline: 'middle' },
          encoding: {
            x: { datum: 0.5, type: 'quantitative', scale: { domain: [0, 1] }, axis: { ...xAxisBase, labels: false, ticks: false, grid: false } },
            y: { datum: 0.5, type: 'quantitative', scale: { domain: [0, 1] }, axis: { ...yAxis, labels: false, ticks: false, grid: false } },
            text: { value: 'no data' },
          },
        },
      ],
    } as TopLevelSpec;
  }

  let lo = Infinity;
  let hi = -Infinity;
  let yLo = Infinity;
  let yHi = -Infinity;
  let drawn = 0;
  let integerSteps = true;
  for (const r of all) {
    if (r.value === null) continue;
    drawn++;
    if (r.step < lo) lo = r.step;
    if (r.step > hi) hi = r.step;
    if (r.value < yLo) yLo = r.value;
    if (r.value > yHi) yHi = r.value;
    if (!Number.isInteger(r.step)) integerSteps = false;
  }
  if (o.markStep !== undefined) {
    lo = Math.min(lo, o.markStep);
    hi = Math.max(hi, o.markStep);
  }
  // the threshold line is what the alert is about: the y range always reaches it
  if (o.threshold !== undefined) {
    yLo = Math.min(yLo, o.threshold);
    yHi = Math.max(yHi, o.threshold);
  }
  // Small step counts read best in full ("2,500"); large ones with an SI suffix per tick ("250k").
  const xAxis = {
    ...xAxisBase,
    ...(Math.max(Math.abs(lo), Math.abs(hi)) < 10_000 ? { format: ',~f' } : { labelExpr: "format(datum.value, '~s')" }),
    ...(integerSteps ? { tickMinStep: 1 } : {}),
  };
  // Tiny (KL, learning rates) and huge values read better in exponent form than as 0.0000250.
  const yMag = Math.max(Math.abs(yLo), Math.abs(yHi));
  const yLabels =
    yMag !== 0 && (yMag < 1e-3 || yMag >= 1e6) ? { labelExpr: "datum.value === 0 ? '0' : format(datum.value, '.3~e')" } : {};
  // A flat series (or a single point) gets a domain around its value, or vega invents odd ticks. A range
  // narrower than a tenth of the values' size is widened to that: noise of ±0.005 on a reward of 0.5 must
  // not fill the plot like a cliff.
  const floor = yMag * MIN_SPAN;
  const yDomain =
    yLo === yHi
      ? { domain: [yLo - (Math.abs(yLo) * 0.1 || 1), yHi + (Math.abs(yHi) * 0.1 || 1)] }
      : yHi - yLo < floor
        ? { domain: [(yLo + yHi) / 2 - floor / 2, (yLo + yHi) / 2 + floor / 2] }
        : {};
  const smoothed = drawn > SMOOTH_FROM ? withEma(o.rows, 2 / (Math.max(5, drawn / 20) + 1)) : null;

  const layers: unknown[] = [];
  if (o.markStep !== undefined) {
    // Drawn first so the series stays visible on top of it (the mark is often exactly at a spike).
    layers.push({
      data: { values: [{ step: o.markStep }] },
      mark: { type: 'rule', color: MARK_COLOUR, strokeWidth: 2.5, opacity: 0.9 },
      encoding: { x: { field: 'step', type: 'quantitative' } },
    });
  }
  if (smoothed) {
    // the EMA over the raw points, as W&B draws it: the raw line stays, faint, under the trend
    layers.push({
      data: { values: smoothed },
      mark: { type: 'line', color: LINE_COLOUR, strokeWidth: 3, strokeJoin: 'round', invalid: 'break-paths-filter-domains' },
      encoding: {
        x: { field: 'step', type: 'quantitative' },
        y: { field: 'ema', type: 'quantitative' },
      },
    });
  }
  layers.push({
    data: { values: o.rows },
    mark: {
      type: 'line',
      color: LINE_COLOUR,
      ...(smoothed ? { opacity: 0.35 } : {}),
      strokeWidth: 2,
      strokeJoin: 'round',
      invalid: 'break-paths-filter-domains',
      point: drawn <= 60 ? { filled: true, size: 45, color: LINE_COLOUR } : false,
    },
    encoding: {
      x: { field: 'step', type: 'quantitative', scale: { zero: false, nice: false, padding: 6 }, axis: xAxis },
      y: { field: 'value', type: 'quantitative', scale: { zero: false, nice: true, ...yDomain }, axis: { ...yAxis, ...yLabels } },
    },
  });
  if (o.rows2) {
    layers.push({
      data: { values: o.rows2 },
      mark: { type: 'line', color: SECOND_COLOUR, strokeWidth: 2, strokeJoin: 'round', invalid: 'break-paths-filter-domains' },
      encoding: { x: { field: 'step', type: 'quantitative' }, y: { field: 'value', type: 'quantitative' } },
    });
  }
  if (o.threshold !== undefined) layers.push(...thresholdLayers(o.threshold));
  if (o.markStep !== undefined) {
    // The label goes on the side of the rule with more room.
    const onRight = hi === lo || (o.markStep - lo) / (hi - lo) < 0.75;
    layers.push({
      data: { values: [{ step: o.markStep, label: `step ${formatStep(o.markStep)}` }] },
      mark: {
        type: 'text',
        color: MARK_COLOUR,
        fontSize: 17,
        fontWeight: 'bold',
        align: onRight ? 'left' : 'right',
        baseline: 'top',
        dx: onRight ? 6 : -6,
        dy: 4,
      },
      encoding: {
        x: { field: 'step', type: 'quantitative' },
        y: { value: 0 },
        text: { field: 'label' },
      },
    });
  }
  return { ...base, layer: layers } as TopLevelSpec;
}

/** The rule's threshold as a dashed horizontal rule, labelled with its value at the plot's right end. */
function thresholdLayers(value: number): unknown[] {
  const data = { values: [{ threshold: value, label: `threshold ${formatThreshold(value)}` }] };
  return [
    {
      data,
      mark: { type: 'rule', color: THRESHOLD_COLOUR, strokeWidth: 2.5, strokeDash: [10, 6] },
      encoding: { y: { field: 'threshold', type: 'quantitative' } },
    },
    {
      data,
      mark: { type: 'text', color: THRESHOLD_COLOUR, fontSize: 17, fontWeight: 'bold', align: 'right', baseline: 'bottom', dy: -4 },
      // above the line at the plot's right end (the firing step's label sits at the top)
      encoding: {
        y: { field: 'threshold', type: 'quantitative' },
        x: { value: { expr: 'width' } },
        text: { field: 'label' },
      },
    },
  ];
}

const formatThreshold = (v: number): string =>
  v === 0 || Math.abs(v) >= 1e-3 && Math.abs(v) < 1e6 ? String(Number(v.toPrecision(4))) : v.toExponential(2);

/** The chart's vega-lite spec to SVG, its shape compiled once (chartShapes.ts). */
export { specToSvg };

/**
 * Rasterises an SVG to PNG at `width` pixels. Fonts: DejaVu Sans's two files when they draw all the text, else
 * the system's (fonts.ts); without any fonts the text is simply missing (resvg does not fail). resvg loads the fonts
 * and draws on libuv's thread pool: the event loop goes on meanwhile, with a bot's other deliveries and commands.
 */
export async function svgToPng(svg: string, width: number, fonts: FontSource = chartFonts(svg)): Promise<Buffer> {
  return (await renderAsync(svg, rasterOptions(width, fonts))).asPng();
}

/**
 * `svgToPng` on this thread: for the chart thread, which has nothing else to do meanwhile; a hop to the pool and
 * back would only add two thread wake-ups, slow ones on a busy machine.
 */
export function svgToPngHere(svg: string, width: number): Buffer {
  return new Resvg(svg, rasterOptions(width, chartFonts(svg))).render().asPng();
}

function rasterOptions(width: number, fonts: FontSource): ResvgRenderOptions {
  return {
    background: BACKGROUND, font: { ...fonts, defaultFontFamily: FONT }, fitTo: { mode: 'width', value: width },
  };
}

function formatStep(step: number): string {
  return Number.isInteger(step) ? step.toLocaleString('en-US') : String(step);
}

function positiveInt(v: number | undefined, fallback: number): number {
  if (v === undefined || !Number.isFinite(v) || v < 1) return fallback;
  return Math.round(v);
}
