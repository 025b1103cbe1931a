/**
 * The registry of rule kinds: every kind the rule schema accepts has an evaluator, and a config rule of each kind,
 * alone in its rule book, fires through it on a real SQLite store from the fewest records that make it fire.
 */
import { describe, expect, it } from 'vitest';
import { evaluatorOf } from '../../src/engine/kinds.ts';
import { RuleSchema, type Rule } from '../../src/engine/rules.ts';
import type { EventRecord } from '../../src/ingest/records.ts';
import type { AlertRow } from '../../src/store/alerts.ts';
import { MIN, Trace, rulesOf, series, times } from './trace.ts';

type Kind = Rule['kind'];

/** The kinds as the schema lists them (its discriminated union's options), not as the registry does. */
const schemaKinds = (): string[] => RuleSchema._zod.def.options.flatMap((o) => o._zod.def.shape.kind._zod.def.values);

/** Commits what the logs said about the run (no records) and evaluates, as the ingestor's batch would. */
function said(t: Trace, events: Array<EventRecord & { step: number }>): void {
  t.store.commit(
    {
      runId: t.run.id,
      fileId: t.file.id,
      metrics: [],
      examples: [],
      events,
      skips: new Map(),
      progress: { dev: 1, ino: 1, offset: 0, size: 0, mtimeMs: t.now, seq: 0, lines: events.length, records: 0 },
    },
    2,
  );
  t.engine.evaluate(t.run.id);
}

interface Case {
  /** the config entry, less its id */
  rule: Record<string, unknown>;
  /** the records (and events, ticks) that make it fire */
  drive(t: Trace): void;
  /** the alert it leaves, worked out from those records */
  alert: Partial<AlertRow>;
}

// a Record over the kinds: a kind added to the schema without a case here does not compile either
const CASES: Record<Kind, Case> = {
  threshold: {
    rule: { metric: 'loss', op: '>', value: 1, for: 2 },
    drive: (t) => t.feed(series('loss', [0.5, 2, 3])), // over 1 at steps 2 and 3
    alert: { metric: 'loss', started_step: 2, fired_step: 3, severity: 'warning', summary: 'loss 3 > 1 for 2 steps' },
  },
  trend: {
    rule: { metrics: ['reward'], window: 20, sigmas: 0 },
    // the two 20-record windows are whole at step 40: 0.5 then 0.4, a fall of 20% of the level
    drive: (t) => t.feed(series('reward', [...Array(20).fill(0.5), ...Array(20).fill(0.4)])),
    alert: {
      metric: 'reward',
      fired_step: 40,
      severity: 'warning',
      summary: 'reward ↘ -20.0% (0.5 → 0.4) over 20-step windows',
    },
  },
  stall: {
    rule: { after: '10m' },
    drive: (t) => {
      t.feed(times(3, { reward: 0.3 })); // read at 03:00 UTC, live
      t.advance(11 * MIN).tick();
    },
    alert: {
      metric: 'activity',
      fired_step: 3,
      severity: 'warning',
      summary: 'no new record for 11m (last at step 3, 03:00:00 UTC): crashed or hung?',
    },
  },
  milestone: {
    rule: { epoch: 1, metric: 'reward', op: '>=', value: 0.5, window: 2 },
    // epoch 1 is reached at step 2, where the mean of the last 2 rewards is 0.1
    drive: (t) =>
      t.feed([
        { epoch: 0.5, reward: 0 },
        { epoch: 1, reward: 0.2 },
      ]),
    alert: {
      metric: 'reward',
      fired_step: 2,
      severity: 'warning',
      summary: 'reward 0.1 at epoch 1: expected >= 0.5 by epoch 1 (mean of last 2)',
    },
  },
  non_finite: {
    rule: { metrics: ['loss'] },
    drive: (t) => t.feed(series('loss', [0.5, 0.4, NaN])),
    alert: {
      metric: 'loss',
      fired_step: 3,
      severity: 'warning',
      summary: 'loss is nan at step 3 (last finite 0.4 at step 2)',
    },
  },
  crash: {
    rule: {},
    drive: (t) => {
      t.feed(times(3, { loss: 0.5 }));
      said(t, [
        {
          kind: 'error',
          step: 3,
          title: 'CUDA out of memory',
          text: 'torch.OutOfMemoryError: CUDA out of memory.',
          fatal: true,
          context: [],
        },
      ]);
    },
    alert: { metric: 'log:crash', fired_step: 3, severity: 'warning', summary: 'CUDA out of memory' },
  },
  finished: {
    rule: {},
    drive: (t) => {
      t.feed(series('reward', [0.2, 0.5, 0.4]));
      said(t, [
        {
          kind: 'finished',
          step: 3,
          title: 'training finished',
          text: "{'train_runtime': 100}",
          values: { train_runtime: 100 },
        },
      ]);
    },
    // 100 s of runtime; the last reward 0.4, the best 0.5 at step 2
    alert: {
      metric: 'reward',
      fired_step: 3,
      severity: 'warning',
      summary: 'training finished at step 3 in 1m 40s; reward 0.4 (best 0.5 at step 2)',
    },
  },
  restart: {
    rule: {},
    drive: (t) => {
      t.feed(times(5, { loss: 0.5 })); // attempt 1: steps 1..5
      t.advance(5 * MIN)
        .resumeAt(2)
        .feed(times(1, { loss: 0.5 }));
    },
    alert: {
      metric: 'attempt',
      fired_step: 2,
      severity: 'warning',
      summary: 'the job restarted at step 2 (attempt 2; attempt 1 ended at step 5)',
    },
  },
  trainer_warning: {
    rule: {},
    drive: (t) => {
      t.feed(times(2, { loss: 0.5 }));
      said(t, [
        {
          kind: 'warning',
          step: 2,
          title: 'KL divergence is negative',
          text: 'UserWarning: KL divergence is starting to become negative: -0.02',
        },
      ]);
    },
    alert: {
      metric: 'log:warning:KL divergence is negative',
      fired_step: 2,
      severity: 'warning',
      summary: 'KL divergence is negative',
    },
  },
  relative: {
    rule: { metric: 'completion_length', baselineWindow: 3, op: '<', factor: 0.5 },
    // the early median 200; 50 is under its half, a quarter of it
    drive: (t) => t.feed(series('completion_length', [200, 200, 200, 50])),
    alert: {
      metric: 'completion_length',
      fired_step: 4,
      severity: 'warning',
      summary: 'completion_length 50 < 0.5× its early median 200 (0.25×) for 1 step',
    },
  },
  anomaly: {
    rule: { metric: 'loss', window: 5, warmup: 5, z: 6 },
    // the 5 before 11: median 1, and (the MAD being 0) the first non-zero deviation 1 as the scale: z = 10 / 1.4826
    drive: (t) => t.feed(series('loss', [1, 1, 1, 1, 2, 11])),
    alert: {
      metric: 'loss',
      fired_step: 6,
      severity: 'warning',
      summary: 'loss 11: robust z +6.7 against the median 1 of the last 5',
    },
  },
  divergence: {
    rule: { metrics: ['rewards/format', 'rewards/accuracy'], window: 2, sigmas: 0 },
    // at step 4 the windows (steps 1-2 against 3-4): format 0.2 → 0.8, accuracy 0.6 → 0.1
    drive: (t) =>
      t.feed(
        [0.2, 0.2, 0.8, 0.8].map((f, i) => ({ 'rewards/format': f, 'rewards/accuracy': [0.6, 0.6, 0.1, 0.1][i]! })),
      ),
    alert: {
      metric: 'rewards/format rewards/accuracy',
      fired_step: 4,
      severity: 'warning',
      summary:
        "rewards/format ↗ 0.2 → 0.8 while rewards/accuracy ↘ 0.6 → 0.1 over 2-step windows: one reward rising at another's expense (reward hacking?)",
    },
  },
  saturation: {
    rule: { metrics: ['rewards/format'], for: 2 },
    // at its max 1 with std 0 from step 2
    drive: (t) =>
      t.feed([
        { 'rewards/format': 0.5, 'rewards/format/std': 0.2 },
        { 'rewards/format': 1, 'rewards/format/std': 0 },
        { 'rewards/format': 1, 'rewards/format/std': 0 },
      ]),
    alert: {
      metric: 'rewards/format',
      started_step: 2,
      fired_step: 3,
      severity: 'warning',
      summary: 'rewards/format saturated at its max 1 with std 0 for 2 steps: no signal left',
    },
  },
};

describe('the registry of rule kinds', () => {
  it('has an evaluator, on a batch or on the tick, for every kind of the rule schema', () => {
    const kinds = schemaKinds();
    expect(kinds).toHaveLength(13);
    for (const kind of kinds) {
      const e = evaluatorOf(kind as Kind);
      expect(typeof (e.evaluate ?? e.tick), kind).toBe('function');
    }
    expect(Object.keys(CASES).sort()).toEqual([...kinds].sort());
  });

  it.each(schemaKinds())('a config rule of kind %s fires through it', (kind) => {
    const c = CASES[kind as Kind];
    const t = new Trace({ book: rulesOf({ id: `my_${kind}`, kind, ...c.rule }) });
    c.drive(t);
    expect(t.alerts()).toHaveLength(1);
    expect(t.alert(`my_${kind}`)).toMatchObject({ state: 'firing', ...c.alert });
  });
});
