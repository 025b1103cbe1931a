/**
 * An evaluation reads the run's open alerts once and serves every rule's Lifecycle from that (engine/openAlerts.ts).
 * Nothing of it outlives the evaluation: what another process wrote before the next one (`rlwatch ack` run beside
 * `start`) is seen by it, and an evaluation rolled back (a rule that throws) leaves nothing of what it changed.
 * Real SQLite file; the ack is the real CLI in its own process.
 */
import { describe, expect, it } from 'vitest';
import { rlwatch } from '../integration/cli.ts';
import { HOUR, Trace, presetOnly, times } from './trace.ts';

const SPIKE = { grad_norm: 15.786 };
const CALM = { grad_norm: 0.024 };

describe('the open alerts one evaluation reads', () => {
  it("see another process's ack at the next evaluation: no repeat, and the resolution's card says who acked", () => {
    const t = new Trace({ book: presetOnly('grad_explosion'), repeatIntervalMs: HOUR });
    t.feed([CALM, CALM, CALM, SPIKE]);
    t.feed([{ grad_norm: 12 }]); // still firing, nothing to say: the open alerts are held as they are now
    const alert = t.alert('grad_explosion');
    const cli = rlwatch(['ack', String(alert.id), '--by', 'ana', '--db', t.dbPath, '--json']);
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);

    // the ack queued an update that follows the firing row, whose card is not posted yet (src/notify/cardUpdates.ts)
    expect(t.said()).toEqual([['firing grad_explosion@4'], ['update grad_explosion@4']]);
    // the posts: rows without their card updates (queued edits join a waiting row of the run: src/store/outbox.ts)
    const posts = () =>
      t
        .said()
        .map((row) => row.filter((i) => !i.startsWith('update ')))
        .filter((row) => row.length > 0);
    // still firing two hours on: a repeat were it not acked
    t.advance(2 * HOUR).feed([{ grad_norm: 12 }]);
    expect(posts()).toEqual([['firing grad_explosion@4']]);
    t.feed(times(5, CALM));
    expect(posts()).toEqual([['firing grad_explosion@4'], ['resolved grad_explosion@11']]);
    const resolved = t
      .outbox()
      .flatMap((r) => r.notification.items)
      .find((i) => i.kind === 'resolved')!;
    expect(resolved.state?.ack).toMatchObject({ by: 'ana', name: 'ana' });
  });

  it('keep nothing of an evaluation rolled back: done again without the rule that threw, as if it never ran', () => {
    // mode_collapse comes before grad_explosion in the preset: it fires, then grad_explosion throws
    const book = presetOnly('mode_collapse', 'grad_explosion');
    const clean = new Trace({ book, repeatIntervalMs: HOUR });
    const broken = new Trace({ book, repeatIntervalMs: HOUR });
    let failing = true;
    const cursor = broken.store.alerts.cursor.bind(broken.store.alerts);
    broken.store.alerts.cursor = (runId, rule, metric) => {
      if (failing && rule === 'grad_explosion') throw new TypeError('boom');
      return cursor(runId, rule, metric);
    };
    const bad = { frac_zero_std: 1, grad_norm: 15.786 };
    clean.batch(times(3, bad));
    broken.batch(times(3, bad));
    expect(broken.states()).toEqual(['mode_collapse firing']);
    expect(broken.wrote()).toEqual([['firing mode_collapse@3']]);

    // the next evaluation: grad_explosion judges the steps it missed; mode_collapse's incident goes on, one row
    failing = false;
    for (const t of [clean, broken]) t.batch(times(2, { frac_zero_std: 1, grad_norm: 0.05 }));
    const rows = (t: Trace) =>
      t.alerts().map((a) => ({ ...a, events: t.store.alerts.events(a.id).map((e) => [e.step, e.state, e.details]) }));
    expect(rows(broken)).toEqual(rows(clean));
    expect(broken.states()).toEqual(['mode_collapse firing', 'grad_explosion firing']);
    expect(broken.wrote()).toEqual([['firing mode_collapse@3'], ['firing grad_explosion@1']]);
    expect(clean.wrote()).toEqual([['firing mode_collapse@3', 'firing grad_explosion@1']]);
  });
});
