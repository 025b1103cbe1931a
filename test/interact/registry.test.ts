import { describe, expect, it } from 'vitest';
import { COMMANDS, findCommand, parseText, UsageError, usage, type CommandSpec } from '../../src/interact/registry.ts';

const known = { runs: ['grpo-7b', 'sweep-1'], metrics: ['reward', 'entropy', 'frac_zero_std'] };
const spec = (path: string): CommandSpec => {
  const found = findCommand(path.split(' '));
  if (!found) throw new Error(path);
  return found.spec;
};

describe('the command tree', () => {
  it('has the commands every front end registers', () => {
    expect(COMMANDS.map((c) => c.path.join(' '))).toEqual([
      'run status',
      'run list',
      'run logs',
      'run report',
      'run compare',
      'reward history',
      'alerts',
      'ack',
      'mute',
      'unmute',
      'mutes',
      'examples',
      'files',
    ]);
    expect(COMMANDS.filter((c) => c.access === 'write').map((c) => c.path[0])).toEqual(['ack', 'mute', 'unmute']);
  });

  it('finds a command and the words left for it', () => {
    expect(findCommand(['run', 'status', 'grpo-7b'])).toMatchObject({
      spec: { path: ['run', 'status'] },
      rest: ['grpo-7b'],
    });
    expect(findCommand(['ack', '12', 'on', 'it'])).toMatchObject({ spec: { path: ['ack'] }, rest: ['12', 'on', 'it'] });
    expect(findCommand(['nope'])).toBeNull();
  });

  it('prints a usage line', () => {
    expect(usage(spec('mute'))).toBe('usage: /mute [run] [rule] [info|warning|critical] <duration> [reason]');
  });
});

describe('reading free text as Slack sends it', () => {
  it('skips optional options that cannot take a word', () => {
    expect(parseText(spec('mute'), ['grpo-7b', '2h'], known)).toEqual({ run: 'grpo-7b', duration: '2h' });
    expect(parseText(spec('mute'), ['all', '2h'], known)).toEqual({ run: 'all', duration: '2h' });
    expect(parseText(spec('mute'), ['sweep-*', 'reward_trend', 'info', '1d', 'known', 'noise'], known)).toEqual({
      run: 'sweep-*',
      rule: 'reward_trend',
      severity: 'info',
      duration: '1d',
      reason: 'known noise',
    });
  });

  it('a mute of every run says so with all: a duration alone is answered with the usage line', () => {
    expect(() => parseText(spec('mute'), ['2h'], known)).toThrow(
      'usage: /mute [run] [rule] [info|warning|critical] <duration> [reason]: name a run or a rule, or add all to mute every run',
    );
    expect(() => parseText(spec('mute'), ['critical', '2h'], known)).toThrow(/add all to mute every run/);
    expect(parseText(spec('mute'), ['all', 'critical', '2h'], known)).toEqual({
      run: 'all',
      severity: 'critical',
      duration: '2h',
    });
    expect(parseText(spec('mute'), ['rule=mode_collapse', '2h'], known)).toEqual({
      rule: 'mode_collapse',
      duration: '2h',
    });
  });

  it('tells a metric from a run by the names in the store', () => {
    expect(parseText(spec('reward history'), ['entropy', '50'], known)).toEqual({ metric: 'entropy', last: 50 });
    expect(parseText(spec('reward history'), ['grpo-7b', 'entropy'], known)).toEqual({
      run: 'grpo-7b',
      metric: 'entropy',
    });
    expect(parseText(spec('run status'), ['typo-run'], known)).toEqual({ run: 'typo-run' });
  });

  it('reads name=value words and flags', () => {
    expect(parseText(spec('alerts'), ['all'], known)).toEqual({ all: true });
    expect(parseText(spec('examples'), ['worst', '120'], known)).toEqual({ which: 'worst', step: 120 });
    expect(parseText(spec('reward history'), ['metric=frac_zero_std'], known)).toEqual({ metric: 'frac_zero_std' });
    expect(parseText(spec('ack'), ['12', 'lowering', 'the', 'lr'], known)).toEqual({
      id: 12,
      comment: 'lowering the lr',
    });
  });

  it('answers a wrong argument with the usage line', () => {
    expect(() => parseText(spec('mute'), ['grpo-7b'], known)).toThrow(UsageError);
    expect(() => parseText(spec('mute'), ['grpo-7b'], known)).toThrow(
      'usage: /mute [run] [rule] [info|warning|critical] <duration> [reason]: duration is required',
    );
    expect(() => parseText(spec('ack'), ['twelve'], known)).toThrow(
      "usage: /ack <id> [comment]: id must be a whole number, not 'twelve'",
    );
    expect(() => parseText(spec('mutes'), ['extra'], known)).toThrow("usage: /mutes: did not understand 'extra'");
  });
});
