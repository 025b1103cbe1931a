import { describe, expect, it } from 'vitest';
import { codeBlock, cut, joinWithin } from '../../src/notify/limits.ts';

describe('platform limits', () => {
  it('cuts text with an ellipsis, within the limit', () => {
    expect(cut('abcdef', 4)).toBe('abc…');
    expect(cut('abc', 4)).toBe('abc');
  });

  it('keeps a code block closed whatever the length, and defuses fences inside it', () => {
    const block = codeBlock('x'.repeat(5000), 1024);
    expect(block.length).toBeLessThanOrEqual(1024);
    expect(block.startsWith('```\n')).toBe(true);
    expect(block.endsWith('\n```')).toBe(true);
    expect(codeBlock('a ``` b', 100)).toBe('```\na `\u200b`` b\n```');
  });

  it('drops whole parts rather than breaking one', () => {
    expect(joinWithin(['```\na\n```', '```\nbbbb\n```'], '\n', 15)).toBe('```\na\n```');
  });
});
