import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failureScanner } from '../../src/ingest/failures.ts';
import type { EventRecord } from '../../src/ingest/records.ts';
import { realLogsDir } from '../helpers.ts';

const scanAll = (lines: readonly string[]): EventRecord[] => {
  const scan = failureScanner();
  return lines.map((l) => scan(l)).filter((e): e is EventRecord => e !== null);
};

const ESC = '\x1b';
const ray = (actor: string, text: string): string => `${ESC}[36m(${actor})${ESC}[0m ${text}`;

describe('failure scanner', () => {
  it('reads a Python traceback to its exception line, with the lines before it as evidence', () => {
    const lines = [
      "{'loss': 0.0123, 'grad_norm': 0.5, 'reward': 0.4, 'epoch': 0.1}",
      'Traceback (most recent call last):',
      '  File "/app/train.py", line 88, in <module>',
      '    trainer.train()',
      '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1553, in _wrapped_call_impl',
      '    return forward_call(*args, **kwargs)',
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB',
    ];
    const [e, ...more] = scanAll(lines);
    expect(more).toEqual([]);
    expect(e).toMatchObject({ kind: 'error', fatal: true, text: lines[6] });
    expect(e!.title).toMatch(/^CUDA out of memory: Tried to allocate 2\.00 GiB/);
    expect(e!.context).toEqual(lines.slice(0, 6));
  });

  it('keeps at most 20 lines of evidence, the newest', () => {
    const filler = Array.from({ length: 30 }, (_, i) => `line ${i}`);
    const [e] = scanAll([...filler, 'Killed']);
    expect(e).toMatchObject({ kind: 'error', fatal: true, title: expect.stringMatching(/^Killed/) });
    expect(e!.context).toEqual(filler.slice(10));
  });

  it('follows tracebacks of interleaved Ray actors separately, without their ANSI prefixes', () => {
    const events = scanAll([
      ray('WorkerDict pid=71, ip=10.0.0.2', 'Traceback (most recent call last):'),
      ray('TaskRunner pid=12', 'step:3 - actor/pg_loss:0.01 - critic/score/mean:0.5'),
      ray('WorkerDict pid=71, ip=10.0.0.2', '  File "/verl/workers/fsdp_workers.py", line 500, in update_actor'),
      ray(
        'WorkerDict pid=71, ip=10.0.0.2',
        'ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.',
      ),
    ]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'error',
      fatal: false,
      title: 'ActorDiedError: The actor died unexpectedly before finishing this task.',
    });
    expect(events[0]!.text).not.toContain(ESC);
  });

  it('recognises an NCCL watchdog timeout in a Ray actor line, a torchrun ChildFailedError and a segfault', () => {
    const events = scanAll([
      ray(
        'WorkerDict pid=3301, ip=10.1.2.3',
        '[rank3]:[E1122 03:14:07.123456 3301 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLGATHER, NumelIn=1, NumelOut=8, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.',
      ),
      'Traceback (most recent call last):',
      '  File "/usr/local/bin/torchrun", line 8, in <module>',
      '    sys.exit(main())',
      'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ',
      'Segmentation fault (core dumped)',
      '/var/spool/slurmd/job42/slurm_script: line 17: 90210 Killed                  python train.py',
    ]);
    expect(events.map((e) => [e.title, e.fatal])).toEqual([
      ['NCCL watchdog timeout', true],
      ['torchrun: a worker process failed (ChildFailedError)', true],
      ['Segmentation fault', true],
      ['Killed (out of host memory, or by the scheduler)', true],
    ]);
  });

  it('turns trainer warnings into warning events named by kind', () => {
    const events = scanAll([
      'UserWarning: KL divergence is starting to become negative: -0.01 - this might be a precursor for failed training.',
      ray(
        'TaskRunner pid=9',
        'num_gen_batches=12 >= max_num_gen_batches=10. Generated too many. Please check if your data are too difficult.',
      ),
      "node7:3301:3399 [0] NCCL WARN Cuda failure 'out of memory'",
      'a RuntimeError mentioned in prose is nothing',
      '│ completion: Segmentation fault and Killed are words │',
    ]);
    expect(events.map((e) => [e.kind, e.title])).toEqual([
      ['warning', 'KL divergence is negative'],
      ['warning', 'DAPO generated too many batches'],
      ['warning', 'NCCL warning'],
    ]);
  });

  it('finds nothing that pages in the real console logs: their tracebacks were survived (non-fatal)', () => {
    const logs = [
      'verl-dapo-gui-cursor/verl_demo.log',
      'verl-ppo-qwen3-slurm/slurm-6231820.out',
      'verl-ppo-gsm8k-dstack/verl_demo.log',
      'trl-grpo-tf5-gsm8k/run_1.log',
      'trl-asyncgrpo-gsm8k/run_1.log',
      'minimind-grpo/logs/grpo.log',
    ];
    const found: EventRecord[] = [];
    for (const rel of logs) {
      const text = readFileSync(join(realLogsDir(), rel), 'utf8');
      found.push(...scanAll(text.split(/\r\n|\n|\r/)));
    }
    // the GUI-cursor run printed TypeError tracebacks from a worker and trained on
    expect(found.filter((e) => e.fatal)).toEqual([]);
    expect(found.filter((e) => e.kind === 'error').map((e) => e.title)).toContain(
      'TypeError: cannot unpack non-iterable NoneType object',
    );
  });

  it('looks at the head of a very long line only', () => {
    const scan = failureScanner();
    expect(scan(`${'x'.repeat(1 << 20)} Watchdog caught collective operation timeout`)).toBeNull();
    expect(scan(`Killed${' '.repeat(1 << 20)}`)).toMatchObject({ fatal: true });
  });
});
