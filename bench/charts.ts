/**
 * Alert cards' charts per second in this process (`BENCH_ONLY=charts`): what the bot pays for a card's chart, apart
 * from the rest of a delivery. The charts are those a card draws (capture.ts: up to 200 points ending a little after
 * the alert's step), for many runs and a few rules: each chart's rows and texts are its own, its shape one of a few.
 * CPU is the process's, all threads (resvg rasterises on libuv's pool). BENCH_CHARTS sets how many (default 200).
 */
import { performance } from 'node:perf_hooks';
import {
  chartRows, lineChartSpec, MAX_CHART_POINTS, renderLineChart, specToSvg, svgToPng, type LineChartOptions,
} from '../src/render/chart.ts';

export interface ChartsResult {
  charts: number;
  chartsPerSec: number;
  /** CPU milliseconds per chart, all threads; and the wall time of its two halves, one chart at a time */
  cpuMsPerChart: number;
  svgMs: number;
  pngMs: number;
}

/** The i-th card's chart: a spike over its rule's line (grad_explosion), a fall (a trend: no line), a collapse. */
function cardChart(i: number): LineChartOptions {
  const run = `w${i % 3}/run${String(i % 100).padStart(3, '0')}`;
  const end = 40 + i * 7;
  const points = Array.from({ length: 200 }, (_, k) => {
    const step = end - 199 + k;
    return { step, value: 1 + 0.3 * Math.sin((step + i) / 6) + 0.1 * Math.cos(step * 1.7) };
  });
  const fired = end - 50;
  switch (i % 3) {
    case 0:
      points[149] = { step: fired, value: 14 + (i % 5) };
      return { title: `grad_norm · ${run}`, metric: 'grad_norm', points, markStep: fired, threshold: 10 };
    case 1:
      return {
        title: `reward · ${run}`, metric: 'reward', points: points.map((p, k) => ({ ...p, value: p.value - k / 150 })),
        markStep: fired,
      };
    default:
      return { title: `frac_zero_std · ${run}`, metric: 'frac_zero_std',
        points: points.map((p, k) => ({ ...p, value: Math.min(1, k / 160) })), markStep: fired, threshold: 0.8 };
  }
}

export async function runCharts(count = 200): Promise<ChartsResult> {
  for (let i = 0; i < 10; i++) await renderLineChart(cardChart(count + i)); // shapes made, code warm
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await renderLineChart(cardChart(i));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  // the halves, on a tenth as many
  const few = Math.max(1, Math.round(count / 10));
  let svgMs = 0;
  let pngMs = 0;
  for (let i = 0; i < few; i++) {
    const o = cardChart(i);
    const t1 = performance.now();
    const svg = await specToSvg(lineChartSpec({
      title: o.title, metric: o.metric, rows: chartRows(o.points, MAX_CHART_POINTS), markStep: o.markStep,
      threshold: o.threshold, width: 800, height: 360,
    }));
    const t2 = performance.now();
    await svgToPng(svg, 800);
    pngMs += performance.now() - t2;
    svgMs += t2 - t1;
  }
  return {
    charts: count,
    chartsPerSec: count / (wall / 1000),
    cpuMsPerChart: (cpu.user + cpu.system) / 1000 / count,
    svgMs: svgMs / few,
    pngMs: pngMs / few,
  };
}

export function formatChartsReport(r: ChartsResult): string {
  return `alert cards' charts, one at a time: ${r.charts} in ${(r.charts / r.chartsPerSec).toFixed(1)} s, ` +
    `${r.chartsPerSec.toFixed(1)} charts/s, ${r.cpuMsPerChart.toFixed(1)} ms CPU each ` +
    `(SVG ${r.svgMs.toFixed(1)} ms + PNG ${r.pngMs.toFixed(1)} ms wall)\n`;
}
