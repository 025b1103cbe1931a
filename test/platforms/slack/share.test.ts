import { describe, expect, it } from 'vitest';
import { HeldReplies, HOLD_MS } from '../../../src/platforms/slack/share.ts';
import type { Reply } from '../../../src/render/reply.ts';

const reply = (title: string): Reply => ({ title, fields: [], lines: [], data: null });
const answer = (title: string) => ({ reply: reply(title), user: 'U0ANA', channel: 'C0RLWATCH' });

describe('private answers held for Post to channel', () => {
  it('an answer is held for HOLD_MS, then let go', () => {
    const held = new HeldReplies();
    const token = held.keep(answer('a'), 0);
    expect(held.get(token, HOLD_MS - 1)?.reply.title).toBe('a');
    expect(held.get(token, HOLD_MS)).toBeUndefined();
  });

  it('at most 100 are held: the 101st lets the oldest go, and only it', () => {
    const held = new HeldReplies();
    const tokens = Array.from({ length: 101 }, (_, i) => held.keep(answer(`#${i}`), i));
    expect(held.get(tokens[0]!, 200)).toBeUndefined();
    expect(tokens.slice(1).map((t) => held.get(t, 200)?.reply.title)).toEqual(
      Array.from({ length: 100 }, (_, i) => `#${i + 1}`),
    );
  });

  it('each answer has its own random token; one posted is dropped, the others stay', () => {
    const held = new HeldReplies();
    const a = held.keep(answer('a'), 0);
    const b = held.keep(answer('b'), 0);
    expect(a).toMatch(/^[0-9a-f]{24}$/);
    expect(b).not.toBe(a);
    held.drop(a);
    expect(held.get(a, 1)).toBeUndefined();
    expect(held.get(b, 1)?.reply.title).toBe('b');
  });
});
