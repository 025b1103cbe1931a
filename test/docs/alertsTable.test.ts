/**
 * The preset tables of docs/alerts.md mirror the preset itself: every rule of GRPO_PRESET has a row with its kind
 * and severity, and no row names a rule the preset does not have.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';

const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'alerts.md'), 'utf8');

/** `| \`id\`, \`_suffix\` | kind | fires when | severity | source |` rows: each id (a `_suffix` completes the first
 * id's stem: `rollout_is_ratio_low`, `_high`) with its kind and severity cell. */
function rows(): Map<string, { kind: string; severity: string }> {
  const out = new Map<string, { kind: string; severity: string }>();
  for (const line of DOC.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 6 || !cells[1]!.startsWith('`')) continue;
    const ids = [...cells[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    if (ids.length === 0 || !/^[a-z_]+$/.test(cells[2]!.split(' ')[0]!)) continue;
    const stem = ids[0]!.slice(0, ids[0]!.lastIndexOf('_'));
    for (const id of ids)
      out.set(id.startsWith('_') ? stem + id : id, {
        kind: cells[2]!.split(' ')[0]!,
        severity: cells[cells.length - 3]!,
      });
  }
  return out;
}

describe('the preset tables in docs/alerts.md', () => {
  const documented = rows();

  it('list every preset rule, and only those', () => {
    expect([...documented.keys()].sort()).toEqual(GRPO_PRESET.map((r) => r.id).sort());
  });

  it('give each rule its kind and its severity', () => {
    for (const rule of GRPO_PRESET) {
      const row = documented.get(rule.id)!;
      expect(row.kind, rule.id).toBe(rule.kind);
      // an assumed milestone is info until the config sets its value: the row names both
      expect(row.severity, rule.id).toContain(rule.kind === 'milestone' && rule.assumed ? 'info' : rule.severity);
    }
  });
});
