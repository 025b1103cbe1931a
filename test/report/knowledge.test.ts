import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { KNOWLEDGE } from '../../src/engine/presets/knowledge.ts';
import { GRPO_RANGES } from '../../src/report/ranges.ts';

describe('the knowledge base next to the rule book', () => {
  it('has an entry, with a meaning, actions and a one-line hint, for every preset rule', () => {
    const missing = GRPO_PRESET.map((r) => r.id).filter((id) => KNOWLEDGE[id] === undefined);
    expect(missing).toEqual([]);
    for (const r of GRPO_PRESET) {
      const k = KNOWLEDGE[r.id]!;
      expect(k.meaning.length, r.id).toBeGreaterThan(10);
      expect(k.actions.length, r.id).toBeGreaterThan(0);
      expect(k.hint, r.id).not.toMatch(/\n/);
      expect(k.hint.length, r.id).toBeLessThanOrEqual(100);
    }
  });

  it('explains every finding an expected range can raise', () => {
    for (const r of GRPO_RANGES)
      for (const id of [r.low, r.high]) if (id) expect(KNOWLEDGE[id], `${r.metric}: ${id}`).toBeDefined();
  });

  it("is the table of docs/alerts.md's 'What to try': every preset rule is a row with its hint", () => {
    const page = readFileSync('docs/alerts.md', 'utf8');
    for (const r of GRPO_PRESET) expect(page, r.id).toContain(`| \`${r.id}\` | ${KNOWLEDGE[r.id]!.hint} |`);
  });
});
