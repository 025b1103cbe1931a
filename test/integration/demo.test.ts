import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { tempDir } from '../helpers.ts';
import { rlwatch } from './cli.ts';

describe('rlwatch demo', () => {
  it('replays the sample run live: the spike and the collapse fire and resolve, only info is left firing', () => {
    const dir = tempDir();
    const r = rlwatch(['demo', '--pace', '5', '--db', join(dir, 'demo.db')], { cwd: dir });
    expect(r.status).toBe(0);
    const out = r.stdout;
    for (const rule of ['grad_explosion', 'mode_collapse']) {
      expect(out).toMatch(new RegExp(`\\[CRITICAL\\] ${rule} FIRING|\\[WARNING\\] ${rule} FIRING`));
      expect(out).toMatch(new RegExp(`${rule} RESOLVED`));
    }
    // the collapse's symptoms (entropy, a zero loss and grad) are recorded, not announced: one page for one cause
    for (const rule of ['entropy_collapse', 'no_learning']) {
      expect(out).not.toMatch(new RegExp(`${rule} FIRING`));
      expect(out).toMatch(new RegExp(`· resolved · grpo-demo · ${rule} at step`));
    }
    expect(out).toMatch(/grpo-demo: step 300, epoch 1\.2/);
    // the terminal's words for the metrics not shown, not a chat command's
    expect(out).toContain('more metrics logged: see --json or `reward history --metric NAME`');
    expect(out).not.toContain('metric=NAME');
    // the alert list at the end: the collapse is over, nothing serious still fires
    const list = out.slice(out.indexOf('alerts for grpo-demo'));
    expect(list).toMatch(/#\d+ critical · resolved · /); // the list's layout, so that the next line can say what is absent
    expect(list).not.toMatch(/(warning|critical) · firing/);
    expect(list).toMatch(
      /critical · resolved · grpo-demo · mode_collapse at step 16\d: frac_zero_std 1 > 0\.8 for 3 steps/,
    );
    expect(r.stderr).toMatch(/step 300\/300/);
  }, 60_000);
});
