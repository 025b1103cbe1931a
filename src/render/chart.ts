/**
 * Line charts as PNG (vega-lite to SVG to resvg): a metric's series with an alert's evidence (its limit, bands and
 * windows), for cards and replies.
 */
import { Resvg, renderAsync, type ResvgRenderOptions } from '@resvg/resvg-js';
import type { TopLevelSpec } from 'vega-lite';
import type { ChartGuides } from '../engine/capture.ts';
import { specToSvg } from './chartShapes.ts';
import { chartFonts, type FontSource } from './fonts.ts';
import { lttbIndices } from '../lib/lttb.ts';

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
/** the rule's limit: dashed, darker than the series, so that it reads as a line drawn by the rule */
const LIMIT_COLOUR = '#6a4c93';
/** the levels a rule measures from (a baseline, a median): dotted grey, beside the limit */
const LEVEL_COLOUR = '#555555';
/** the windows a rule compares: shaded, their means drawn across them */
const WINDOW_COLOUR = '#7a7a7a';
const WINDOW_MEAN_COLOUR = '#2b2b2b';
/** the EMA over a long series: thin and dark over the bold raw line, a hint of the trend only */
const SMOOTH_COLOUR = '#0b3d66';
/** the raw line is the evidence: wider than any smoothed line */
export const RAW_WIDTH = 2.5;
export const SMOOTH_WIDTH = 1.25;
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
  /** an alert's evidence (its rule's lines, bands, windows, the records that broke it); drawn instead of `threshold` */
  guides?: ChartGuides;
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
  opts: LineChartOptions,
  raster: (svg: string, width: number) => Buffer | Promise<Buffer> = svgToPng,
): Promise<Buffer> {
  const spec = chartSpecOf(opts);
  const svg = await specToSvg(spec);
  return raster(svg, positiveInt(opts.width, DEFAULT_CHART_WIDTH));
}

/** The vega-lite spec `renderLineChart` draws for `opts`. */
export function chartSpecOf(opts: LineChartOptions): TopLevelSpec {
  const markStep = opts.markStep !== undefined && Number.isFinite(opts.markStep) ? opts.markStep : undefined;
  const threshold = opts.threshold !== undefined && Number.isFinite(opts.threshold) ? opts.threshold : undefined;
  return lineChartSpec({
    title: opts.title,
    metric: opts.metric,
    rows: chartRows(opts.points, MAX_CHART_POINTS),
    markStep,
    threshold,
    width: positiveInt(opts.width, DEFAULT_CHART_WIDTH),
    height: positiveInt(opts.height, DEFAULT_CHART_HEIGHT),
    rows2: opts.second ? chartRows(opts.second.points, MAX_CHART_POINTS) : undefined,
    xTitle: opts.xTitle,
    guides: opts.guides,
  });
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
  guides?: ChartGuides | undefined;
}): TopLevelSpec {
  const base = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: o.width,
    height: o.height,
    autosize: { type: 'fit', contains: 'padding' },
    padding: { left: 12, right: 20, top: 12, bottom: 10 },
    background: BACKGROUND,
    title: {
      text: o.title,
      anchor: 'start',
      fontSize: 22,
      fontWeight: 'bold',
      color: TEXT_COLOUR,
      offset: 12,
      limit: Math.max(100, o.width - 40),
    },
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
  // the title clear of the tick labels: a rotated title's descenders (frac_zero_std's underscores) reach towards them
  const yAxis = { title: o.metric, tickCount: 5, titleLimit: Math.max(60, o.height - 110), titlePadding: 10 };

  if (all.every((r) => r.value === null)) {
    // Keep the axes (titled) so the picture still says what it is about, and say there is nothing to draw.
    return {
      ...base,
      data: { values: [{}] },
      layer: [
        {
          mark: { type: 'text', fontSize: 22, color: '#888888', align: 'center', baseline: 'middle' },
          encoding: {
            x: {
              datum: 0.5,
              type: 'quantitative',
              scale: { domain: [0, 1] },
              axis: { ...xAxisBase, labels: false, ticks: false, grid: false },
            },
            y: {
              datum: 0.5,
              type: 'quantitative',
              scale: { domain: [0, 1] },
              axis: { ...yAxis, labels: false, ticks: false, grid: false },
            },
            text: { value: 'no data' },
          },
        },
      ],
    } as TopLevelSpec;
  }

  const g = o.guides;
  const threshold =
    o.threshold === undefined
      ? []
      : [{ value: o.threshold, label: `threshold ${formatThreshold(o.threshold)}`, limit: true }];
  const main: Panel = {
    rows: o.rows,
    rows2: o.rows2,
    lines: g ? g.lines : threshold,
    bands: g?.bands ?? [],
    windows: g?.windows ?? [],
    breaches: g?.breaches ?? [],
  };
  const second: Panel | null = g?.second ? { ...g.second, rows: chartRows(g.second.points, MAX_CHART_POINTS) } : null;
  // the steps every panel spans (one x axis)
  let lo = Infinity;
  let hi = -Infinity;
  let integerSteps = true;
  for (const p of second ? [main, second] : [main]) {
    for (const step of stepsOf(p)) {
      if (step < lo) lo = step;
      if (step > hi) hi = step;
      if (!Number.isInteger(step)) integerSteps = false;
    }
  }
  if (o.markStep !== undefined) {
    lo = Math.min(lo, o.markStep);
    hi = Math.max(hi, o.markStep);
  }
  // Small step counts read best in full ("2,500"); large ones with an SI suffix per tick ("250k").
  const xAxis = {
    ...xAxisBase,
    ...(Math.max(Math.abs(lo), Math.abs(hi)) < 10_000 ? { format: ',~f' } : { labelExpr: "format(datum.value, '~s')" }),
    ...(integerSteps ? { tickMinStep: 1 } : {}),
  };
  const mark = o.markStep;
  const span: [number, number] = [lo, hi];
  // what the shaded areas are (the compared windows' means, a band's meaning), said under the title: labels inside
  // the plot would sit on the records they average
  const shaded = (p: Panel): string =>
    [
      ...(p.windows.length > 0 ? [p.windows.map((w) => w.label).join(' → ')] : []),
      ...p.bands.map((b) => `shaded: ${b.label}`),
    ].join('; ');
  const said = [main, ...(second ? [second] : [])].filter((p) => shaded(p) !== '');
  const subtitle = said
    .map((p) => `${said.length > 1 ? `${p === main ? o.metric : g!.second!.metric}: ` : ''}${shaded(p)}`)
    .join('; ');
  const titled = subtitle
    ? { ...base, title: { ...base.title, subtitle, subtitleFontSize: 16, subtitleColor: WINDOW_MEAN_COLOUR } }
    : base;
  if (!second)
    return {
      ...titled,
      layer: panelLayers(main, { xAxis, yAxis, mark, span, smooth: !g, labelMark: o.height - SINGLE_CHROME }),
    } as TopLevelSpec;
  // two metrics: two panels over one x axis, each with its own y axis and lines ('fit' sizes single views only)
  const width = Math.max(100, o.width - Y_AXIS_ROOM);
  const height = Math.max(60, Math.round((o.height - TWO_PANEL_CHROME - (subtitle ? SUBTITLE_ROOM : 0)) / 2));
  // each panel's metric over it, in full: beside a panel this short a rotated name is cut to a few letters
  const panelY = { ...yAxis, title: null };
  const named = (text: string) => ({
    text,
    anchor: 'start',
    fontSize: 16,
    fontWeight: 'bold',
    color: TEXT_COLOUR,
    offset: 4,
    limit: width,
  });
  return {
    ...titled,
    autosize: { type: 'pad' },
    spacing: 10,
    resolve: { scale: { x: 'shared' } },
    vconcat: [
      {
        title: named(o.metric),
        width,
        height,
        layer: panelLayers(main, {
          xAxis: { ...xAxis, title: null, labels: false },
          yAxis: panelY,
          mark,
          span,
          labelMark: height,
          smooth: false,
        }),
      },
      {
        title: named(g!.second!.metric),
        width,
        height,
        layer: panelLayers(second, { xAxis, yAxis: panelY, mark, span, labelMark: null, smooth: false }),
      },
    ],
  } as TopLevelSpec;
}

/** In a two-panel chart, the room of a y axis (labels and title) beside the panels, and of the title and the x axis
 * over and under them: the panels fill the rest of the picture. */
const Y_AXIS_ROOM = 90;
/** the pixels over the highest value the firing step's label takes (17-px text, 4 px down from the top) */
const MARK_LABEL_ROOM = 26;
/** the height of the title and the x axis around a single plot: its plot is the chart's height less this */
const SINGLE_CHROME = 100;
/** the share of the y range a line's label needs on its side of the line */
const LABEL_ROOM = 0.1;
const TWO_PANEL_CHROME = 185;
const SUBTITLE_ROOM = 22;

/** One metric's plot: its series and what the alert's rule drew over it. */
interface Panel {
  rows: ChartRow[];
  rows2?: ChartRow[] | undefined;
  lines: ChartGuides['lines'];
  bands: ChartGuides['bands'];
  windows: ChartGuides['windows'];
  breaches: ChartGuides['breaches'];
}

/** The steps a panel draws at: its rows, windows and marked records. */
function* stepsOf(p: Panel): Generator<number> {
  for (const r of p.rows) if (r.value !== null) yield r.step;
  for (const r of p.rows2 ?? []) if (r.value !== null) yield r.step;
  for (const w of p.windows) yield* [w.from, w.to];
  for (const b of p.breaches) if (Number.isFinite(b.step)) yield b.step;
}

/** The values a panel's y range reaches: the series, and every line, band, window mean and marked record (the limit
 * the value crossed is what the alert is about). */
function* valuesOf(p: Panel): Generator<number> {
  for (const r of p.rows) if (r.value !== null) yield r.value;
  for (const r of p.rows2 ?? []) if (r.value !== null) yield r.value;
  for (const l of p.lines) yield l.value;
  for (const b of p.bands) yield* [b.lo, b.hi];
  for (const w of p.windows) yield w.mean;
  for (const b of p.breaches) yield b.value;
}

function panelLayers(
  p: Panel,
  o: {
    xAxis: object;
    yAxis: object;
    mark: number | undefined;
    span: [number, number];
    smooth: boolean;
    /** the plot's height in pixels when the firing step's label goes at its top (null: not on this panel) */
    labelMark: number | null;
  },
): unknown[] {
  let yLo = Infinity;
  let yHi = -Infinity;
  for (const v of valuesOf(p)) {
    if (!Number.isFinite(v)) continue;
    if (v < yLo) yLo = v;
    if (v > yHi) yHi = v;
  }
  if (yLo > yHi) [yLo, yHi] = [0, 1]; // a second panel of no finite value: an empty plot
  const drawn = p.rows.reduce((n, r) => (r.value === null ? n : n + 1), 0);
  // Tiny (KL, learning rates) and huge values read better in exponent form than as 0.0000250.
  const yMag = Math.max(Math.abs(yLo), Math.abs(yHi));
  const yLabels =
    yMag !== 0 && (yMag < 1e-3 || yMag >= 1e6)
      ? { labelExpr: "datum.value === 0 ? '0' : format(datum.value, '.3~e')" }
      : {};
  // A flat series (or a single point) gets a domain around its value, or vega invents odd ticks. A range
  // narrower than a tenth of the values' size is widened to that: noise of ±0.005 on a reward of 0.5 must
  // not fill the plot like a cliff.
  const floor = yMag * MIN_SPAN;
  const [dLo, dHi] =
    yLo === yHi
      ? [yLo - (Math.abs(yLo) * 0.1 || 1), yHi + (Math.abs(yHi) * 0.1 || 1)]
      : yHi - yLo < floor
        ? [(yLo + yHi) / 2 - floor / 2, (yLo + yHi) / 2 + floor / 2]
        : [yLo, yHi];
  // room at the top for the firing step's label, over the records (a spike is the highest of them)
  const headroom =
    o.mark !== undefined && o.labelMark !== null ? Math.min(0.5, MARK_LABEL_ROOM / Math.max(1, o.labelMark)) : 0;
  const yDomain = { domain: [dLo, dHi + headroom * (dHi - dLo)] };
  // an alert's chart draws no EMA: a lagging line under its limit while the records crossed it says the opposite
  const smoothed = o.smooth && drawn > SMOOTH_FROM ? withEma(p.rows, 2 / (Math.max(5, drawn / 20) + 1)) : null;
  const x = { field: 'step', type: 'quantitative' } as const;

  const layers: unknown[] = [];
  for (const b of p.bands) {
    // the range the rule calls normal: the series leaves it where the alert fired
    layers.push({
      data: { values: [{ lo: b.lo, hi: b.hi }] },
      mark: { type: 'rect', color: LIMIT_COLOUR, opacity: 0.1 },
      encoding: { y: { field: 'lo', type: 'quantitative' }, y2: { field: 'hi' } },
    });
  }
  if (p.windows.length > 0) {
    layers.push({
      data: { values: p.windows.map((w) => ({ from: w.from, to: w.to })) },
      mark: { type: 'rect', color: WINDOW_COLOUR, opacity: 0.14 },
      encoding: { x: { field: 'from', type: 'quantitative' }, x2: { field: 'to' } },
    });
  }
  if (o.mark !== undefined) {
    // Drawn first so the series stays visible on top of it (the mark is often exactly at a spike).
    layers.push({
      data: { values: [{ step: o.mark }] },
      mark: { type: 'rule', color: MARK_COLOUR, strokeWidth: 2, opacity: 0.6 },
      encoding: { x },
    });
  }
  // the raw records are the evidence, drawn bold; their EMA only hints at the trend, thin over them
  layers.push({
    data: { values: p.rows },
    mark: {
      type: 'line',
      color: LINE_COLOUR,
      strokeWidth: RAW_WIDTH,
      strokeJoin: 'round',
      invalid: 'break-paths-filter-domains',
      point: drawn <= 60 ? { filled: true, size: 45, color: LINE_COLOUR } : false,
    },
    encoding: {
      x: { ...x, scale: { zero: false, nice: false, padding: 6 }, axis: o.xAxis },
      y: {
        field: 'value',
        type: 'quantitative',
        scale: { zero: false, nice: true, ...yDomain },
        axis: { ...o.yAxis, ...yLabels },
      },
    },
  });
  if (smoothed) {
    layers.push({
      data: { values: smoothed },
      mark: {
        type: 'line',
        color: SMOOTH_COLOUR,
        strokeWidth: SMOOTH_WIDTH,
        opacity: 0.7,
        strokeJoin: 'round',
        invalid: 'break-paths-filter-domains',
      },
      encoding: { x, y: { field: 'ema', type: 'quantitative' } },
    });
  }
  if (p.rows2) {
    layers.push({
      data: { values: p.rows2 },
      mark: {
        type: 'line',
        color: SECOND_COLOUR,
        strokeWidth: 2,
        strokeJoin: 'round',
        invalid: 'break-paths-filter-domains',
      },
      encoding: { x, y: { field: 'value', type: 'quantitative' } },
    });
  }
  if (p.windows.length > 0) {
    // each window's mean across it (the numbers are in the subtitle)
    layers.push({
      data: { values: p.windows.map((w) => ({ from: w.from, to: w.to, mean: w.mean })) },
      mark: { type: 'rule', color: WINDOW_MEAN_COLOUR, strokeWidth: 3.5 },
      encoding: {
        x: { field: 'from', type: 'quantitative' },
        x2: { field: 'to' },
        y: { field: 'mean', type: 'quantitative' },
      },
    });
  }
  layers.push(...lineLayers(p.lines, p.rows, yDomain.domain as [number, number]));
  if (p.breaches.length > 0) {
    layers.push({
      data: { values: p.breaches.filter((b) => Number.isFinite(b.step) && Number.isFinite(b.value)) },
      mark: {
        type: 'point',
        shape: 'circle',
        filled: true,
        size: 130,
        color: MARK_COLOUR,
        stroke: BACKGROUND,
        strokeWidth: 1.5,
        opacity: 1,
      },
      encoding: { x, y: { field: 'value', type: 'quantitative' } },
    });
  }
  if (o.mark !== undefined && o.labelMark !== null) {
    const [lo, hi] = o.span;
    // The label goes on the side of the rule with more room.
    const onRight = hi === lo || (o.mark - lo) / (hi - lo) < 0.75;
    layers.push({
      data: { values: [{ step: o.mark, label: `step ${formatStep(o.mark)}` }] },
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
      encoding: { x, y: { value: 0 }, text: { field: 'label' } },
    });
  }
  return layers;
}

/** The rule's lines: its limits dashed and bold, the levels it measures from (a baseline, a median) dotted and grey.
 * Each is labelled at the plot's left end (the firing step, its label and the records that broke the rule are at the
 * right), on the side of the line fewer records are on, unless that side has no room for it (a line at the range's
 * edge). */
function lineLayers(lines: ChartGuides['lines'], rows: readonly ChartRow[], [lo, hi]: [number, number]): unknown[] {
  const out: unknown[] = [];
  const room = LABEL_ROOM * (hi - lo);
  const above = (v: number): boolean => {
    if (hi - v < room) return false;
    if (v - lo < room) return true;
    let over = 0;
    let under = 0;
    for (const r of rows) if (r.value !== null) r.value > v ? over++ : under++;
    return over <= under;
  };
  for (const limit of [false, true]) {
    const field = limit ? 'threshold' : 'level';
    const chosen = lines.filter((l) => l.limit === limit);
    if (chosen.length === 0) continue;
    const data = { values: chosen.map((l) => ({ [field]: l.value, label: l.label, up: above(l.value) })) };
    const y = { field, type: 'quantitative' };
    out.push(
      limit
        ? { data, mark: { type: 'rule', color: LIMIT_COLOUR, strokeWidth: 2.5, strokeDash: [10, 6] }, encoding: { y } }
        : { data, mark: { type: 'rule', color: LEVEL_COLOUR, strokeWidth: 2, strokeDash: [3, 4] }, encoding: { y } },
    );
    for (const up of [true, false]) {
      if (!data.values.some((d) => d.up === up)) continue;
      out.push({
        data: { values: data.values.filter((d) => d.up === up) },
        mark: {
          type: 'text',
          color: limit ? LIMIT_COLOUR : LEVEL_COLOUR,
          fontSize: limit ? 17 : 15,
          fontWeight: 'bold',
          align: 'left',
          baseline: up ? 'bottom' : 'top',
          dx: 6,
          dy: up ? -4 : 4,
        },
        encoding: { y, x: { value: 0 }, text: { field: 'label' } },
      });
    }
  }
  return out;
}

const formatThreshold = (v: number): string =>
  v === 0 || (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e6) ? String(Number(v.toPrecision(4))) : v.toExponential(2);

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
    background: BACKGROUND,
    font: { ...fonts, defaultFontFamily: FONT },
    fitTo: { mode: 'width', value: width },
  };
}

function formatStep(step: number): string {
  return Number.isInteger(step) ? step.toLocaleString('en-US') : String(step);
}

function positiveInt(v: number | undefined, fallback: number): number {
  if (v === undefined || !Number.isFinite(v) || v < 1) return fallback;
  return Math.round(v);
}
