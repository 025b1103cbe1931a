import { describe, expect, it } from 'vitest';
import { runPrefix } from '../../src/store/open.ts';

describe('runPrefix: what run names made from folders start with', () => {
  const sqlite = '/home/ana/rlwatch.db';
  const pg = 'postgres://rl:pw@db:5432/rlwatch';

  it('unset: nothing on SQLite, the host name on PostgreSQL (hosts share that database)', () => {
    expect(runPrefix({}, sqlite, 'gpu-a')).toBe('');
    expect(runPrefix({}, pg, 'gpu-a')).toBe('gpu-a');
    expect(runPrefix({}, 'postgresql://db/rlwatch', 'gpu-b')).toBe('gpu-b');
  });

  it('watch.prefix wins on either store; "" turns it off on PostgreSQL', () => {
    expect(runPrefix({ prefix: 'lab/a100' }, sqlite, 'gpu-a')).toBe('lab/a100');
    expect(runPrefix({ prefix: 'lab/a100' }, pg, 'gpu-a')).toBe('lab/a100');
    expect(runPrefix({ prefix: '' }, pg, 'gpu-a')).toBe('');
  });
});
