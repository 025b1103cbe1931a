import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCompare } from '../../src/commands/runCompare.ts';
import { COMMANDS, parseText } from '../../src/interact/registry.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import type { Comparison } from '../../src/report/compare.ts';
import { lineChartSpec, renderLineChart, chartRows, PNG_SIGNATURE } from '../../src/render/chart.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { tempDir } from '../helpers.ts';

/** A learning.log (the OCaml GRPO trainer's) of `n` lines: reward and frac_zero_std as functions of the line number. */
function learningLog(n: number, perEpoch: number, reward: (i: number) => number, frac: (i: number) => number): string {
  return (
    Array.from({ length: n }, (_, k) => {
      const i = k + 1;
      const r = reward(i).toFixed(3);
      return `[Epoch ${(i / perEpoch).toFixed(2)}]  loss=-0.01  grad=0.05  lr=1e-06  reward=${r}±0.05  entropy=0.15  frac_zero_std=${frac(i).toFixed(2)}`;
    }).join('\n') + '\n'
  );
}

async function store(runs: Record<string, string>): Promise<Store> {
  const root = tempDir();
  for (const [name, text] of Object.entries(runs)) {
    mkdirSync(join(root, name));
    writeFileSync(join(root, name, name.endsWith('jsonl') ? 'metrics.jsonl' : 'learning.log'), text);
  }
  const { store: s, ingestor } = pipeline({ ingest: ConfigSchema.parse({}).ingest });
  await backfill(ingestor, [root], { depth: 4 });
  return s;
}

const meanOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('run compare', () => {
  it('aligns by epoch (runs of other batch sizes), compares where both got to, and says who is ahead', async () => {
    // fast: 100 records per epoch, 60 records (epoch 0.6); slow: 50 per epoch, 40 records (epoch 0.8)
    const fast = (i: number) => 0.1 + 0.004 * i;
    const slow = (i: number) => 0.1 + 0.002 * i;
    const s = await store({
      fast: learningLog(60, 100, fast, (i) => (i % 4 === 0 ? 0.25 : 0)),
      slow: learningLog(40, 50, slow, () => 0.5),
    });
    const reply = await runCompare({ store: new SqliteAsyncStore(s) }, { a: 'fast', b: 'slow' });
    const c = reply.data as Comparison;
    expect(c.by).toBe('epoch');
    // both reached epoch 0.6: fast's last 10 records to 0.6 are i = 51..60; slow's to 0.6 are i = 21..30
    const reward = c.metrics.find((m) => m.metric === 'reward')!;
    expect(reward.at).toBe(0.6);
    const r3 = (v: number) => Number(v.toFixed(3));
    expect(reward.a).toBeCloseTo(meanOf(Array.from({ length: 10 }, (_, k) => r3(fast(51 + k)))), 12);
    expect(reward.b).toBeCloseTo(meanOf(Array.from({ length: 10 }, (_, k) => r3(slow(21 + k)))), 12);
    expect(reward.ahead).toBe('a');
    expect(c.metrics.find((m) => m.metric === 'frac_zero_std')?.ahead).toBe('a'); // lower is better
    expect(c.metrics.find((m) => m.metric === 'entropy')).toMatchObject({ ahead: 'even' });
    expect(reply.lines).toContain(
      `reward: fast ahead (fast ${Number(reward.a.toPrecision(4))}, slow ${Number(reward.b.toPrecision(4))} at epoch 0.6; higher is better)`,
    );
    expect(reply.lines.find((l) => l.startsWith('entropy'))).toMatch(/no better side/);
    // the chart: both runs over epochs
    expect(reply.chart).toMatchObject({
      metric: 'reward',
      xTitle: 'epoch',
      title: 'reward: fast (blue) vs slow (orange)',
    });
    expect(reply.chart!.points).toHaveLength(60);
    expect(reply.chart!.second!.points).toHaveLength(40);
    const png = await renderLineChart(reply.chart!);
    expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    s.close();
  });

  it('the chart spec draws the second series as its own line', () => {
    const rows = chartRows(
      [
        { step: 1, value: 1 },
        { step: 2, value: 2 },
      ],
      100,
    );
    const rows2 = chartRows(
      [
        { step: 1, value: 3 },
        { step: 2, value: 5 },
      ],
      100,
    );
    const spec = lineChartSpec({
      title: 't',
      metric: 'm',
      rows,
      rows2,
      width: 400,
      height: 200,
      xTitle: 'epoch',
    }) as unknown as {
      layer: Array<{ data: { values: unknown[] }; mark: { type: string; color: string } }>;
    };
    const lines = spec.layer.filter((l) => l.mark.type === 'line');
    expect(lines.map((l) => l.data.values)).toEqual([rows, rows2]);
    expect(new Set(lines.map((l) => l.mark.color)).size).toBe(2);
  });

  it('aligns by step when a run logs no epoch; refuses the same run twice and a metric only one logs', async () => {
    const jsonl = Array.from({ length: 20 }, (_, k) => JSON.stringify({ step: k + 1, reward: 0.5 })).join('\n') + '\n';
    const s = await store({
      a: learningLog(
        30,
        100,
        () => 0.2,
        () => 0,
      ),
      'b-jsonl': jsonl,
    });
    const db = new SqliteAsyncStore(s);
    const c = (await runCompare({ store: db }, { a: 'a', b: 'b-jsonl' })).data as Comparison;
    expect(c.by).toBe('step');
    expect(c.metrics.map((m) => m.metric)).toEqual(['reward']);
    expect(c.metrics[0]).toMatchObject({ at: 20, b: 0.5, ahead: 'b' });
    expect(c.metrics[0]!.a).toBeCloseTo(0.2, 12);
    await expect(runCompare({ store: db }, { a: 'a', b: 'a' })).rejects.toThrow(/two different runs/);
    await expect(runCompare({ store: db }, { a: 'a', b: 'b-jsonl', metric: 'entropy' })).rejects.toThrow(
      /do not both log 'entropy'/,
    );
    s.close();
  });

  it('reads `/run compare A B metric` as chat sends it', () => {
    const spec = COMMANDS.find((c) => c.path.join(' ') === 'run compare')!;
    const known = { runs: ['x', 'y'], metrics: ['reward'] };
    expect(parseText(spec, ['x', 'y', 'reward'], known)).toEqual({ a: 'x', b: 'y', metric: 'reward' });
    expect(() => parseText(spec, ['x'], known)).toThrow(/b is required/);
  });
});
