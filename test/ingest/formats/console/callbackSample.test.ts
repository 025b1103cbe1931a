/**
 * samples/grpo-callback/train.log (the output of the R1-Zero GRPO logging guide's ComprehensiveLoggingCallback,
 * generated) through the real
 * Ingestor into SQLite, compared with the generator's own numbers.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../../src/store/sqlite/store.ts';
import { CALLBACK_STORY, DEFAULT_FILE, callbackRun } from '../../../../scripts/make-callback-sample.ts';
import { pipeline } from '../../../fixtures/pipeline.ts';

const SAMPLES = resolve(DEFAULT_FILE, '../..');
const RUN = 'grpo-callback';
const { steps, text } = callbackRun();

let store: Store;
let runId: number;

beforeAll(async () => {
  const { store: opened, ingestor } = pipeline({ ingest: { maxLineBytes: 1024 * 1024, examplesPerStep: 2 } });
  store = opened;
  const out = await ingestor.ingest(DEFAULT_FILE, SAMPLES);
  expect(out).toMatchObject({ run: RUN, format: 'console', skips: {} });
  runId = store.runs.byName(RUN)!.id;
  return () => store.close();
});

const series = (metric: string) => new Map(store.points.series(runId, metric).map((p) => [p.step, p.value]));

describe('the logging callback sample', () => {
  it('is what the generator writes (regenerate with scripts/make-callback-sample.ts)', () => {
    expect(readFileSync(DEFAULT_FILE, 'utf8')).toBe(text);
  });

  it('stores one step per Step line, every block value under that step', () => {
    const logged = steps.map((s) => s.step);
    expect(logged).toEqual(Array.from({ length: CALLBACK_STORY.steps / 2 }, (_, i) => 2 * (i + 1)));
    const checks: Array<[string, (s: (typeof steps)[number]) => number]> = [
      ['loss', (s) => s.loss],
      ['lr', (s) => s.lr],
      ['epoch', (s) => s.epoch],
      ['grpo/policy_loss', (s) => s.policy],
      ['grpo/value_loss', (s) => s.value],
      ['entropy', (s) => s.entropy],
      ['reward', (s) => s.total],
      ['format_compliance_pct', (s) => s.formatPct],
      ['avg_response_length', (s) => s.responseLength],
      ['reasoning_indicators', (s) => s.reasoningIndicators],
      ['step_time', (s) => s.stepTime],
      ['gpu_memory_gb', (s) => s.gpuGb],
      ['gpu_memory_reserved_gb', (s) => s.gpuReservedGb],
      ['ram_usage_pct', (s) => s.ramPct],
      ['cpu_usage_pct', (s) => s.cpuPct],
    ];
    for (const fn of CALLBACK_STORY.rewardFunctions) {
      checks.push([`rewards/${fn}`, (s) => s.rewards[fn]!.mean], [`rewards/${fn}/std`, (s) => s.rewards[fn]!.std]);
      checks.push([`rewards/${fn}/min`, (s) => s.rewards[fn]!.min], [`rewards/${fn}/max`, (s) => s.rewards[fn]!.max]);
    }
    for (const [metric, expected] of checks) {
      const stored = series(metric);
      expect([...stored.keys()], metric).toEqual(logged);
      for (const s of steps) expect(stored.get(s.step), `${metric}@${s.step}`).toBe(expected(s));
    }
  });

  it('shows the collapse: reward std 0 and entropy near 0 on the collapsed steps only', () => {
    const std = series('rewards/accuracy/std');
    const entropy = series('entropy');
    const [from, to] = CALLBACK_STORY.collapse;
    for (const s of steps) {
      const collapsed = s.step >= from && s.step <= to;
      expect(std.get(s.step) === 0 && entropy.get(s.step)! < 0.01, `step ${s.step}`).toBe(collapsed);
    }
  });

  it('keeps the best and worst generation of each example step with its breakdown', () => {
    for (const s of steps.filter((x) => x.examples)) {
      const kept = store.examples.atOrBefore(runId, s.step);
      expect(kept.every((e) => e.step === s.step)).toBe(true);
      const { best, worst } = s.examples!;
      expect(kept[0]).toMatchObject({ completion: best.content, reward: best.total, breakdown: best.breakdown });
      expect(kept.at(-1)).toMatchObject({ completion: worst.content, reward: worst.total, breakdown: worst.breakdown });
    }
  });

  it('reads a hand-picked block as printed', () => {
    // Step   50 | Loss: ... the first example step: its lines, typed from the file
    const block = text.slice(text.indexOf('Step   50 |'), text.indexOf('Step   52 |'));
    expect(block).toContain('GENERATION EXAMPLES');
    const loss = Number(/Loss: ([\d.]+)/.exec(block)![1]);
    const acc = /accuracy\s+:\s+([\d.]+) ± ([\d.]+) \[\s*([\d.]+),\s*([\d.]+)\]/.exec(block)!;
    expect(series('loss').get(50)).toBe(loss);
    expect(series('rewards/accuracy').get(50)).toBe(Number(acc[1]));
    expect(series('rewards/accuracy/std').get(50)).toBe(Number(acc[2]));
  });
});
