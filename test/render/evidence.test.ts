/**
 * An alert card's chart shows why the alert fired: for each kind of rule, an alert made by the real engine from
 * crafted records, read back from its outbox row as a notifier reads it, drawn as its card draws it. The limit the
 * rule drew is there with its value (derived here from the rule and the records), the raw records are the bold line,
 * and the y range reaches both the limit and the firing record. Each chart is written as a PNG under
 * bench/out/charts-evidence/ for a person to look at.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vega from 'vega';
import type { TopLevelSpec } from 'vega-lite';
import { describe, expect, it } from 'vitest';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import type { Rule } from '../../src/engine/rules.ts';
import { alertCards } from '../../src/notify/cards.ts';
import { parseNotification } from '../../src/notify/payload.ts';
import { chartSpecOf, PNG_SIGNATURE, RAW_WIDTH, specToSvg, svgToPng } from '../../src/render/chart.ts';
import { compileVegaLite, viewOptions } from '../../src/render/vegaEnv.ts';
import type { AlertChart } from '../../src/notify/cards.ts';
import { presetOnly, rulesOf, Trace, type Values } from '../engine/trace.ts';

const OUT = join(import.meta.dirname, '..', '..', 'bench', 'out', 'charts-evidence');

/** a fixed, uneven wobble in [-0.5, 0.5): records that are not flat */
const jitter = (i: number): number => ((i * 7919) % 13) / 13 - 0.5;
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const preset = <K extends Rule['kind']>(id: string): Extract<Rule, { kind: K }> =>
  GRPO_PRESET.find((r) => r.id === id) as Extract<Rule, { kind: K }>;

type Layer = {
  mark: { type: string; strokeWidth?: number; opacity?: number; color?: string };
  data?: { values: Array<Record<string, number | string | null>> };
  encoding: Record<string, { field?: string } | undefined>;
};
type Spec = { layer?: Layer[]; vconcat?: Array<{ layer: Layer[] }> };

/** The chart of the rule's firing card, from the outbox row read back through the payload's schema. */
function chartOfAlert(t: Trace, rule: string): { chart: AlertChart; fired: number } {
  for (const row of t.outbox()) {
    const n = parseNotification(JSON.stringify(row.notification));
    const at = n.items.findIndex((i) => i.rule === rule && i.kind === 'firing');
    if (at < 0) continue;
    const card = alertCards(n)[at]!;
    expect(card.chart, `${rule}: its card has a chart`).not.toBeNull();
    return { chart: card.chart!, fired: n.items[at]!.step };
  }
  throw new Error(`no firing card of ${rule}: ${JSON.stringify(t.states())}`);
}

const panels = (spec: TopLevelSpec): Layer[][] => {
  const s = spec as unknown as Spec;
  return s.vconcat ? s.vconcat.map((v) => v.layer) : [s.layer!];
};
const rawLayer = (layers: Layer[]): Layer =>
  layers.find((l) => l.mark.type === 'line' && l.encoding.y?.field === 'value')!;
const limitsOf = (layers: Layer[]): number[] =>
  layers
    .filter((l) => l.mark.type === 'rule' && l.encoding.y?.field === 'threshold')
    .flatMap((l) => l.data!.values.map((v) => v.threshold as number));
const breachesOf = (layers: Layer[]): Array<{ step: number; value: number }> =>
  layers
    .filter((l) => l.mark.type === 'point')
    .flatMap((l) => l.data!.values.map((v) => ({ step: v.step as number, value: v.value as number })));

/** The y domains vega computed for the spec's panels, top first (what the picture's y axes span). */
async function yDomains(spec: TopLevelSpec): Promise<Array<[number, number]>> {
  const vg = compileVegaLite(spec).spec;
  const view = new vega.View(vega.parse(vg), viewOptions());
  await view.runAsync();
  const names: string[] = [];
  const walk = (node: { scales?: Array<{ name: string }>; marks?: unknown[] }): void => {
    for (const s of node.scales ?? []) if (/(^|_)y$/.test(s.name)) names.push(s.name);
    for (const m of node.marks ?? []) walk(m as typeof node);
  };
  walk(vg as unknown as Parameters<typeof walk>[0]);
  const domains = names.map((n) => view.scale(n).domain() as [number, number]);
  view.finalize();
  return domains;
}

const inside = (v: number, [lo, hi]: [number, number]): boolean => v >= lo && v <= hi;

/**
 * What every kind's chart must show: the raw line bold (wider than any smoothed line, not faded), the firing record
 * marked, and each panel's limits (`limits`, top panel first) drawn and within its y range with the firing value.
 */
async function checkEvidence(
  name: string,
  chart: AlertChart,
  fired: number,
  firedValue: number,
  limits: number[][],
): Promise<Layer[][]> {
  const spec = chartSpecOf(chart);
  const ps = panels(spec);
  expect(ps.length).toBe(limits.length);
  const domains = await yDomains(spec);
  expect(domains.length).toBe(ps.length);
  ps.forEach((layers, k) => {
    const raw = rawLayer(layers);
    const smoothed = layers.filter((l) => l.mark.type === 'line' && l.encoding.y?.field === 'ema');
    for (const s of smoothed) expect(raw.mark.strokeWidth!).toBeGreaterThan(s.mark.strokeWidth!);
    expect(raw.mark.strokeWidth).toBe(RAW_WIDTH);
    expect(raw.mark.opacity ?? 1).toBe(1);
    const drawn = limitsOf(layers);
    for (const want of limits[k]!) {
      expect(
        drawn.some((v) => Math.abs(v - want) <= 1e-9 * Math.max(1, Math.abs(want))),
        `${name}: limit ${want} in ${drawn}`,
      ).toBe(true);
      expect(inside(want, domains[k]!), `${name}: limit ${want} in ${domains[k]}`).toBe(true);
    }
  });
  expect(inside(firedValue, domains[0]!), `${name}: firing value ${firedValue} in ${domains[0]}`).toBe(true);
  expect(breachesOf(ps[0]!)).toContainEqual({ step: fired, value: firedValue });
  const png = await svgToPng(await specToSvg(spec), 800);
  expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, `${name}.png`), png);
  return ps;
}

/** The value of `metric` at `step` in records fed from step 1. */
const at = (rows: readonly Values[], metric: string, step: number): number => rows[step - 1]![metric]!;

describe("an alert card's chart shows why it fired", () => {
  it('threshold (mode_collapse): the line the fraction crossed, the records above it in red', async () => {
    const rows = [
      ...Array.from({ length: 40 }, (_, i) => ({ frac_zero_std: 0.2 + 0.1 * jitter(i) })),
      ...Array.from({ length: 6 }, (_, i) => ({ frac_zero_std: 0.9 + 0.02 * jitter(i) })),
    ];
    const t = new Trace({ book: presetOnly('mode_collapse') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'mode_collapse');
    const rule = preset<'threshold'>('mode_collapse');
    const ps = await checkEvidence('mode_collapse', chart, fired, at(rows, 'frac_zero_std', fired), [[rule.value!]]);
    // every record above the line is marked, none below it (the chart ends at the record the alert fired on: it was
    // captured then)
    const above = rows
      .slice(0, fired)
      .map((r, i) => ({ step: i + 1, value: r.frac_zero_std }))
      .filter((p) => p.value > rule.value!);
    expect(breachesOf(ps[0]!)).toEqual(above);
  });

  it('threshold (entropy_collapse): a fall under the floor reaches the floor and the firing value', async () => {
    const rows = [
      ...Array.from({ length: 30 }, (_, i) => ({ entropy: 0.3 + 0.05 * jitter(i) })),
      ...Array.from({ length: 6 }, (_, i) => ({ entropy: 0.03 + 0.004 * jitter(i) })),
    ];
    const t = new Trace({ book: presetOnly('entropy_collapse') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'entropy_collapse');
    await checkEvidence('entropy_collapse', chart, fired, at(rows, 'entropy', fired), [
      [preset<'threshold'>('entropy_collapse').value!],
    ]);
  });

  it('threshold on two metrics (no_learning): the loss and the grad norm in two panels, each with its line', async () => {
    const rows = [
      ...Array.from({ length: 30 }, (_, i) => ({ loss: 0.5 + 0.1 * jitter(i), grad_norm: 1 + 0.3 * jitter(i + 5) })),
      ...Array.from({ length: 5 }, () => ({ loss: 0, grad_norm: 0 })),
    ];
    const t = new Trace({ book: presetOnly('no_learning') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'no_learning');
    const rule = preset<'threshold'>('no_learning');
    const gradLine = rule.and.find((c) => c.metric === 'grad_norm')!.value;
    const ps = await checkEvidence('no_learning', chart, fired, 0, [[rule.value!], [gradLine]]);
    // the lower panel is the grad norm's own series, its zeros marked
    expect(fired).toBe(33);
    expect(rawLayer(ps[1]!).data!.values.map((v) => v.value)).toEqual(rows.slice(0, fired).map((r) => r.grad_norm));
    expect(breachesOf(ps[1]!).map((b) => b.step)).toEqual([31, 32, 33]);
  });

  it('relative (grad_explosion): the spike over 10× its rolling median (or the floor), the baseline drawn', async () => {
    const rows = [
      ...Array.from({ length: 80 }, (_, i) => ({ grad_norm: 1.2 + 0.4 * jitter(i) })),
      { grad_norm: 14.7 },
      ...Array.from({ length: 10 }, (_, i) => ({ grad_norm: 1.2 + 0.4 * jitter(i) })),
    ];
    const t = new Trace({ book: presetOnly('grad_explosion') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'grad_explosion');
    expect(fired).toBe(81);
    const rule = preset<'relative'>('grad_explosion');
    const base = median(rows.slice(80 - rule.baselineWindow, 80).map((r) => r.grad_norm!));
    const limit = Math.max(rule.floor!, rule.factor * base);
    const ps = await checkEvidence('grad_explosion', chart, fired, 14.7, [[limit]]);
    const levels = ps[0]!
      .filter((l) => l.mark.type === 'rule' && l.encoding.y?.field === 'level')
      .flatMap((l) => l.data!.values.map((v) => v.level));
    expect(levels).toEqual([base]);
  });

  it('relative with a recovery line: the band between recover × baseline and the limit it must come back through', async () => {
    const rows = [
      ...Array.from({ length: 30 }, (_, i) => ({ length: 100 + 10 * jitter(i) })),
      ...Array.from({ length: 3 }, () => ({ length: 260 })),
    ];
    const book = rulesOf({
      id: 'length_blowup',
      kind: 'relative',
      metric: 'length',
      baseline: 'early',
      baselineWindow: 20,
      op: '>',
      factor: 2,
      recover: 1.5,
    });
    const t = new Trace({ book }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'length_blowup');
    const base = median(rows.slice(0, 20).map((r) => r.length!));
    const ps = await checkEvidence('relative_recover', chart, fired, 260, [[2 * base]]);
    const band = ps[0]!.find((l) => l.mark.type === 'rect' && l.encoding.y2)!.data!.values[0]!;
    expect(band.lo).toBeCloseTo(1.5 * base, 12);
    expect(band.hi).toBeCloseTo(2 * base, 12);
  });

  it('anomaly (pg_clipfrac_spike): the band of median ± z robust σ the spike left', async () => {
    const rows = [
      ...Array.from({ length: 60 }, (_, i) => ({ pg_clipfrac: 0.1 + 0.02 * jitter(i) })),
      { pg_clipfrac: 0.4 },
    ];
    const t = new Trace({ book: presetOnly('pg_clipfrac_spike') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'pg_clipfrac_spike');
    const rule = preset<'anomaly'>('pg_clipfrac_spike');
    const window = rows.slice(fired - 1 - rule.window, fired - 1).map((r) => r.pg_clipfrac!);
    const med = median(window);
    const sigma = 1.4826 * median(window.map((v) => Math.abs(v - med)));
    const ps = await checkEvidence('pg_clipfrac_spike', chart, fired, 0.4, [[med + rule.z * sigma]]);
    const band = ps[0]!.find((l) => l.mark.type === 'rect' && l.encoding.y2)!.data!.values[0]!;
    expect(band.lo).toBeCloseTo(med - rule.z * sigma, 12);
    expect(band.hi).toBeCloseTo(med + rule.z * sigma, 12);
  });

  describe('a fall, then a plateau of a low reward', () => {
    // 120 records at 0.5, past the trend's warm-up of 100, then a fall to 0.2 that stays
    const rows = Array.from({ length: 240 }, (_, i) => ({ reward: (i < 120 ? 0.5 : 0.2) + (i % 3) * 0.001 }));
    const trace = (): Trace => new Trace().feed(rows);
    /** each shaded window's drawn mean is the mean of the records it spans */
    const windowsMatch = (layers: Layer[]): Array<{ from: number; to: number }> => {
      const ws = layers.find((l) => l.mark.type === 'rule' && l.encoding.x2)!.data!.values as Array<{
        from: number;
        to: number;
        mean: number;
      }>;
      for (const w of ws) expect(w.mean).toBeCloseTo(mean(rows.slice(w.from - 1, w.to).map((r) => r.reward)), 12);
      return ws;
    };

    it('trend (reward_trend): the two compared windows shaded, their means drawn, the later one ending at the firing step', async () => {
      const t = trace();
      const { chart, fired } = chartOfAlert(t, 'reward_trend');
      const ps = await checkEvidence('reward_trend', chart, fired, at(rows, 'reward', fired), [[]]);
      const ws = windowsMatch(ps[0]!);
      expect(ws.length).toBe(2);
      expect(ws[1]!.to).toBe(fired);
    });

    it("plateau (reward_plateau): its 'below' line and the two flat windows", async () => {
      const t = trace();
      const { chart, fired } = chartOfAlert(t, 'reward_plateau');
      const rule = preset<'trend'>('reward_plateau');
      const ps = await checkEvidence('reward_plateau', chart, fired, at(rows, 'reward', fired), [[rule.below!]]);
      const ws = windowsMatch(ps[0]!);
      expect(ws.map((w) => w.to - w.from + 1)).toEqual([rule.window, rule.window]);
      expect(ws[1]!.to).toBe(fired);
    });
  });

  it('decline (reward_trend): its best level and the current window, each drawn at the mean of the records it spans', async () => {
    // a level of 0.6 with some noise, then a slow slide of 30% over 250 records: adjacent windows barely differ
    const rows = Array.from({ length: 450 }, (_, i) => ({
      reward: (i < 200 ? 0.6 : 0.6 * (1 - (0.3 * (i - 200)) / 250)) + 0.01 * jitter(i),
    }));
    const t = new Trace({ book: presetOnly('reward_trend') }).feed(rows);
    const details = JSON.parse(t.alert('reward_trend').details) as { best?: { step: number } };
    expect(details.best).toBeDefined(); // fired as a decline from its best level
    const { chart, fired } = chartOfAlert(t, 'reward_trend');
    const rule = preset<'trend'>('reward_trend');
    const ps = await checkEvidence('reward_decline', chart, fired, at(rows, 'reward', fired), [[]]);
    const ws = ps[0]!.find((l) => l.mark.type === 'rule' && l.encoding.x2)!.data!.values as Array<{
      from: number;
      to: number;
      mean: number;
    }>;
    expect(ws.map((w) => w.to - w.from + 1)).toEqual([2 * rule.declineWindow, rule.declineWindow]);
    expect(ws[0]!.to).toBe(details.best!.step);
    expect(ws[1]!.to).toBe(fired);
    for (const w of ws) expect(w.mean).toBeCloseTo(mean(rows.slice(w.from - 1, w.to).map((r) => r.reward)), 12);
    expect(ws[0]!.mean).toBeGreaterThan(ws[1]!.mean);
  });

  it('milestone: the target the mean missed at the epoch, the window it was the mean of', async () => {
    const rows = Array.from({ length: 60 }, (_, i) => ({ epoch: (i + 1) / 100, reward: 0.1 + 0.04 * jitter(i) }));
    const book = rulesOf({
      id: 'reward_by_half',
      kind: 'milestone',
      epoch: 0.5,
      metric: 'reward',
      op: '>',
      value: 0.2,
      window: 10,
    });
    const t = new Trace({ book }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'reward_by_half');
    expect(fired).toBe(50); // the record of epoch 0.5
    const ps = await checkEvidence('milestone', chart, fired, at(rows, 'reward', fired), [[0.2]]);
    const w = ps[0]!.find((l) => l.mark.type === 'rule' && l.encoding.x2)!.data!.values[0]!;
    expect(w).toMatchObject({ from: 41, to: 50 });
    expect(w.mean).toBeCloseTo(mean(rows.slice(40, 50).map((r) => r.reward)), 12);
  });

  it('divergence: the rising component above, the falling one beneath, each with its two windows', async () => {
    const rows = [
      ...Array.from({ length: 40 }, (_, i) => ({
        'rewards/format': 0.3 + 0.01 * jitter(i),
        'rewards/accuracy': 0.5 + 0.01 * jitter(i + 3),
      })),
      ...Array.from({ length: 30 }, (_, i) => ({
        'rewards/format': 0.3 + 0.02 * (i + 1) + 0.01 * jitter(i),
        'rewards/accuracy': 0.5 - 0.012 * (i + 1) + 0.01 * jitter(i + 3),
      })),
    ];
    const book = rulesOf({
      id: 'reward_hacking',
      kind: 'divergence',
      metrics: ['rewards/*'],
      window: 15,
      minDelta: 0.05,
      sigmas: 5,
    });
    const t = new Trace({ book }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'reward_hacking');
    expect(chart.metric).toBe('rewards/format');
    const spec = chartSpecOf(chart);
    const ps = panels(spec);
    expect(ps.length).toBe(2);
    const names = ['rewards/format', 'rewards/accuracy'] as const;
    ps.forEach((layers, k) => {
      const ws = layers.find((l) => l.mark.type === 'rule' && l.encoding.x2)!.data!.values as Array<{
        from: number;
        to: number;
        mean: number;
      }>;
      expect(ws.length).toBe(2);
      expect(ws[1]!.to).toBe(fired);
      for (const w of ws) expect(w.mean).toBeCloseTo(mean(rows.slice(w.from - 1, w.to).map((r) => r[names[k]!]!)), 12);
      expect(rawLayer(layers).mark.strokeWidth).toBe(RAW_WIDTH);
    });
    const domains = await yDomains(spec);
    expect(inside(at(rows, 'rewards/format', fired), domains[0]!)).toBe(true);
    expect(inside(at(rows, 'rewards/accuracy', fired), domains[1]!)).toBe(true);
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, 'divergence.png'), await svgToPng(await specToSvg(spec), 800));
  });

  it('non_finite: the last finite value drawn, and a mark where the series went NaN', async () => {
    const rows: Values[] = [
      ...Array.from({ length: 30 }, (_, i) => ({ loss: 0.6 - i * 0.01 + 0.02 * jitter(i) })),
      { loss: NaN },
    ];
    const t = new Trace({ book: presetOnly('non_finite') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'non_finite');
    expect(fired).toBe(31);
    const last = rows[29]!.loss!;
    const ps = await checkEvidence('non_finite', chart, fired, last, [[]]);
    const levels = ps[0]!
      .filter((l) => l.mark.type === 'rule' && l.encoding.y?.field === 'level')
      .flatMap((l) => l.data!.values);
    expect(levels.map((v) => v.level)).toEqual([last]);
    expect(levels[0]!.label).toContain('last finite');
  });

  it('saturation: the highest value it sits at, and its spread at 0 beneath', async () => {
    const rows = [
      ...Array.from({ length: 30 }, (_, i) => ({
        'rewards/format': 0.4 + 0.02 * i,
        'rewards/format/std': 0.2 + 0.05 * jitter(i),
      })),
      ...Array.from({ length: 5 }, () => ({ 'rewards/format': 1.0, 'rewards/format/std': 0 })),
    ];
    const t = new Trace({ book: presetOnly('reward_saturated') }).feed(rows);
    const { chart, fired } = chartOfAlert(t, 'reward_saturated');
    const max = Math.max(...rows.map((r) => r['rewards/format']!));
    await checkEvidence('reward_saturated', chart, fired, max, [[max], [0]]);
  });
});
