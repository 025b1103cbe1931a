import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { learningLine, tempDir } from '../helpers.ts';
import { rlwatch } from './cli.ts';

/** Two runs: an OCaml GRPO trainer's learning.log and a TRL stdout capture with a tqdm bar and a broken dict line. */
function makeRuns(): { root: string; db: string } {
  const root = tempDir();
  const a = join(root, 'runs', 'grpo-a');
  const b = join(root, 'runs', 'trl-b');
  mkdirSync(a, { recursive: true });
  mkdirSync(b, { recursive: true });
  writeFileSync(join(a, 'learning.log'), [1, 2, 3].map((i) => learningLine(i)).join('\n') + '\n');
  writeFileSync(
    join(b, 'train.out'),
    [
      "{'loss': 0.0, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'reward': 0.25, 'frac_reward_zero_std': 0.5, 'epoch': 0.01}",
      '  3%|▎         | 10/300 [00:20<09:40,  2.00s/it]',
      "{'loss': '0.06166', 'grad_norm': '0.7', 'reward': '0.5', 'epoch': '0.02'}",
      "{'loss': 0.1, 'reward': ",
    ].join('\n') + '\n',
  );
  return { root, db: join(root, 'rlwatch.db') };
}

describe('the CLI', () => {
  let root: string;
  let db: string;
  beforeAll(() => {
    ({ root, db } = makeRuns());
    const r = rlwatch(['backfill', join(root, 'runs'), '--db', db]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /^backfill: 2 runs, 2 files, 5 records from 0\.0 MB in \d+\.\d s\n {2}skipped 1 line: 1 × dict line not read \(cut off or nested\)\n/,
    );
    expect(r.stdout).toContain(
      `\n  unparsed lines: trl-b/train.out: 1 line skipped (1 × dict line not read (cut off or nested), e.g. "{'loss': 0.1, 'reward': ")\n`,
    );
  });

  it('lists runs as JSON', () => {
    const r = rlwatch(['runs', '--json', '--db', db]);
    expect(r.status).toBe(0);
    const runs = JSON.parse(r.stdout);
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatchObject({
      name: 'grpo-a',
      path: join(root, 'runs', 'grpo-a'),
      firstStep: 1,
      lastStep: 3,
      lastEpoch: 0.03,
      records: 3,
    });
    expect(runs[1]).toMatchObject({ name: 'trl-b', firstStep: 1, lastStep: 10, lastEpoch: 0.02, records: 2 });
    expect(Date.parse(runs[0].updatedAt)).toBeGreaterThan(Date.now() - 120_000);
  });

  it('shows a run status with canonical names', () => {
    const r = rlwatch(['run', 'status', 'trl-b', '--json', '--db', db]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      run: 'trl-b',
      step: 10, // the second dict comes right after the bar's 10/300
      epoch: 0.02,
      metrics: { loss: 0.06166, grad_norm: 0.7, reward: 0.5, lr: 1e-6, frac_zero_std: 0.5 },
    });
    const text = rlwatch(['run', 'status', 'trl-b', '--db', db]);
    expect(text.stdout).toContain('trl-b: step 10, epoch 0.02');
    expect(text.stdout).toMatch(/frac_zero_std\s+0\.5 \(step 1\)/);
  });

  it('prints a metric history as JSON, steps ascending, with --last', () => {
    const r = rlwatch(['reward', 'history', 'grpo-a', '--json', '--db', db]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      run: 'grpo-a',
      metric: 'reward',
      points: [
        { step: 1, epoch: 0.01, value: 0.101 },
        { step: 2, epoch: 0.02, value: 0.102 },
        { step: 3, epoch: 0.03, value: 0.103 },
      ],
    });
    const last = JSON.parse(
      rlwatch(['reward', 'history', 'grpo-a', '--metric', 'grad_norm', '--last', '2', '--json', '--db', db]).stdout,
    );
    expect(last.points.map((p: { step: number }) => p.step)).toEqual([2, 3]);
    expect(last.metric).toBe('grad_norm');
  });

  it('prints the version of package.json with --version and -V', () => {
    const pkg = join(import.meta.dirname, '../../package.json');
    const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = rlwatch([flag]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
  });

  it('names a --db that does not exist instead of making an empty database there', () => {
    const missing = join(tempDir(), 'typo', 'rlwatch.db');
    for (const args of [['runs'], ['alerts'], ['mute', '--for', '1h']]) {
      const r = rlwatch([...args, '--db', missing]);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.startsWith(`rlwatch: ${missing}: no database there yet`), r.stderr).toBe(true);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    expect(existsSync(join(missing, '..'))).toBe(false);
  });

  it('answers mistakes with one clear line and a non-zero exit', () => {
    const unknownRun = rlwatch(['run', 'status', 'nope', '--db', db]);
    expect(unknownRun.status).toBe(1);
    expect(unknownRun.stderr).toBe("rlwatch: unknown run 'nope' (known: grpo-a, trl-b)\n");
    const ambiguous = rlwatch(['run', 'status', '--db', db]);
    expect(ambiguous.stderr).toBe('rlwatch: which run? one of: grpo-a, trl-b\n');
    const unknownMetric = rlwatch(['reward', 'history', 'grpo-a', '--metric', 'accuracy', '--db', db]);
    expect(unknownMetric.status).toBe(1);
    expect(unknownMetric.stderr).toMatch(/^rlwatch: run 'grpo-a' has no metric 'accuracy' \(it logs: .*reward.*\)\n$/);
    const missingDir = rlwatch(['backfill', join(root, 'missing'), '--db', db]);
    expect(missingDir.status).toBe(1);
    expect(missingDir.stderr).toBe(`rlwatch: ${join(root, 'missing')}: cannot read: ENOENT\n`);
    const badLast = rlwatch(['reward', 'history', 'grpo-a', '--last', 'x', '--db', db]);
    expect(badLast.status).toBe(1);
    expect(badLast.stderr).toBe(
      "rlwatch: usage: rlwatch reward history [run] [metric] [last]: last must be a whole number, not 'x'\n",
    );
  });

  it('stops on a bad config, naming the file and the field', () => {
    const config = join(root, 'bad.yaml');
    writeFileSync(config, 'watch:\n  poll: sometimes\n');
    const r = rlwatch(['runs', '--config', config, '--db', db]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^rlwatch: ${config}: watch\\.poll: .*boolean.*\\n$`));
  });

  it('uses RLWATCH_DB when --db is not given', () => {
    const r = rlwatch(['runs', '--json'], { env: { RLWATCH_DB: db } });
    expect(JSON.parse(r.stdout).map((x: { name: string }) => x.name)).toEqual(['grpo-a', 'trl-b']);
  });
});
