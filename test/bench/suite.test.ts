import Database from 'better-sqlite3';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildSuite, type Label, type SuiteRun } from '../../bench/suite/runs.ts';
import { notifications, scoreRun, totals, type Incident } from '../../bench/suite/score.ts';
import { loggedKeys, writeRun } from '../../bench/suite/write.ts';
import { tempDir } from '../helpers.ts';
import { rlwatch } from '../integration/cli.ts';

describe('the suite generator: rlwatch reads what it meant to write', () => {
  // a small version of the suite (5% of each run's steps), backfilled by the real CLI into a real SQLite file
  const suite = buildSuite({ scale: 0.05 });
  const picked = [
    'healthy-trl-two-rewards', // trainer_state.json with two reward functions and the Trainer's summary
    'fail-slow-steps', // trainer_state.json inside checkpoint-N/
    'healthy-verl-ppo-critic', // verl console with a critic
    'fail-crash-oom', // verl console ending in a traceback
    'fail-nan-loss', // flat JSONL with NaN
    'healthy-jsonl-neg', // flat JSONL, rewards in [-1, 0]
  ].map((name) => suite.find((r) => r.name === name)!);
  let db: Database.Database;

  beforeAll(() => {
    const dir = tempDir('rlw-suite-');
    const root = join(dir, 'runs');
    for (const run of picked) writeRun(root, run);
    const r = rlwatch(['backfill', root, '--db', join(dir, 'suite.db')], { cwd: dir });
    expect(r.status, r.stderr).toBe(0);
    db = new Database(join(dir, 'suite.db'), { readonly: true });
  }, 60_000);

  const stored = (run: string, metric: string): Array<{ step: number; value: number | null }> =>
    db
      .prepare(
        `SELECT p.step, p.value FROM points p JOIN runs r ON r.id = p.run_id JOIN metrics m ON m.id = p.metric_id
         WHERE r.name = ? AND m.name = ? ORDER BY p.step`,
      )
      .all(run, metric) as Array<{ step: number; value: number | null }>;

  it('covers the three formats, each logging the canonical metrics', () => {
    expect(new Set(picked.map((r) => r.format))).toEqual(new Set(['trl', 'verl', 'jsonl']));
    for (const run of picked) expect(loggedKeys(run).length).toBeGreaterThanOrEqual(10);
  });

  it.each(picked.map((r) => [r.name, r] as [string, SuiteRun]))(
    '%s: every logged series is stored at its steps with its values',
    (_, run) => {
      for (const [canonical] of loggedKeys(run)) {
        const want = run.data.metrics.get(canonical)!;
        const got = stored(run.name, canonical);
        expect(
          got.map((p) => p.step),
          `${run.name} ${canonical}`,
        ).toEqual(run.data.steps);
        got.forEach((p, i) => {
          const w = want[i]!;
          // SQLite keeps NaN as NULL
          if (Number.isNaN(w)) expect(p.value, `${canonical} at ${p.step}`).toBeNull();
          else expect(p.value! - w, `${canonical} at ${p.step}`).toBeCloseTo(0, 12);
        });
      }
    },
  );

  it('is deterministic: the same runs on a second build', () => {
    const again = buildSuite({ scale: 0.05 });
    expect(again.map((r) => r.data.metrics.get('reward'))).toEqual(suite.map((r) => r.data.metrics.get('reward')));
  });

  it('labels every failure with an onset inside the run and a cause', () => {
    const failures = suite.filter((r) => r.label.kind !== 'healthy');
    expect(suite.length - failures.length).toBe(10);
    expect(new Set(failures.map((r) => r.label.kind)).size).toBeGreaterThanOrEqual(12);
    for (const r of failures) {
      expect(r.data.steps).toContain(r.label.onset);
      expect(r.label.rules.length).toBeGreaterThan(0);
    }
  });
});

describe('the suite scorer', () => {
  let ids = 0;
  const incident = (rule: string, step: number, severity = 'warning', more: Partial<Incident> = {}): Incident => ({
    id: ++ids,
    run: 'r',
    rule,
    severity,
    state: 'resolved',
    step,
    resolvedStep: step + 10,
    startedAt: '2026-01-01T00:00:00.000Z',
    resolvedAt: '2026-01-01T00:00:01.000Z',
    ...more,
  });
  const sudden: Label = { kind: 'grad_explosion', onset: 100, sudden: true, rules: ['grad_explosion'] };
  const gradual: Label = { kind: 'kl_blowup', onset: 100, sudden: false, rules: ['kl_blowup'] };

  it('a right rule 5 steps after a sudden onset is caught in time', () => {
    const s = scoreRun('r', sudden, [incident('grad_explosion', 105, 'critical')]);
    expect(s).toMatchObject({ detectedBy: { rule: 'grad_explosion', step: 105 }, delay: 5, inTime: true, pass: true });
    expect(s.falseAlarms).toEqual([]);
  });

  it('30 steps after a sudden onset is late (20), 50 after a gradual one is not (60)', () => {
    expect(scoreRun('r', sudden, [incident('grad_explosion', 130, 'critical')])).toMatchObject({
      delay: 30,
      inTime: false,
      pass: false,
    });
    expect(scoreRun('r', gradual, [incident('kl_blowup', 150)])).toMatchObject({ delay: 50, inTime: true, pass: true });
  });

  it('a page before the onset is a false alarm; an info incident is not a page', () => {
    const s = scoreRun('r', sudden, [
      incident('reward_trend', 40),
      incident('reward_trend', 60, 'info'),
      incident('grad_explosion', 101, 'critical'),
    ]);
    expect(s.falseAlarms).toEqual([{ rule: 'reward_trend', step: 40, severity: 'warning' }]);
    expect(s.pass).toBe(false);
  });

  it('a second page after the onset, by another rule, is an extra notification of the wrong cause', () => {
    const s = scoreRun('r', sudden, [incident('grad_explosion', 101, 'critical'), incident('reward_trend', 112)]);
    expect(s.after).toHaveLength(2);
    expect(s.wrongCause).toEqual([{ rule: 'reward_trend', step: 112, severity: 'warning' }]);
    expect(s.pass).toBe(false);
  });

  it('a page of a wrong rule alone is not a detection', () => {
    const s = scoreRun('r', sudden, [incident('reward_trend', 101)]);
    expect(s.detectedBy).toBeUndefined();
    expect(s.inTime).toBe(false);
  });

  it('an incident held back by truncation_no_signal while it fired is not a notification', () => {
    const all = [
      incident('truncation_no_signal', 110, 'critical', { state: 'firing', resolvedAt: null, resolvedStep: null }),
      incident('truncation', 120),
      incident('truncation', 90),
    ];
    expect(notifications(all).map((i) => `${i.rule}@${i.step}`)).toEqual(['truncation_no_signal@110', 'truncation@90']);
  });

  it('an inhibitor holds back only while it fires, and of two rules that hold each other back the first pages', () => {
    // entropy_drop and entropy_collapse hold each other back (the preset): the first to fire pages
    const both = [incident('entropy_collapse', 130), incident('entropy_drop', 120), incident('entropy_drop', 200)];
    // the drop at 120 resolved at 130: the collapse firing at 130 is no longer held; the drop at 200 fired after
    // the collapse resolved (140)
    expect(notifications(both).map((i) => `${i.rule}@${i.step}`)).toEqual([
      'entropy_collapse@130',
      'entropy_drop@120',
      'entropy_drop@200',
    ]);
    // the collapse (125-135) is held back by the drop (120-130) until the drop resolves, then announced with it
    const held = [incident('entropy_collapse', 125), incident('entropy_drop', 120)];
    expect(notifications(held).map((i) => `${i.rule}@${i.step}${i.with ? ` with ${i.with}` : ''}`)).toEqual([
      'entropy_collapse@130 with entropy_drop',
      'entropy_drop@120',
    ]);
    // resolved (at 128) before its cause: held back all along
    const over = [incident('entropy_collapse', 125, 'warning', { resolvedStep: 128 }), incident('entropy_drop', 120)];
    expect(notifications(over).map((i) => `${i.rule}@${i.step}`)).toEqual(['entropy_drop@120']);
  });

  it('a symptom that outlives its cause rides on the message of its resolution: listed apart, not an extra page', () => {
    const s = scoreRun('r', sudden, [
      incident('grad_explosion', 101, 'critical', { resolvedStep: 140 }),
      incident('reward_trend', 115, 'warning', { resolvedStep: 300 }),
    ]);
    expect(s.after).toEqual([{ rule: 'grad_explosion', step: 101, severity: 'critical' }]);
    expect(s.riders).toEqual([{ rule: 'reward_trend', step: 140, severity: 'warning', with: 'grad_explosion' }]);
    expect(s.wrongCause).toEqual([]);
    expect(s.pass).toBe(true);
  });

  it('an incident whose severity rose is one incident, its escalation listed apart at the step it rose', () => {
    const s = scoreRun('r', gradual, [
      incident('kl_blowup', 120, 'critical', { escalated: { from: 'warning', step: 150 } }),
    ]);
    expect(s.after).toEqual([{ rule: 'kl_blowup', step: 120, severity: 'critical' }]);
    expect(s.escalations).toEqual([{ rule: 'kl_blowup', step: 150, severity: 'critical' }]);
    expect(s.pass).toBe(true);
  });

  it('a gradual failure is due from the step it is significant', () => {
    const slow: Label = { ...gradual, significant: 220 };
    expect(scoreRun('r', slow, [incident('kl_blowup', 250)])).toMatchObject({ delay: 30, inTime: true });
    expect(scoreRun('r', slow, [incident('kl_blowup', 290)])).toMatchObject({ delay: 70, inTime: false });
  });

  it('every page of a healthy run is a false alarm, and the totals count runs and pages', () => {
    const healthy = scoreRun('h', { kind: 'healthy', rules: [] }, [
      { ...incident('reward_trend', 500), run: 'h' },
      { ...incident('run_finished', 900, 'info'), run: 'h' },
    ]);
    expect(healthy.falseAlarms).toHaveLength(1);
    const caught = scoreRun('r', sudden, [incident('grad_explosion', 103, 'critical')]);
    const late = scoreRun('r', gradual, [incident('reward_trend', 50), incident('kl_blowup', 200)]);
    expect(totals([healthy, caught, late])).toEqual({
      failures: 2,
      caught: 1,
      detected: 2,
      healthy: 1,
      healthyWithPages: 1,
      falseAlarms: 2,
      wrongCause: 0,
      riders: 0,
      escalations: 0,
      pass: false,
    });
  });
});
