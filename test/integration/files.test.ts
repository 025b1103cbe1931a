import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { ensureParent, tempDir } from '../helpers.ts';
import { eventRecord, trainerEvents } from '../tfeventsWriter.ts';
import { rlwatch } from './cli.ts';

/** An HF Trainer output_dir with TensorBoard events and a completions table, a run with only an unrecognised
 * log, and a stray text file beside the events. */
function makeRoot(): string {
  const root = tempDir();
  const put = (rel: string, data: string | Buffer): void => writeFileSync(ensureParent(join(root, rel)), data);
  put(
    'hf/runs/Nov22_15-35-13_gpu01/events.out.tfevents.1763825713.gpu01.4242.0',
    trainerEvents(20, (s) => ({ 'train/reward': s / 20, 'train/loss': 1 / s })),
  );
  put(
    'hf/completions/completions_00020.parquet',
    Buffer.from(
      parquetWriteBuffer({
        columnData: [
          { name: 'step', data: ['20', '20'], type: 'STRING' },
          { name: 'prompt', data: ['2+2?', '2+2?'], type: 'STRING' },
          { name: 'completion', data: ['4', '5'], type: 'STRING' },
          { name: 'accuracy_reward', data: [1, 0], type: 'DOUBLE' },
        ],
      }),
    ),
  );
  put('hf/README.txt', 'Fine-tuned with GRPO on gsm8k.\n');
  put('home-grown/logs/run.log', 'lorem ipsum dolor sit amet, consectetur adipiscing elit\n'.repeat(1300));
  return root;
}

describe('rlwatch files', () => {
  let root: string;
  let db: string;
  beforeAll(() => {
    root = makeRoot();
    db = join(root, 'rlwatch.db');
    const r = rlwatch(['backfill', root, '--db', db]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // backfill names what it did not read
    expect(r.stdout).toContain('\n  not read: hf/README.txt (no known format in what is there yet)\n');
    // a *.log is claimed as captured stdout by its name: one without a metric line is named too
    expect(r.stdout).toContain('\n  not understood: home-grown/logs/run.log (no metric line in 1,300 lines read)\n');
  });

  it('lists the files of each run as JSON, paths relative to the run', () => {
    const r = rlwatch(['files', '--json', '--db', db]);
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.map((x: { run: string }) => x.run)).toEqual(['hf', 'home-grown']);
    expect(report[0].files).toEqual([
      expect.objectContaining({
        path: 'completions/completions_00020.parquet',
        format: 'parquetCompletions',
        lines: 2,
      }),
      expect.objectContaining({
        path: 'runs/Nov22_15-35-13_gpu01/events.out.tfevents.1763825713.gpu01.4242.0',
        format: 'tfEvents',
        records: 20,
        skipped: 0,
      }),
    ]);
    expect(report[0].unread).toEqual([expect.objectContaining({ path: 'README.txt' })]);
    expect(report[1]).toEqual({
      run: 'home-grown',
      files: [expect.objectContaining({ path: 'logs/run.log', format: 'console', lines: 1300, records: 0 })],
      unread: [],
    });
  });

  it('shows one run as text without the server paths, and its data through the other commands', () => {
    const r = rlwatch(['files', 'hf', '--db', db]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('runs/Nov22_15-35-13_gpu01/events.out.tfevents.1763825713.gpu01.4242.0  tfEvents');
    expect(r.stdout).toContain('README.txt  not read: no known format in what is there yet');
    expect(r.stdout).not.toContain(root);
    const history = JSON.parse(rlwatch(['reward', 'history', 'hf', '--json', '--db', db]).stdout);
    expect(history.points.at(-1)).toMatchObject({ step: 20, value: 1 });
    const best = JSON.parse(rlwatch(['examples', 'hf', 'best', '--json', '--db', db]).stdout);
    expect(best).toMatchObject({
      step: 20,
      examples: [{ completion: '4', reward: 1, breakdown: { accuracy_reward: 1 } }],
    });
  });

  it('is said by start once it has read what is there, and a growing event file is read as it grows', async () => {
    const fresh = makeRoot();
    const warnings: string[] = [];
    const app = await startApp({
      config: ConfigSchema.parse({ watch: { poll: true, pollIntervalMs: 100 } }),
      dbPath: join(fresh, 'rlwatch.db'),
      roots: [fresh],
      log: { info: () => {}, warn: (m) => warnings.push(m) },
      terminal: null,
    });
    try {
      expect(warnings).toEqual([
        'not read: hf/README.txt (no known format in what is there yet)',
        'not understood: home-grown/logs/run.log (no metric line in 1,300 lines read)',
      ]);
      const events = join(fresh, 'hf/runs/Nov22_15-35-13_gpu01/events.out.tfevents.1763825713.gpu01.4242.0');
      appendFileSync(events, eventRecord({ step: 21, scalars: { 'train/reward': 1.5 } }));
      const run = app.store.runs.byName('hf')!;
      await expect
        .poll(() => app.store.points.series(run.id, 'reward').at(-1), { timeout: 10_000 })
        .toEqual({
          step: 21,
          epoch: null,
          value: 1.5,
        });
    } finally {
      await app.stop();
    }
  });
});
