/**
 * The whole GRPO preset over every run in ../shared/real-logs, backfilled as `rlwatch backfill` does (the real
 * ingestor into a real SQLite file, history evaluated without announcing, then one tick). What a practitioner
 * would want from each run: runs that trained normally get no critical; a run with no learning
 * signal gets one page for that one cause; a noisy PPO reward that dips and recovers is no warning, a fall that
 * holds is.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { backfill } from '../../src/ingest/backfill.ts';
import type { AlertRow } from '../../src/store/alerts.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { realLogsDir } from '../helpers.ts';

const T0 = Date.UTC(2025, 0, 1, 3, 0, 0);
let fired: Map<string, AlertRow[]>;

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
  const {
    store,
    engine,
    ingestor: history,
  } = pipeline({
    ingest: { maxLineBytes: 1 << 23, examplesPerStep: 2 },
    engine: { repeatIntervalMs: 4 * 3_600_000, targets: ['console'], announce: false },
  });
  await backfill(history, [realLogsDir()], { depth: 8 });
  vi.setSystemTime(T0 + 3 * 60_000);
  engine.tick();
  fired = new Map(
    store.runs.list().map((r) => [
      r.name,
      store.alerts
        .list({ runId: r.id, all: true })
        .reverse()
        .filter((a) => a.fired_step !== null),
    ]),
  );
  store.close();
  vi.useRealTimers();
}, 120_000);

const atLeast = (severity: 'warning' | 'critical') => (a: AlertRow) =>
  a.severity === 'critical' || (severity === 'warning' && a.severity === 'warning');
const keys = (alerts: readonly AlertRow[]) => alerts.map((a) => `${a.rule} ${a.severity}`);

describe('the preset on every real run', () => {
  it('pages two criticals in the whole corpus: mode_collapse of the run with no learning signal, the job that died', () => {
    const criticals = [...fired].flatMap(([run, alerts]) =>
      alerts.filter(atLeast('critical')).map((a) => `${run} ${a.rule}`),
    );
    // logic-rl-verl-crash ends in `AssertionError: failed to get register_center_actor` before step 1
    expect(criticals.sort()).toEqual(['logic-rl-verl-crash run_crashed', 'trl-grpo-finance-poison mode_collapse']);
  });

  it('trl-grpo-finance-poison: the milestones it misses for that cause are info, naming mode_collapse', () => {
    const alerts = fired.get('trl-grpo-finance-poison')!;
    const milestones = alerts.filter((a) => a.rule.startsWith('milestone_') || a.rule.startsWith('stop_'));
    expect(milestones.length).toBe(5);
    for (const m of milestones) {
      expect(m.severity).toBe('info');
      expect(m.summary).toMatch(/; mode_collapse critical since step \d+$/);
    }
    expect(keys(alerts.filter(atLeast('warning')))).toEqual(['mode_collapse critical']);
  });

  it('deepspeed-chat-ppo: one reward warning, for the fall that holds (the file: ~3.9 over steps 100-124, ~2.2 over 125-149)', () => {
    // the reward as the log prints it, one `average reward score` per step from step 0 on
    const file = join(realLogsDir(), 'deepspeed-chat-ppo', 'actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log');
    const rewards = [...readFileSync(file, 'utf8').matchAll(/average reward score: (-?[\d.]+)/g)].map((m) =>
      Number(m[1]),
    );
    const meanOf = (a: number, b: number) => rewards.slice(a, b).reduce((s, v) => s + v, 0) / (b - a);
    expect(meanOf(125, 150) / meanOf(100, 125)).toBeLessThan(0.7);
    const warnings = fired.get('deepspeed-chat-ppo')!.filter(atLeast('warning'));
    expect(keys(warnings)).toEqual(['reward_trend warning']);
    expect(warnings[0]!.fired_step).toBeGreaterThanOrEqual(110);
    expect(warnings[0]!.fired_step).toBeLessThanOrEqual(150);
    expect(warnings[0]!.summary).toMatch(/^reward ↘ /);
  });

  it('warnings elsewhere: the truncation of verl-ppo-qwen3-slurm (clip ratio from 0.75) and of the Unsloth run (clipped ratio 1, every completion at its 512-token cap, from step 80), an early length_collapse of minimind', () => {
    const warned = [...fired]
      .filter(([run]) => !['deepspeed-chat-ppo', 'trl-grpo-finance-poison', 'logic-rl-verl-crash'].includes(run))
      .flatMap(([run, alerts]) => alerts.filter(atLeast('warning')).map((a) => `${run} ${a.rule}`));
    expect(warned.sort()).toEqual([
      'minimind-grpo length_collapse',
      'unsloth-grpo-chaos-economy-tf5 reward_saturated',
      'unsloth-grpo-chaos-economy-tf5 reward_saturated',
      'unsloth-grpo-chaos-economy-tf5 truncation',
      'verl-ppo-qwen3-slurm truncation',
    ]);
  });
});
