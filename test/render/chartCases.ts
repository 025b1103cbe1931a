/** Charts of many shapes and texts, drawn by the render tests two ways and compared. */
import type { TopLevelSpec } from 'vega-lite';
import type { ChartGuides } from '../../src/engine/capture.ts';
import { chartRows, lineChartSpec, MAX_CHART_POINTS } from '../../src/render/chart.ts';

type Points = Array<{ step: number; value: number }>;
const wave = (n: number, scale = 1, from = 1, every = 1): Points =>
  Array.from({ length: n }, (_, i) => ({ step: from + i * every, value: scale * (1 + Math.sin(i / 7) * 0.3 + i / n) }));

export interface Case {
  name: string;
  title: string;
  metric: string;
  points: Points;
  markStep?: number;
  threshold?: number;
  second?: Points;
  xTitle?: string;
  width?: number;
  height?: number;
  guides?: ChartGuides;
}

/** An alert's evidence: a limit and a level, a band, two windows with their means, the records that broke it. */
const evidence = (points: Points, at: number, second?: Points): ChartGuides => ({
  lines: [
    { value: 1.6, label: 'limit > 1.6', limit: true },
    { value: 1, label: 'baseline 1', limit: false },
  ],
  bands: [{ lo: 0.8, hi: 1.6, label: 'median ± 6 robust σ' }],
  windows: [
    { from: points[at - 40]!.step, to: points[at - 21]!.step, mean: 1.1, label: 'before 1.1' },
    { from: points[at - 20]!.step, to: points[at]!.step, mean: 1.4, label: 'after 1.4' },
  ],
  breaches: [points[at]!],
  ...(second && {
    second: {
      metric: 'grad_norm',
      points: second,
      lines: [{ value: 0, label: 'limit = 0', limit: true }],
      breaches: [],
      bands: [],
      windows: [],
    },
  }),
});
const spiked = (n: number, at: number, from = 1): Points =>
  wave(n, 1, from).map((p, i) => (i === at ? { ...p, value: 2.2 } : p));

/** Charts of many shapes, and several of the same shape with other rows and texts (the ones a kept view redraws). */
export const cases: Case[] = [
  {
    name: 'a card: 200 points, smoothed, a spike marked, its threshold',
    title: 'grad_norm · w1/run004',
    metric: 'grad_norm',
    points: wave(200).map((p) => (p.step === 151 ? { ...p, value: 15.8 } : p)),
    markStep: 151,
    threshold: 10,
  },
  {
    name: 'the same shape, other rows and texts',
    title: 'grad_norm · w2/run017',
    metric: 'grad_norm',
    points: wave(200, 3, 40).map((p) => (p.step === 190 ? { ...p, value: 22 } : p)),
    markStep: 190,
    threshold: 10,
  },
  {
    name: 'the mark early (its label on the right)',
    title: 'reward · a',
    metric: 'reward',
    points: wave(150),
    markStep: 12,
  },
  { name: 'no mark, no threshold', title: 'loss', metric: 'loss', points: wave(300, -0.05) },
  {
    name: '<= 60 points: point marks, no smoothing',
    title: 'entropy · run',
    metric: 'entropy',
    points: wave(15, 0.1),
    markStep: 9,
    threshold: 0.04,
  },
  { name: '20 points (smoothing starts past 20)', title: 't', metric: 'kl', points: wave(20, 0.01) },
  { name: '21 points', title: 't', metric: 'kl', points: wave(21, 0.01) },
  {
    name: 'a second series, aligned by epoch',
    title: 'reward: a (blue) vs b (orange)',
    metric: 'reward',
    points: wave(80, 1, 0, 0.25),
    second: wave(60, 0.8, 0, 0.3),
    xTitle: 'epoch',
  },
  {
    name: 'the same with other runs',
    title: 'reward: c (blue) vs d (orange)',
    metric: 'reward',
    points: wave(80, 2, 0, 0.25),
    second: wave(70, 1.7, 0, 0.3),
    xTitle: 'epoch',
  },
  { name: 'no data', title: 'run a · kl', metric: 'kl', points: [] },
  { name: 'no data, other texts', title: 'run b · entropy', metric: 'entropy', points: [{ step: 1, value: NaN }] },
  { name: 'tiny values (exponent labels)', title: 'lr', metric: 'lr', points: wave(100, 3e-6), threshold: 1e-5 },
  { name: 'huge values', title: 'tokens', metric: 'tokens', points: wave(100, 4e8) },
  {
    name: 'flat: a range around the value',
    title: 'flat',
    metric: 'frac_zero_std',
    points: wave(40).map((p) => ({ ...p, value: 0.5 })),
    markStep: 20,
  },
  {
    name: 'flat at another value',
    title: 'flat 2',
    metric: 'frac_zero_std',
    points: wave(40).map((p) => ({ ...p, value: 0.9 })),
    markStep: 25,
  },
  {
    name: 'narrow noise widened',
    title: 'noise',
    metric: 'reward',
    points: wave(100).map((p) => ({ ...p, value: p.step % 2 ? 0.505 : 0.495 })),
    markStep: 50,
  },
  {
    name: 'gaps where values were not finite',
    title: 'gappy',
    metric: 'loss',
    points: wave(120).map((p, i) => ({ ...p, value: i > 40 && i < 50 ? NaN : i === 90 ? Infinity : p.value })),
  },
  {
    name: 'steps past 10,000 (SI labels), down-sampled',
    title: 'long run',
    metric: 'reward',
    points: wave(5000, 1, 0, 37),
    markStep: 150_000,
  },
  { name: 'non-integer steps', title: 'epochs', metric: 'reward', points: wave(30, 1, 0.5, 0.37) },
  { name: 'one point, the mark outside', title: 'one', metric: 'kl', points: [{ step: 5, value: 0.1 }], markStep: 50 },
  { name: 'negative values under a threshold', title: 'loss', metric: 'loss', points: wave(90, -2), threshold: -1 },
  {
    name: 'a long title and metric name',
    title: `${'very long run name '.repeat(12)}· reward`,
    metric: `rewards/${'a_very_long_reward_function_name_'.repeat(4)}`,
    points: wave(100),
    markStep: 70,
    threshold: 1.2,
  },
  {
    name: 'untrusted text in the title and metric',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: hostile text, a template placeholder among it, must stay inert
    title: '<script>alert(1)</script> & "q" \'s\' @everyone ${x} ]]>',
    metric: '<b>m</b> & @here',
    points: wave(100),
    markStep: 40,
    threshold: 1,
  },
  { name: 'text beyond ASCII', title: 'Grüße · 训练 · ✅ · \u202eevil', metric: 'récompense', points: wave(50) },
  {
    name: "an alert's evidence: lines, a band, windows, marked records, the windows' means in a subtitle",
    title: 'pg_clipfrac · run',
    metric: 'pg_clipfrac',
    points: spiked(150, 120),
    markStep: 121,
    guides: evidence(spiked(150, 120), 120),
  },
  {
    name: 'the same shape with other rows and texts',
    title: 'kl · other',
    metric: 'kl',
    points: spiked(150, 100, 30),
    markStep: 130,
    guides: {
      ...evidence(spiked(150, 100, 30), 100),
      windows: evidence(spiked(150, 100, 30), 100).windows.map((w) => ({ ...w, label: `w ${w.mean}` })),
    },
  },
  {
    name: 'two panels: a second metric with its own line',
    title: 'loss · run',
    metric: 'loss',
    points: spiked(80, 70),
    markStep: 71,
    guides: evidence(spiked(80, 70), 70, wave(80, 0.5)),
  },
  { name: 'another size', title: 'small', metric: 'kl', points: wave(50), width: 400, height: 240, markStep: 30 },
];

export const specOf = (c: Case): TopLevelSpec =>
  lineChartSpec({
    title: c.title,
    metric: c.metric,
    rows: chartRows(c.points, MAX_CHART_POINTS),
    width: c.width ?? 800,
    height: c.height ?? 360,
    rows2: c.second ? chartRows(c.second, MAX_CHART_POINTS) : undefined,
    xTitle: c.xTitle,
    ...(c.markStep === undefined ? {} : { markStep: c.markStep }),
    ...(c.threshold === undefined ? {} : { threshold: c.threshold }),
    ...(c.guides === undefined ? {} : { guides: c.guides }),
  });
