import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { PNG_SIGNATURE, renderLineChart, type LineChartOptions } from '../../src/render/chart.ts';
import { chartThreadReady, renderOffThread } from '../../src/render/chartThread.ts';
import { warmCardCharts } from '../../src/render/chartOnce.ts';
import { findDejaVu } from '../../src/render/fonts.ts';
import { tempDir } from '../helpers.ts';
import { cases, type Case } from './chartCases.ts';

const optionsOf = (c: Case): LineChartOptions => ({
  title: c.title,
  metric: c.metric,
  points: c.points,
  ...(c.markStep === undefined ? {} : { markStep: c.markStep }),
  ...(c.threshold === undefined ? {} : { threshold: c.threshold }),
  ...(c.second ? { second: { points: c.second } } : {}),
  ...(c.xTitle ? { xTitle: c.xTitle } : {}),
  ...(c.width ? { width: c.width, height: c.height } : {}),
});

/** The share of the wall time this thread's event loop was busy while `work` ran. */
async function busyShare(work: () => Promise<unknown>): Promise<number> {
  const before = performance.eventLoopUtilization();
  await work();
  return performance.eventLoopUtilization(before).utilization;
}

describe('charts drawn on the chart thread', () => {
  it('are the PNG bytes the same chart drawn here is, several at once', async () => {
    await chartThreadReady();
    const some = cases.filter((c) => /a card|second series|no data$|untrusted|beyond ASCII|another size/.test(c.name));
    const offThread = await Promise.all(some.map((c) => renderOffThread(optionsOf(c))));
    for (const [i, c] of some.entries()) {
      expect(offThread[i]!.subarray(0, 8).equals(PNG_SIGNATURE), c.name).toBe(true);
      expect(offThread[i]!.equals(await renderLineChart(optionsOf(c))), c.name).toBe(true);
    }
  });

  it("leave this thread's event loop mostly idle while they are drawn", async () => {
    const card = optionsOf(cases[0]!);
    await chartThreadReady();
    await renderOffThread(card);
    await renderLineChart(card); // both warm
    const here = await busyShare(async () => {
      for (let i = 0; i < 8; i++) await renderLineChart({ ...card, threshold: 10 + i });
    });
    const there = await busyShare(async () => {
      for (let i = 0; i < 8; i++) await renderOffThread({ ...card, threshold: 10 + i });
    });
    expect(there).toBeLessThan(here / 2);
  });

  it('draw one at a time, the most urgent waiting first, equal ones in the order they came', async () => {
    await chartThreadReady();
    const card = optionsOf(cases[0]!);
    const done: string[] = [];
    const draw = (name: string, urgency: number, i: number) =>
      renderOffThread({ ...card, threshold: 20 + i }, urgency).then(() => done.push(name));
    // posted together: the thread takes the first at once; the others wait, and the critical one is next
    await Promise.all([
      draw('warning 1', 1, 1),
      draw('info', 0, 2),
      draw('warning 2', 1, 3),
      draw('critical', 2, 4),
      draw('warning 3', 1, 5),
    ]);
    expect(done.indexOf('critical')).toBeLessThanOrEqual(1);
    expect(done.filter((n) => n !== 'critical')).toEqual(['warning 1', 'warning 2', 'warning 3', 'info']);
  });

  it("free each chart's native memory while more wait: 150 charts drawn back to back hold no more than a few", () => {
    // resvg holds ~1.7 MB per chart (its font data and image) until a finalizer runs from the thread's event loop
    const code = `
      import { chartThreadReady, renderOffThread } from './src/render/chartThread.ts';
      const points = Array.from({ length: 200 }, (_, k) => ({ step: k + 1, value: Math.sin(k / 9) }));
      await chartThreadReady();
      const one = (i) => renderOffThread({ title: 't', metric: 'm', points, markStep: 150, threshold: i }, 1);
      await one(-1);
      const base = process.memoryUsage().rss;
      let next = 0;
      // 16 waiting at all times: the thread never finds its queue empty
      const lane = async () => { while (next < 150) await one(next++); };
      await Promise.all(Array.from({ length: 16 }, lane));
      console.log(Math.round((process.memoryUsage().rss - base) / 2 ** 20));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(child.stderr).toBe('');
    // all 150 held: 250 MB and more; freed as drawn: the thread's heap and a few charts' worth
    expect(Number(child.stdout.trim())).toBeLessThan(130);
  });

  it('are warmed up behind any real chart: a card posted meanwhile is drawn before the warm-up ends', async () => {
    const done: string[] = [];
    const warm = warmCardCharts().then(() => done.push('warm-up'));
    await chartThreadReady(); // resolved after the warm-up's own wait: its charts are posted first
    const card = renderOffThread({ ...optionsOf(cases[0]!), threshold: 42 }, 0).then(() => done.push('card'));
    await Promise.all([warm, card]);
    expect(done).toEqual(['card', 'warm-up']);
  });

  it('reject options that cannot be handed to the thread, and draw the next chart', async () => {
    await chartThreadReady();
    const bad = { ...optionsOf(cases[0]!), title: (() => 't') as unknown as string };
    await expect(renderOffThread(bad)).rejects.toThrow(/could not be cloned/);
    expect((await renderOffThread(optionsOf(cases[2]!))).subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  });

  it('draw here until the thread is ready, hold the process open while a chart is drawn, not once idle', () => {
    const code = `
      import { chartThreadReady, renderOffThread } from './src/render/chartThread.ts';
      const opts = { title: 't', metric: 'm', points: [{ step: 1, value: 2 }, { step: 2, value: 3 }] };
      const here = await renderOffThread(opts);
      await chartThreadReady();
      renderOffThread(opts).then((png) => console.log('drawn', png.equals(here)));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toBe('');
    expect(child.stdout.trim()).toBe('drawn true');
    expect(child.status).toBe(0); // exited by itself: the idle thread did not keep it
  });

  const withDejaVu = it.skipIf(findDejaVu() === null);
  withDejaVu('cut the fonts into an empty cache before the first chart, and draw the same bytes', () => {
    const cache = tempDir();
    const code = `
      import { chartThreadReady, renderOffThread } from './src/render/chartThread.ts';
      import { renderLineChart } from './src/render/chart.ts';
      const points = [{ step: 1, value: 2 }, { step: 2, value: 3 }];
      const opts = { title: 'reward · run 7', metric: 'reward', points };
      await chartThreadReady();
      const drawn = await renderOffThread(opts);
      console.log('same', drawn.equals(await renderLineChart(opts)));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, XDG_CACHE_HOME: cache },
    });
    expect(child.stderr).toBe('');
    expect(child.stdout.trim()).toBe('same true');
    const fonts = join(cache, 'rlwatch', 'fonts');
    const [folder] = readdirSync(fonts);
    expect(readdirSync(join(fonts, folder!)).sort()).toEqual(['DejaVuSans-Bold.ttf', 'DejaVuSans.ttf']);
  });
});
