import { describe, expect, it } from 'vitest';
import { COMMANDS, parseText } from '../../src/interact/registry.ts';
import { parseSince } from '../../src/commands/runReport.ts';

const spec = COMMANDS.find((c) => c.path.join(' ') === 'run report')!;
const known = { runs: ['grpo-7b', '0.5'], metrics: ['reward'] };

describe('run report arguments', () => {
  it('reads a step or an epoch after the run, as chat sends them', () => {
    expect(parseText(spec, ['grpo-7b', '120'], known)).toEqual({ run: 'grpo-7b', since: '120' });
    expect(parseText(spec, ['grpo-7b', '0.5'], known)).toEqual({ run: 'grpo-7b', since: '0.5' });
    expect(parseText(spec, ['.25'], known)).toEqual({ since: '.25' });
    expect(parseText(spec, [], known)).toEqual({});
  });

  it('a whole number is a step, a decimal point makes an epoch; other words are refused', () => {
    expect(parseSince('120')).toEqual({ step: 120 });
    expect(parseSince('0.5')).toEqual({ epoch: 0.5 });
    expect(parseSince(undefined)).toBeUndefined();
    expect(() => parseSince('1e3')).toThrow(/--since takes a step \(120\) or an epoch/);
  });
});
