/**
 * The warnings of a watcher whose PostgreSQL is out of reach: the first failure at once, then one line a minute with
 * the count of failures since, and one line once it is reached again. The clock is injected.
 */
import { describe, expect, it } from 'vitest';
import { PostgresError } from '../../../src/store/dbErrors.ts';
import { OutageLog } from '../../../src/store/postgres/outageLog.ts';

function logged(): { lines: string[]; log: OutageLog; clock: { now: number } } {
  const lines: string[] = [];
  const clock = { now: 0 };
  const log = new OutageLog(
    { info: (m) => lines.push(`info: ${m}`), warn: (m) => lines.push(`warning: ${m}`) },
    () => clock.now,
  );
  return { lines, log, clock };
}

const refused = new PostgresError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');

describe('warnings while the database is out of reach', () => {
  it('17 failures a second for 150 s: the first line, one a minute with the count, one when it is back', () => {
    const { lines, log, clock } = logged();
    for (let i = 0; i < 150 * 17; i++) {
      clock.now = Math.floor((i * 1000) / 17);
      log.failed(refused, `cannot read a.log: ${refused.message}`);
    }
    clock.now = 150_000;
    log.reached();
    log.reached(); // said once
    const perMinute = 60 * 17; // the failures after a told one, up to the first a minute after it
    expect(lines).toEqual([
      'warning: cannot read a.log: connect ECONNREFUSED 127.0.0.1:5432',
      `warning: still out of reach, ${perMinute} more failures since the last line: cannot read a.log: connect ECONNREFUSED 127.0.0.1:5432`,
      `warning: still out of reach, ${perMinute} more failures since the last line: cannot read a.log: connect ECONNREFUSED 127.0.0.1:5432`,
      `info: the database is reachable again after 150 s (${150 * 17} failures while it was not)`,
    ]);
  });

  it('passes other warnings as they are, and tells a second outage from its first failure again', () => {
    const { lines, log, clock } = logged();
    log.failed(new Error('EACCES: permission denied'), 'cannot read b.log: EACCES');
    log.failed(new Error('EACCES: permission denied'), 'cannot read b.log: EACCES');
    log.failed(refused, 'first');
    log.reached();
    clock.now = 5000;
    log.failed(refused, 'second');
    expect(lines).toEqual([
      'warning: cannot read b.log: EACCES',
      'warning: cannot read b.log: EACCES',
      'warning: first',
      'info: the database is reachable again after 0 s (1 failures while it was not)',
      'warning: second',
    ]);
  });
});
