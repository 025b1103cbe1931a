import { describe, expect, it } from 'vitest';
import { HOUR, MIN, Trace, presetOnly, times } from './trace.ts';

const healthy = { frac_zero_std: 0.1 };
const collapsed = { frac_zero_std: 1 };
const summaries = (t: Trace): string[] =>
  t.outbox().flatMap((r) => r.notification.items.map((i) => `${i.kind} ${i.rule}@${i.step}: ${i.summary}`));

describe('a restarted job (steps logged again from an earlier step)', () => {
  it('restarted from step 0, a collapse in attempt 2 fires and says which attempt', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(50, healthy));
    t.advance(5 * MIN)
      .resumeAt(0)
      .feed([...times(20, healthy), ...times(5, collapsed)]);
    expect(t.store.attempts.list(t.run.id).map((a) => [a.attempt, a.resumed_step])).toEqual([
      [1, 1],
      [2, 0],
    ]);
    // steps 0..19 healthy, 20..24 collapsed: fires at the third collapsed record
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', started_step: 20, fired_step: 22 });
    expect(summaries(t)).toEqual([
      'firing mode_collapse@22: frac_zero_std 1 > 0.8 for 3 steps (attempt 2, resumed at step 0)',
    ]);
    // the newest attempt's values win; what attempt 1 logged past it is kept until logged again
    expect(t.store.points.upTo(t.run.id, 'frac_zero_std', 24, 1)[0]).toEqual({ step: 24, value: 1 });
    expect(t.store.points.upTo(t.run.id, 'frac_zero_std', 30, 1)[0]).toEqual({ step: 30, value: 0.1 });
  });

  it('resumed at step 40 of 100 after a crash: the old incident ends, the new one fires', () => {
    const t = new Trace({ book: presetOnly('mode_collapse'), repeatIntervalMs: HOUR });
    t.feed([...times(96, healthy), ...times(4, collapsed)]); // attempt 1 collapses at 98, then dies at 100
    t.advance(5 * MIN)
      .resumeAt(40)
      .feed(times(10, healthy));
    expect(t.states()).toEqual(['mode_collapse resolved']);
    const ended = JSON.parse(t.alerts()[0]!.details).resolved.summary;
    expect(ended).toBe('attempt 1 ended at step 100: the job restarted at step 40');
    t.feed(times(3, collapsed)); // steps 50..52
    expect(t.states()).toEqual(['mode_collapse resolved', 'mode_collapse firing']);
    expect(t.alerts()[1]).toMatchObject({ started_step: 50, fired_step: 52 });
    expect(summaries(t)).toEqual([
      'firing mode_collapse@99: frac_zero_std 1 > 0.8 for 3 steps',
      'resolved mode_collapse@100: attempt 1 ended at step 100: the job restarted at step 40',
      'firing mode_collapse@52: frac_zero_std 1 > 0.8 for 3 steps (attempt 2, resumed at step 40)',
    ]);
  });

  it('a restart from a checkpoint is announced once, as info; the next restart ends that card', () => {
    const t = new Trace({ book: presetOnly('mode_collapse', 'run_restarted'), repeatIntervalMs: HOUR });
    t.feed(times(100, healthy));
    expect(summaries(t)).toEqual([]);
    t.advance(5 * MIN)
      .resumeAt(40)
      .feed(times(10, healthy)); // attempt 2: steps 40..49
    expect(t.alert('run_restarted')).toMatchObject({ severity: 'info', state: 'firing', fired_step: 40 });
    t.advance(2 * HOUR).feed(times(5, healthy)); // no repeat of news
    t.advance(5 * MIN)
      .resumeAt(50)
      .feed(times(3, healthy)); // attempt 3 from step 50
    expect(summaries(t)).toEqual([
      'firing run_restarted@40: the job restarted at step 40 (attempt 2; attempt 1 ended at step 100)',
      'resolved run_restarted@54: attempt 2 ended at step 54: the job restarted at step 50',
      'firing run_restarted@50: the job restarted at step 50 (attempt 3; attempt 2 ended at step 54)',
    ]);
  });

  it("steps an earlier attempt logged past the resume point are not evaluated as the new attempt's", () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed([...times(60, healthy), ...times(40, collapsed)]); // collapsed 61..100
    t.resumeAt(40).feed(times(5, healthy)); // 40..44: attempt 1's collapsed 61..100 must not re-fire
    expect(t.states()).toEqual(['mode_collapse resolved']);
    t.feed(times(60, healthy)); // 45..104: past attempt 1's last step, values of attempt 2 only
    expect(t.states()).toEqual(['mode_collapse resolved']);
  });

  it('a restart inside one batch (a backfill of both attempts) is evaluated too', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.commit(times(30, healthy));
    t.resumeAt(10).commit([...times(5, healthy), ...times(3, collapsed)]);
    t.engine.evaluate(t.run.id, false);
    expect(t.store.attempts.list(t.run.id).map((a) => a.resumed_step)).toEqual([1, 10]);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', fired_step: 17 });
  });

  it('a second file of the same job going back joins the attempt; a lagging file of another format is no restart', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    const jsonl = t.store.files.add(t.run.id, '/x/r1/batch_metrics.jsonl', 'batchMetrics');
    const logs = (fileId: number, steps: number[]) =>
      t.store.commit(
        {
          runId: t.run.id,
          fileId,
          metrics: steps.map((step) => ({ step, values: new Map([['pass_at_1', 0.5]]) })),
          examples: [],
          skips: new Map(),
          progress: {
            dev: 2,
            ino: 2,
            offset: 0,
            size: 0,
            mtimeMs: t.now,
            seq: 0,
            lines: steps.length,
            records: steps.length,
          },
        },
        2,
      );
    t.feed(times(20, healthy));
    logs(jsonl.id, [1, 2, 3, 4, 5]); // written behind learning.log: same attempt
    expect(t.store.attempts.list(t.run.id)).toHaveLength(1);
    t.resumeAt(1).feed(times(3, healthy)); // learning.log goes back: attempt 2
    logs(jsonl.id, [1, 2]); // batch_metrics.jsonl goes back too: still attempt 2
    expect(t.store.attempts.list(t.run.id).map((a) => a.attempt)).toEqual([1, 2]);
    t.feed(times(3, collapsed));
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', fired_step: 6 });
  });

  it('a document read again whole (trainer_state.json) is no restart', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    const doc = t.store.files.add(t.run.id, '/x/r1/trainer_state.json', 'trainerState');
    const read = (n: number) =>
      t.store.commit(
        {
          runId: t.run.id,
          fileId: doc.id,
          metrics: Array.from({ length: n }, (_, i) => ({ step: i + 1, values: new Map([['loss', 0.1]]) })),
          examples: [],
          skips: new Map(),
          progress: { dev: 3, ino: 3, offset: 0, size: 0, mtimeMs: t.now, seq: 0, lines: 1, records: n },
          rewrite: true,
        },
        2,
      );
    read(10);
    read(20);
    expect(t.store.attempts.list(t.run.id)).toEqual([]);
  });

  it('a new log file repeating the steps of a file of its format, once that one went quiet, is a new attempt', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(30, healthy));
    const second = t.store.files.add(t.run.id, '/x/r1/learning-2.log', 'learningLog');
    t.file = second;
    t.advance(5 * MIN)
      .resumeAt(1)
      .feed([...times(2, healthy), ...times(3, collapsed)]);
    expect(t.store.attempts.list(t.run.id).map((a) => [a.attempt, a.resumed_step])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', fired_step: 5 });
  });
});

describe('not a restart', () => {
  it("a step logged again (one step over several lines: the logging callback's blocks, the DeepSpeed reward line)", () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    for (let step = 1; step <= 30; step++) t.resumeAt(step).feed([healthy]).resumeAt(step).feed([healthy]);
    expect(t.store.attempts.list(t.run.id).map((a) => a.attempt)).toEqual([1]);
  });

  it('a copy of the log growing beside it (tee) or the log of another rank', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    const first = t.file;
    const copy = t.store.files.add(t.run.id, '/x/r1/learning-copy.log', 'learningLog');
    for (let i = 1; i <= 5; i++) {
      t.file = first;
      t.resumeAt(i).feed([healthy]);
      t.file = copy;
      t.advance(10_000).resumeAt(i).feed([healthy]);
    }
    expect(t.store.attempts.list(t.run.id).map((a) => a.attempt)).toEqual([1]);
  });
});

describe('evaluation of what a stopped process committed but never evaluated', () => {
  it('a batch committed without its evaluation is evaluated at start-up, and its alert announced', () => {
    const t = new Trace({ book: presetOnly('mode_collapse') });
    t.feed(times(10, healthy));
    t.commit(times(3, collapsed)); // the process dies before evaluating this batch
    expect(t.store.runs.unevaluated()).toEqual([t.run.id]);
    t.restart();
    expect(t.engine.evaluateBehind()).toBe(1);
    expect(t.store.runs.unevaluated()).toEqual([]);
    expect(t.alert('mode_collapse')).toMatchObject({ state: 'firing', fired_step: 13 });
    t.tick(); // `start` ticks after its catch-up: what fires is announced
    expect(t.said()).toEqual([['firing mode_collapse@13']]);
    expect(t.engine.evaluateBehind()).toBe(0);
  });
});
