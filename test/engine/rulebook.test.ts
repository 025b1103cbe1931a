import { describe, expect, it } from 'vitest';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { RuleBook, RuleError, type Rule } from '../../src/engine/rules.ts';
import { Trace, times } from './trace.ts';

const OVERRIDES = [
  { id: 'mode_collapse', escalate: { value: 0.9, for: 3 } },
  { id: 'entropy_collapse', runs: 'sweep-*', enabled: false },
  { id: 'kl_high', kind: 'threshold', metric: 'kl', op: '>', value: 0.5 },
];
const ids = (rules: readonly Rule[]) => rules.map((r) => r.id);
const rule = (rules: readonly Rule[], id: string) => rules.find((r) => r.id === id);

describe('RuleBook: the preset changed and extended by the config', () => {
  const book = RuleBook.build(GRPO_PRESET, OVERRIDES);

  it('a run-scoped `enabled: false` removes the rule for matching runs only', () => {
    expect(ids(book.forRun('sweep-1'))).not.toContain('entropy_collapse');
    expect(ids(book.forRun('main'))).toContain('entropy_collapse');
    expect(ids(book.forRun('sweep'))).toContain('entropy_collapse'); // `sweep-*` needs the dash
  });

  it('an entry naming a preset rule patches it and keeps the rest of it', () => {
    for (const run of ['main', 'sweep-1']) {
      expect(rule(book.forRun(run), 'mode_collapse')).toMatchObject({
        kind: 'threshold',
        metric: 'frac_zero_std',
        op: '>',
        value: 0.5,
        for: 5,
        escalate: { value: 0.9, for: 3, severity: 'critical' },
        recover: 0.5,
        severity: 'warning',
      });
    }
  });

  it('an entry with a new id is a new rule, with the schema defaults', () => {
    expect(rule(book.forRun('main'), 'kl_high')).toEqual({
      id: 'kl_high',
      kind: 'threshold',
      metric: 'kl',
      op: '>',
      value: 0.5,
      severity: 'warning',
      enabled: true,
      and: [],
      for: 1,
      recoverFor: 1,
      learn: 0,
      quietFor: 1,
      inhibits: [],
    });
    expect(ids(book.forRun('sweep-1'))).toContain('kl_high');
    expect(ids(book.all())).toEqual([...GRPO_PRESET.map((r) => r.id), 'kl_high']);
  });

  it('leaves the preset itself unchanged', () => {
    expect(rule(GRPO_PRESET, 'mode_collapse')).toMatchObject({ escalate: { value: 0.8 } });
    expect(ids(RuleBook.build(GRPO_PRESET, []).forRun('sweep-1'))).toEqual(ids(GRPO_PRESET));
  });

  it('a run-scoped value applies to matching runs only', () => {
    const b = RuleBook.build(GRPO_PRESET, [{ id: 'grad_explosion', runs: 'big-*', floor: 50 }]);
    expect(rule(b.forRun('big-7'), 'grad_explosion')).toMatchObject({ floor: 50, recoverFor: 5 });
    expect(rule(b.forRun('small-7'), 'grad_explosion')).toMatchObject({ floor: 10 });
  });

  it('a rule disabled everywhere may be enabled again for some runs', () => {
    const b = RuleBook.build(GRPO_PRESET, [
      { id: 'reward_plateau', enabled: false },
      { id: 'reward_plateau', runs: 'long-*', enabled: true },
    ]);
    expect(ids(b.forRun('main'))).not.toContain('reward_plateau');
    expect(ids(b.forRun('long-1'))).toContain('reward_plateau');
  });

  it('a new rule with `runs` applies to matching runs only', () => {
    const b = RuleBook.build(
      [],
      [{ id: 'kl_high', runs: 'ppo-*', kind: 'threshold', metric: 'kl', op: '>', value: 0.5 }],
    );
    expect(ids(b.forRun('ppo-1'))).toEqual(['kl_high']);
    expect(ids(b.forRun('grpo-1'))).toEqual([]);
  });

  it('the engine applies the overrides per run', () => {
    // five healthy records first: entropy_collapse learns the run's early level before it judges
    const collapse = [
      ...times(5, { entropy: 0.1, frac_zero_std: 0.1, kl: 0.01 }),
      ...times(3, { entropy: 0.03, frac_zero_std: 0.85, kl: 0.7 }),
    ];
    const sweep = new Trace({ book, run: 'sweep-1' }).feed(collapse);
    const main = new Trace({ book, run: 'main' }).feed(collapse);
    // frac_zero_std 0.85 is under the critical line of 0.9 now, and 3 records are too few for the early warning
    expect(sweep.states()).toEqual(['kl_high firing']);
    expect(main.states().sort()).toEqual(['entropy_collapse firing', 'kl_high firing']);
  });
});

describe('RuleBook: bad entries', () => {
  const fails = (entries: unknown[]) => () => RuleBook.build(GRPO_PRESET, entries);

  it('names the entry and the field', () => {
    expect(fails([...OVERRIDES.slice(0, 2), { id: 'mode_collapse', value: 'high' }])).toThrow(RuleError);
    expect(fails([...OVERRIDES.slice(0, 2), { id: 'mode_collapse', value: 'high' }])).toThrow(
      /^alerts\.rules\[2\]\.value: /,
    );
    expect(fails([{ id: 'run_stalled', after: 'soon' }])).toThrow(
      'alerts.rules[0].after: expected a duration of at most 365d, such as 90s, 15m, 2h or 1d',
    );
    // a real duration past the cap is refused with the cap named, not as if it were no duration at all
    expect(fails([{ id: 'run_stalled', after: '400d' }])).toThrow(/^alerts\.rules\[0\]\.after: .*at most 365d/);
    expect(fails([{ id: 'mode_collapse', op: '=>' }])).toThrow(/^alerts\.rules\[0\]\.op: /);
    expect(fails([{ id: 'run_stalled', factor: 0 }])).toThrow(/^alerts\.rules\[0\]\.factor: /);
    expect(fails([{ id: 'run_stalled', window: 2 }])).toThrow(/^alerts\.rules\[0\]\.window: /);
    expect(fails([{ id: 'run_stuck_at_start', phase: 'end' }])).toThrow(/^alerts\.rules\[0\]\.phase: /);
    expect(fails([{ id: 'x', kind: 'bogus' }])).toThrow(/^alerts\.rules\[0\]\.kind: /);
  });

  it('rejects an incomplete new rule', () => {
    expect(fails([{ id: 'kl_high', kind: 'threshold', metric: 'kl' }])).toThrow(
      'alerts.rules[0]: a threshold rule needs metric, op and value (or any: [[conditions]])',
    );
    expect(fails([{ id: 'new', kind: 'trend', metrics: [] }])).toThrow(/^alerts\.rules\[0\]\.metrics: /);
  });

  it('rejects unknown keys and entries without an id', () => {
    expect(fails([{ id: 'mode_collapse', valu: 0.9 }])).toThrow(/^alerts\.rules\[0\]: .*valu/);
    expect(fails([{ value: 1 }])).toThrow(/^alerts\.rules\[0\]/);
  });

  it('validates a run-scoped change when the book is built, not when a run is evaluated', () => {
    expect(fails([{ id: 'mode_collapse', runs: 'a*', value: 'bad' }])).toThrow(/^alerts\.rules\[0\]\.value: /);
  });
});
