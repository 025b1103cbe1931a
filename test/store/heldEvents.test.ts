import { describe, expect, it } from 'vitest';
import { HeldEvents } from '../../src/store/heldEvents.ts';

describe('HeldEvents', () => {
  it('reads an answer once until a batch of the run writes events, and hands out copies', () => {
    const held = new HeldEvents();
    const answers: unknown[] = [{}, [], { total_steps: 300 }, [{ id: 1 }], undefined, null];
    for (const [i, answer] of answers.entries()) {
      let reads = 0;
      const read = (): unknown => {
        reads++;
        return structuredClone(answer);
      };
      const first = held.get(1, `k${i}`, read);
      expect(first).toEqual(answer);
      // a caller that changes what it was given changes nothing held
      if (first !== null && typeof first === 'object') Object.assign(first, { changed: true });
      expect(held.get(1, `k${i}`, read)).toEqual(answer);
      expect(reads).toBe(1);
      held.get(2, `k${i}`, read); // another run's answer is its own
      expect(reads).toBe(2);
      held.wrote(1);
      held.get(1, `k${i}`, read);
      expect(reads).toBe(3);
    }
  });
});
