import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rewardHistory } from '../../src/commands/rewardHistory.ts';
import { formatValue } from '../../src/lib/numbers.ts';
import { sparkline } from '../../src/render/sparkline.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';
import { rlwatch } from '../integration/cli.ts';
import { series, write } from '../store/digestSeries.ts';

describe('reward history of a long series', () => {
  it('shows the overview, extremes and newest rows of every point, in the CLI and in chat alike', async () => {
    const path = join(tempDir(), 'h.db');
    const s = series(
      Array.from({ length: 6000 }, (_, i) => i + 1),
      4500,
    );
    write(path, s);
    // straight from the points written: the mean of each sixtieth of the finite values, the finite extremes
    const means = Array.from({ length: 60 }, (_, c) => {
      const xs = s.values.slice(Math.floor((c * 6000) / 60), Math.floor(((c + 1) * 6000) / 60)).filter(Number.isFinite);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    });
    const finite = s.values.filter(Number.isFinite);
    const rows = s.steps
      .slice(-10)
      .map((step, k) => `step ${String(step).padStart(6)}  epoch    -  ${formatValue(s.values[5990 + k]!)}`);
    const lines = [
      sparkline(means, 60),
      `min ${formatValue(Math.min(...finite))}  max ${formatValue(Math.max(...finite))}  last ${formatValue(s.values[5999]!)}`,
    ];
    expect(lines[1]).toBe(`min -4.25  max 9.5  last ${formatValue(s.values[5999]!)}`);

    // the one-shot CLI (SQLite sums the series up) and a long-lived store (the series kept in memory)
    const cli = rlwatch(['reward', 'history', 'r', '--db', path]);
    expect(cli.stderr).toBe('');
    const table = ['  the last 10 points', ...rows.map((r) => `    ${r}`)];
    expect(cli.stdout).toBe(
      `reward of r: 6000 points, steps 1..6000\n${[...lines.map((l) => `  ${l}`), ...table].join('\n')}\n`,
    );
    const kept = Store.open(path);
    const reply = await rewardHistory({ store: new SqliteAsyncStore(kept) }, { run: 'r' });
    expect(reply.lines).toEqual(lines);
    // the aligned table is a code block (fixed-width in chat), never lines a proportional font collapses
    expect(reply.blocks).toEqual([{ title: 'the last 10 points', code: rows.join('\n') }]);
    expect(reply.chart!.points).toContainEqual({ step: 4500, value: 9.5 });
    expect(reply.chart!.points.length).toBeLessThanOrEqual(1200);
    for (const p of reply.chart!.points) expect(s.values[p.step - 1]).toBe(p.value);
    kept.close();

    // --json still lists every point of the window
    const json = JSON.parse(rlwatch(['reward', 'history', 'r', '--last', '4000', '--json', '--db', path]).stdout);
    expect(json.points).toHaveLength(4000);
    expect(json.points[0]).toEqual({ step: 2001, epoch: null, value: 0.9 });
  });
});
