/** `watch.prefix` end to end on SQLite: the real bin/rlwatch backfills into prefixed run names. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { learningLine, tempDir } from '../helpers.ts';
import { rlwatch } from './cli.ts';

describe('watch.prefix', () => {
  it('backfill stores runs as <prefix>/<name>, and run status finds them by that name', () => {
    const root = tempDir();
    const run = join(root, 'runs', 'grpo-7');
    mkdirSync(run, { recursive: true });
    writeFileSync(join(run, 'learning.log'), [1, 2, 3, 4].map((i) => learningLine(i)).join('\n') + '\n');
    writeFileSync(join(run, 'notes.txt'), 'lr sweep, second try\n'); // looks like a log, is none
    const config = join(root, 'rlwatch.yaml');
    writeFileSync(config, 'db: rlwatch.db\nwatch:\n  prefix: gpu-a\n');

    const backfill = rlwatch(['backfill', join(root, 'runs'), '--config', config]);
    expect(backfill.stderr).toBe('');
    expect(backfill.stdout).toMatch(/^backfill: 1 run, 1 file, 4 records /);
    expect(backfill.stdout).toContain('\n  not read: gpu-a/grpo-7/notes.txt (');
    const runs = JSON.parse(rlwatch(['runs', '--json', '--config', config]).stdout);
    expect(runs).toMatchObject([{ name: 'gpu-a/grpo-7', path: run, lastStep: 4 }]);
    const status = rlwatch(['run', 'status', 'gpu-a/grpo-7', '--json', '--config', config]);
    expect(status.stderr).toBe('');
    expect(JSON.parse(status.stdout)).toMatchObject({ run: 'gpu-a/grpo-7', step: 4 });
    const bare = rlwatch(['run', 'status', 'grpo-7', '--config', config]);
    expect(bare.stderr).toBe("rlwatch: unknown run 'grpo-7' (known: gpu-a/grpo-7)\n");
  });
});
