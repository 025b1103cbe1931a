/**
 * The report, the run list and the scheduled reports tell one story: the verdict follows what became of the job,
 * and a report made for a step describes that step, on real files read by the real pipeline (ingest, store, engine).
 */
import { appendFileSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { reportOf } from '../../src/commands/runReport.ts';
import { runList } from '../../src/commands/runList.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Ingestor } from '../../src/ingest/ingestor.ts';
import { summaryLines } from '../../src/report/markdown.ts';
import { ReportSchedule } from '../../src/report/schedule.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { ensureParent } from '../helpers.ts';
import { Trace, presetOnly } from '../engine/trace.ts';

const T0 = Date.UTC(2025, 0, 1, 3, 0, 0);

describe('a run that crashed', () => {
  let root: string;
  let store: Store;
  let ingestor: Ingestor;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    ({
      dir: root,
      store,
      ingestor,
    } = pipeline({
      ingest: { maxLineBytes: 1 << 20, examplesPerStep: 2 },
      engine: { repeatIntervalMs: 3_600_000, targets: ['console'], caughtUp: true },
    }));
  });
  afterEach(() => {
    store.close();
    vi.useRealTimers();
  });

  // TRL's logged dicts, 50 per epoch, a reward rising from 0.31 (met at epoch 1.0: > 0.35, and >= 0.15 to go on)
  const dict = (i: number): string =>
    `{'loss': 0.01, 'grad_norm': 0.5, 'learning_rate': 9.8e-07, 'reward': ${(0.3 + i / 100).toFixed(2)}, 'reward_std': 0.31, ` +
    `'frac_reward_zero_std': 0.05, 'entropy': 0.61, 'epoch': ${(i / 50).toFixed(2)}}`;
  const OOM = [
    'Traceback (most recent call last):',
    '  File "/workspace/open-r1/src/open_r1/grpo.py", line 286, in <module>',
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity of 79.25 GiB of which 3.1 GiB is free.',
  ];

  it('is never told to continue: its verdict says it ended and why, and `runs` shows its health and its critical', async () => {
    const log = ensureParent(join(root, 'runs', 'grpo-demo', 'train.log'));
    appendFileSync(log, `${Array.from({ length: 55 }, (_, i) => dict(i + 1)).join('\n')}\n${OOM.join('\n')}\n`);
    utimesSync(log, new Date(), new Date());
    await ingestor.ingest(log, join(root, 'runs'));
    const crash = store.alerts.list({ all: true }).find((a) => a.rule === 'run_crashed');
    expect(crash?.state).toBe('firing');

    const db = new SqliteAsyncStore(store);
    const report = await reportOf({ store: db }, { run: 'grpo-demo' }, T0);
    // the stop criteria at epoch 1.0 are met (reward 0.8, frac 0.05): only the crash keeps it from going on
    expect(report.milestones.filter((m) => m.stop).map((m) => m.state)).toEqual(['met', 'met']);
    expect(report.status).toMatchObject({
      level: 'struggling',
      decidedBy: expect.stringContaining(`run_crashed firing (#${crash!.id})`),
    });
    expect(report.stop).toEqual({
      verdict: 'ended',
      why: [`the run crashed: run_crashed firing (#${crash!.id}): ${crash!.summary}`],
    });
    const lines = summaryLines(report);
    expect(lines.at(-1)).toBe(
      `verdict: ended (the run crashed: run_crashed firing (#${crash!.id}): ${crash!.summary})`,
    );
    expect(lines.join('\n')).not.toContain('continue');

    const runs = await runList({ store: db }, T0);
    expect(runs.lines[0]).toMatch(/^grpo-demo · 🔴 firing: 1 critical · steps /);
    expect(runs.data).toMatchObject([{ name: 'grpo-demo', critical: 1, warning: 0 }]);
  });
});

describe('a milestone report', () => {
  /** `n` records from epoch `from`, 100 per epoch */
  const records = (n: number, from: number, frac: number) =>
    Array.from({ length: n }, (_, i) => ({
      epoch: from + (i + 1) / 100,
      reward: 0.3,
      reward_std: 0.02,
      frac_zero_std: frac,
    }));

  it('describes the run at the step that reached its epoch, not what happened after it', async () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    const config = ConfigSchema.parse({});
    const store = new SqliteAsyncStore(t.store);
    const schedule = new ReportSchedule(
      store,
      config,
      () => ['console'],
      () => t.now,
    );
    t.feed(records(50, 0, 0.05)); // epochs 0.01-0.50: step 50 reaches 0.5
    t.feed(records(30, 0.5, 0.95)); // then every group the same: mode_collapse fires past epoch 0.5
    const collapse = t.alert('mode_collapse');
    expect(collapse.fired_step).toBeGreaterThan(50);
    expect(await schedule.tick()).toBe(1);

    const sent = t.outbox('console').find((r) => r.notification.report)!.notification.report!;
    expect(sent.title.startsWith('r1 reached epoch 0.5: ')).toBe(true);
    expect(sent.lines[1]).toBe('step 50, epoch 0.5');
    expect(sent.lines.join('\n')).not.toContain('mode_collapse');
    // the report of now, by contrast, has the collapse
    expect(summaryLines(await reportOf({ store }, { run: 'r1' }, t.now)).join('\n')).toContain('mode_collapse');
  });
});
