/**
 * Alert cards' charts per second in this process (`BENCH_ONLY=charts`): what the bot pays for a card's chart, apart
 * from the rest of a delivery. The charts are those a card draws (capture.ts: up to 200 points ending a little after
 * the alert's step), for many runs and a few rules: each chart's rows and texts are its own, its shape one of a few.
 * CPU is the process's, all threads (resvg rasterises on libuv's pool), drawn here and then on the chart thread as the
 * bot draws its cards. BENCH_CHARTS sets how many (default 200).
 */
import { performance } from 'node:perf_hooks';
import {
  chartRows,
  lineChartSpec,
  MAX_CHART_POINTS,
  renderLineChart,
  specToSvg,
  svgToPng,
  type LineChartOptions,
} from '../src/render/chart.ts';
import { chartThreadReady, renderOffThread } from '../src/render/chartThread.ts';

export interface ChartsResult {
  charts: number;
  chartsPerSec: number;
  /** CPU milliseconds per chart, all threads; and the wall time of its two halves, one chart at a time */
  cpuMsPerChart: number;
  /** the share of the wall time this thread's event loop was busy */
  busyShare: number;
  /** the same charts drawn on the chart thread, as the bot draws its cards (chartThread.ts) */
  offThread: { chartsPerSec: number; cpuMsPerChart: number; busyShare: number };
  svgMs: number;
  pngMs: number;
}

const none = { lines: [], bands: [], windows: [], breaches: [] };

/** The i-th card's chart with its evidence (capture.ts): a spike over its rule's line and baseline (grad_explosion), a
 * fall (a trend: its two windows), a collapse (its line and the records over it). */
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
      return {
        title: `grad_norm · ${run}`,
        metric: 'grad_norm',
        points,
        markStep: fired,
        guides: {
          ...none,
          lines: [
            { value: 10, label: 'limit > 10', limit: true },
            { value: 1, label: 'baseline 1', limit: false },
          ],
          breaches: [points[149]],
        },
      };
    case 1: {
      const falling = points.map((p, k) => ({ ...p, value: p.value - k / 150 }));
      const window = (to: number, label: string) => ({
        from: falling[to - 14]!.step,
        to: falling[to]!.step,
        mean: falling[to]!.value,
        label,
      });
      return {
        title: `reward · ${run}`,
        metric: 'reward',
        points: falling,
        markStep: fired,
        guides: { ...none, windows: [window(134, 'before'), window(149, 'after')], breaches: [falling[149]!] },
      };
    }
    default: {
      const rising = points.map((p, k) => ({ ...p, value: Math.min(1, k / 160) }));
      return {
        title: `frac_zero_std · ${run}`,
        metric: 'frac_zero_std',
        points: rising,
        markStep: fired,
        guides: {
          ...none,
          lines: [{ value: 0.8, label: 'limit > 0.8', limit: true }],
          breaches: rising.filter((p) => p.value > 0.8),
        },
      };
    }
  }
}

export async function runCharts(count = 200): Promise<ChartsResult> {
  await chartThreadReady();
  for (let i = 0; i < 10; i++) {
    // shapes made, code warm, on both threads
    await renderLineChart(cardChart(count + i));
    await renderOffThread(cardChart(count + i));
  }
  const here = await timed(count, renderLineChart);
  const offThread = await timed(count, renderOffThread);
  // the halves, on a tenth as many
  const few = Math.max(1, Math.round(count / 10));
  let svgMs = 0;
  let pngMs = 0;
  for (let i = 0; i < few; i++) {
    const o = cardChart(i);
    const t1 = performance.now();
    const svg = await specToSvg(
      lineChartSpec({
        title: o.title,
        metric: o.metric,
        rows: chartRows(o.points, MAX_CHART_POINTS),
        markStep: o.markStep,
        guides: o.guides,
        width: 800,
        height: 360,
      }),
    );
    const t2 = performance.now();
    await svgToPng(svg, 800);
    pngMs += performance.now() - t2;
    svgMs += t2 - t1;
  }
  return {
    charts: count,
    ...here,
    offThread,
    svgMs: svgMs / few,
    pngMs: pngMs / few,
  };
}

/** Draws `count` cards' charts one at a time with `draw`: charts/s, CPU per chart (all threads), event loop busy. */
async function timed(
  count: number,
  draw: (o: LineChartOptions) => Promise<Buffer>,
): Promise<{ chartsPerSec: number; cpuMsPerChart: number; busyShare: number }> {
  const loop0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await draw(cardChart(i));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return {
    chartsPerSec: count / (wall / 1000),
    cpuMsPerChart: (cpu.user + cpu.system) / 1000 / count,
    busyShare: performance.eventLoopUtilization(loop0).utilization,
  };
}

export function formatChartsReport(r: ChartsResult): string {
  return (
    `alert cards' charts, one at a time: ${r.charts} in ${(r.charts / r.chartsPerSec).toFixed(1)} s, ` +
    `${r.chartsPerSec.toFixed(1)} charts/s, ${r.cpuMsPerChart.toFixed(1)} ms CPU each ` +
    `(SVG ${r.svgMs.toFixed(1)} ms + PNG ${r.pngMs.toFixed(1)} ms wall), event loop busy ` +
    `${(100 * r.busyShare).toFixed(0)}%\n  on the chart thread (the bot's cards): ` +
    `${r.offThread.chartsPerSec.toFixed(1)} charts/s, ${r.offThread.cpuMsPerChart.toFixed(1)} ms CPU each, ` +
    `event loop busy ` +
    `${(100 * r.offThread.busyShare).toFixed(0)}%\n`
  );
}
