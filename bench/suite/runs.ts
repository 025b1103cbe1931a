/**
 * The labelled runs: 10 healthy and 14 failures, each failure an overlay on a healthy run from its onset step,
 * with the rule ids that name its cause. Written from how training goes wrong, not from the rules' settings.
 */
import { generateHealthy, passRate, type Generated, type HealthyParams } from './generate.ts';
import { ar1, binomialShare, rng, type Rng } from './noise.ts';

export type Format = 'trl' | 'verl' | 'jsonl';

export interface Label {
  kind: string;
  /** the first step of the failure (for a crash: the last step logged) */
  onset?: number;
  sudden?: boolean;
  /** a gradual failure: the first step at which it has the size that makes it a failure (a decline of 10%, the
   * size a trend must have; KL ×10; frac_zero_std past 0.5); the delay target counts from there */
  significant?: number;
  /** rule ids that name the cause */
  rules: readonly string[];
}

export interface SuiteRun {
  name: string;
  format: Format;
  label: Label;
  params: HealthyParams;
  data: Generated;
  /** console lines after the last step (a crash) */
  tail?: readonly string[];
  /** the trainer wrote its end-of-training summary (a run that finished) */
  finished: boolean;
}

const BASE: Omit<HealthyParams, 'steps' | 'seed'> = {
  batch: 256,
  group: 8,
  scale: '01',
  phi: 0.6,
  df: 4,
  gradMedian: 0.8,
  entropy0: 0.6,
  length0: 320,
  lengthDrift: 0.2,
  maxLength: 1024,
  kl0: 1e-4,
  klGrowth: 8,
  peakLr: 1e-6,
  stepTime: 24,
  epochs: 2,
  top: 0.68,
  rise: 0.45,
  tau: 0.25,
};

const healthyRuns: Array<{ name: string; format: Format; p: Partial<HealthyParams> & Pick<HealthyParams, 'steps'> }> = [
  {
    name: 'healthy-trl-qwen1.5b-gsm8k',
    format: 'trl',
    p: { steps: 1500, batch: 128, fns: ['accuracy_reward'], phi: 0.5, df: 3 },
  },
  {
    name: 'healthy-trl-two-rewards',
    format: 'trl',
    p: {
      steps: 3000,
      batch: 512,
      fns: ['accuracy_reward', 'format_reward'],
      phi: 0.7,
      gradMedian: 0.35,
      top: 0.6,
      rise: 0.4,
    },
  },
  {
    name: 'healthy-trl-rm-hundreds',
    format: 'trl',
    p: {
      steps: 2000,
      batch: 64,
      scale: 'hundreds',
      fns: ['rm_score'],
      top: 430,
      rise: 310,
      phi: 0.4,
      df: 2.5,
      gradMedian: 1.6,
    },
  },
  {
    name: 'healthy-trl-phi09',
    format: 'trl',
    p: { steps: 4000, batch: 96, fns: ['accuracy_reward'], phi: 0.9, df: 5, tau: 0.35, lengthDrift: -0.15 },
  },
  {
    name: 'healthy-verl-grpo-32b',
    format: 'verl',
    p: {
      steps: 1200,
      batch: 1024,
      group: 16,
      gradMedian: 3.5,
      entropy0: 0.45,
      phi: 0.8,
      df: 3,
      stepTime: 240,
      length0: 900,
      maxLength: 4096,
      epochs: 3,
    },
  },
  {
    name: 'healthy-verl-ppo-critic',
    format: 'verl',
    p: {
      steps: 800,
      batch: 256,
      critic: true,
      phi: 0.3,
      df: 5,
      epochs: 15,
      stepTime: 10,
      length0: 140,
      maxLength: 256,
      lengthDrift: -0.1,
    },
  },
  {
    name: 'healthy-verl-neg-reward',
    format: 'verl',
    p: { steps: 2500, batch: 512, scale: 'neg', top: -0.22, rise: 0.6, phi: 0.6, df: 2.5, gradMedian: 1.2 },
  },
  {
    name: 'healthy-jsonl-50k',
    format: 'jsonl',
    p: {
      steps: 50_000,
      batch: 64,
      group: 4,
      phi: 0.85,
      df: 3,
      gradMedian: 0.5,
      tau: 0.2,
      epochs: 5,
      klGrowth: 30,
      stepTime: 4,
      length0: 180,
      maxLength: 512,
    },
  },
  {
    name: 'healthy-jsonl-neg',
    format: 'jsonl',
    p: { steps: 5000, batch: 32, group: 4, scale: 'neg', top: -0.3, rise: 0.5, phi: 0.5, df: 3.5, gradMedian: 0.3 },
  },
  {
    name: 'healthy-jsonl-hundreds',
    format: 'jsonl',
    p: {
      steps: 10_000,
      batch: 128,
      scale: 'hundreds',
      top: 180,
      rise: 140,
      phi: 0.75,
      df: 4,
      gradMedian: 2.2,
      epochs: 3,
    },
  },
];

const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** The last step a run logged before it failed and stopped: its arrays cut after it. */
function cutAfter(g: Generated, lastIndex: number): void {
  const n = Math.min(g.steps.length, lastIndex + 1);
  g.steps.length = n;
  for (const v of g.metrics.values()) v.length = n;
}

const col = (g: Generated, name: string): number[] => {
  const c = g.metrics.get(name);
  if (!c) throw new Error(`no ${name} in the generated run`);
  return c;
};

interface Failure {
  name: string;
  format: Format;
  p: Partial<HealthyParams> & Pick<HealthyParams, 'steps'>;
  kind: string;
  /** 0-based index of the onset */
  onset: number;
  sudden: boolean;
  /** records after the onset at which a gradual failure is significant (Label.significant); default 0 */
  significantAfter?: number;
  rules: readonly string[];
  // biome-ignore lint/suspicious/noConfusingVoidType: most failures return nothing; a few return the lines they add
  apply: (g: Generated, o: number, r: Rng, p: HealthyParams) => readonly string[] | void;
}

const WORKER = 'WorkerDict pid=48977';
const ansi = (who: string, text: string): string => `\x1b[36m(${who})\x1b[0m ${text}`;

const OOM_TAIL = [
  "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'data.train_batch_size=256', 'actor_rollout_ref.rollout.n=8']",
  'Traceback (most recent call last):',
  '  File "/opt/verl/verl/trainer/main_ppo.py", line 39, in main',
  '    run_ppo(config)',
  '  File "/opt/verl/verl/trainer/main_ppo.py", line 71, in run_ppo',
  '    ray.get(runner.run.remote(config))',
  'ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor() (pid=48977, ip=10.0.3.17)',
  '  File "/opt/verl/verl/workers/actor/dp_actor.py", line 412, in update_policy',
  '    loss.backward()',
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB. GPU 0 has a total capacity of 79.11 GiB of which 2.19 GiB is free. Including non-PyTorch memory, this process has 76.91 GiB memory in use.',
];

const NCCL_TAIL = [
  ansi(
    WORKER,
    '[rank3]:[E1128 03:12:44.512345 48977 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.',
  ),
  ansi(
    WORKER,
    '[rank3]:[E1128 03:12:44.513002 48977 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 3] Exception (either an error before or timeout) detected by watchdog at work: 48211, last enqueued NCCL work: 48212, last completed NCCL work: 48210.',
  ),
  ansi(
    WORKER,
    '[rank3]:[E1128 03:12:44.513120 48977 ProcessGroupNCCL.cpp:630] [Rank 3] To avoid data inconsistency, we are taking the entire process down.',
  ),
];

const failures: Failure[] = [
  {
    name: 'fail-crash-oom',
    format: 'verl',
    kind: 'crash',
    p: { steps: 1400, gradMedian: 2.5, phi: 0.5, length0: 700, maxLength: 2048 },
    onset: 911,
    sudden: true,
    rules: ['run_crashed'],
    apply: (g, o) => {
      cutAfter(g, o);
      return OOM_TAIL;
    },
  },
  {
    name: 'fail-nccl-timeout',
    format: 'verl',
    kind: 'nccl_timeout',
    p: { steps: 1000, batch: 512, phi: 0.7, df: 3 },
    onset: 642,
    sudden: true,
    rules: ['run_crashed', 'run_stalled'],
    apply: (g, o) => {
      cutAfter(g, o);
      return NCCL_TAIL;
    },
  },
  {
    // fp16 overflow: the loss and grads turn NaN and stay NaN; the user stops it 40 steps later
    name: 'fail-nan-loss',
    format: 'jsonl',
    kind: 'nan_loss',
    p: { steps: 1200, batch: 128, phi: 0.5, df: 3 },
    onset: 733,
    sudden: true,
    rules: ['non_finite'],
    apply: (g, o) => {
      cutAfter(g, o + 40);
      for (let i = o; i < g.steps.length; i++) {
        col(g, 'loss')[i] = NaN;
        col(g, 'grad_norm')[i] = NaN;
        if (i > o) {
          col(g, 'entropy')[i] = NaN;
          col(g, 'reward')[i] = 0;
        }
      }
    },
  },
  {
    // a bad batch: the norm jumps 50×, stays unstable, and the reward loses a third before it settles
    name: 'fail-grad-explosion',
    format: 'verl',
    kind: 'grad_explosion',
    p: { steps: 1600, gradMedian: 1.1, phi: 0.6 },
    onset: 1004,
    sudden: true,
    rules: ['grad_explosion'],
    apply: (g, o, r) => {
      const grad = col(g, 'grad_norm');
      const reward = col(g, 'reward');
      const ref = reward[o - 1]!;
      for (let i = o; i < g.steps.length; i++) {
        const k = i - o;
        grad[i] = grad[i]! * (k < 3 ? 50 : k < 30 ? 3 + 5 * r() : 1.5);
        reward[i] = reward[i]! - 0.3 * ref * (1 - Math.exp(-k / 10));
      }
    },
  },
  {
    // a reward model swapped under a running job (or a data shard of hard prompts): −40% at once
    name: 'fail-reward-drop',
    format: 'verl',
    kind: 'reward_drop',
    p: { steps: 1300, batch: 512, phi: 0.7, df: 3 },
    onset: 820,
    sudden: true,
    rules: ['reward_trend'],
    apply: (g, o) => {
      const reward = col(g, 'reward');
      for (let i = o; i < g.steps.length; i++) reward[i] = reward[i]! * 0.6;
    },
  },
  {
    name: 'fail-reward-decline',
    format: 'jsonl',
    kind: 'reward_decline',
    p: { steps: 1500, batch: 256, phi: 0.8, df: 3.5 },
    // 10% down (the size a trend must have) 120 records in
    onset: 900,
    sudden: false,
    significantAfter: 120,
    rules: ['reward_trend'],
    apply: (g, o) => {
      const reward = col(g, 'reward');
      for (let i = o; i < g.steps.length; i++) reward[i] = reward[i]! * (1 - 0.25 * Math.min(1, (i - o) / 300));
    },
  },
  {
    // a short rise, then flat far below where the task should get (0.12 of 1) for hundreds of steps
    name: 'fail-plateau-low',
    format: 'jsonl',
    kind: 'plateau',
    p: { steps: 900, batch: 256, top: 0.12, rise: 0.09, tau: 0.02, phi: 0.5, epochs: 1.5 },
    onset: 54,
    sudden: false,
    rules: ['reward_plateau', 'milestone_reward_epoch_0.5', 'milestone_reward_epoch_1', 'stop_reward_epoch_1'],
    apply: () => {},
  },
  {
    name: 'fail-entropy-collapse',
    format: 'trl',
    kind: 'entropy_collapse',
    p: { steps: 1200, batch: 128, fns: ['accuracy_reward'], entropy0: 0.5 },
    onset: 700,
    sudden: false,
    rules: ['entropy_collapse', 'entropy_drop', 'mode_collapse'],
    apply: (g, o, r, p) => {
      const entropy = col(g, 'entropy');
      const fzs = col(g, 'frac_zero_std');
      const groups = Math.round(p.batch / p.group);
      for (let i = o; i < g.steps.length; i++) {
        const k = i - o;
        entropy[i] = Math.max(0.004, entropy[i]! * Math.exp(-k / 40));
        fzs[i] = binomialShare(r, groups, 0.05 + 0.45 * (1 - Math.exp(-k / 80)));
        for (const name of ['reward_std', 'rewards/accuracy_reward/std'])
          col(g, name)[i] = col(g, name)[i]! * (1 - 0.5 * (1 - Math.exp(-k / 80)));
      }
    },
  },
  {
    // the policy learns that longer is better: lengths run to the cap, more and more completions are cut
    name: 'fail-runaway-length',
    format: 'trl',
    kind: 'runaway_length',
    p: { steps: 1100, batch: 128, fns: ['accuracy_reward'], length0: 380, maxLength: 1024 },
    onset: 600,
    sudden: false,
    rules: ['truncation', 'truncation_no_signal', 'length_explosion', 'runaway_completions'],
    apply: (g, o, r, p) => {
      const len = col(g, 'completion_length');
      const clipped = col(g, 'clipped_ratio');
      const time = col(g, 'step_time');
      const reward = col(g, 'reward');
      for (let i = o; i < g.steps.length; i++) {
        const grow = 1 + 2 * (1 - Math.exp(-(i - o) / 150));
        const before = len[i]!;
        len[i] = Math.min(0.97 * p.maxLength, before * grow);
        const cut = binomialShare(r, p.batch, clamp((len[i]! / p.maxLength - 0.45) * 1.6, 0, 1));
        clipped[i] = Math.max(clipped[i]!, cut);
        time[i] = time[i]! * (len[i]! / before);
        reward[i] = reward[i]! * (1 - 0.6 * cut);
        col(g, 'rewards/accuracy_reward')[i] = reward[i]!;
      }
    },
  },
  {
    // every generation of a group the same: the groups' rewards stop varying, the advantage (and grad) vanish
    name: 'fail-mode-collapse',
    format: 'trl',
    kind: 'mode_collapse',
    p: { steps: 1000, batch: 256, fns: ['accuracy_reward'], epochs: 1 },
    // past 0.5 (the learning-metrics guide's "converging too strongly") 98 records in
    onset: 500,
    sudden: false,
    significantAfter: 98,
    rules: [
      'mode_collapse',
      'milestone_frac_zero_std_epoch_0.5',
      'stop_frac_zero_std_epoch_1',
      'no_learning',
      'zero_signal_too_easy',
      'zero_signal_too_hard',
      'entropy_collapse',
      'entropy_drop',
    ],
    apply: (g, o, r, p) => {
      const fzs = col(g, 'frac_zero_std');
      const groups = Math.round(p.batch / p.group);
      for (let i = o; i < g.steps.length; i++) {
        const q = 0.05 + 0.92 * Math.min(1, (i - o) / 200);
        fzs[i] = binomialShare(r, groups, q);
        for (const name of ['reward_std', 'rewards/accuracy_reward/std', 'grad_norm'])
          col(g, name)[i] = col(g, name)[i]! * (1 - 0.95 * fzs[i]!);
        col(g, 'entropy')[i] = col(g, 'entropy')[i]! * (1 - 0.6 * fzs[i]!);
      }
    },
  },
  {
    // the policy walks away from the reference: KL ×100 over 250 steps
    name: 'fail-kl-blowup',
    format: 'jsonl',
    kind: 'kl_blowup',
    p: { steps: 1300, batch: 256, kl0: 5e-4, klGrowth: 4, phi: 0.5 },
    // ×10 (an order of magnitude) 125 records in
    onset: 800,
    sudden: false,
    significantAfter: 125,
    rules: ['kl_blowup', 'kl_out_of_range'],
    apply: (g, o) => {
      const kl = col(g, 'kl');
      for (let i = o; i < g.steps.length; i++) kl[i] = kl[i]! * 100 ** Math.min(1, (i - o) / 250);
    },
  },
  {
    // the format reward is gamed while accuracy falls; the total still rises
    name: 'fail-reward-hacking',
    format: 'trl',
    kind: 'reward_hacking',
    p: { steps: 1000, batch: 256, fns: ['accuracy_reward', 'format_reward'] },
    onset: 560,
    sudden: false,
    rules: ['reward_hacking'],
    apply: (g, o, r, p) => {
      const n = g.steps.length;
      const za = ar1(r, n, 0.6, p.df);
      const zf = ar1(r, n, 0.6, p.df);
      for (let i = 0; i < n; i++) {
        const k = Math.max(0, Math.min(1, (i - o) / 200));
        const accLevel = i < o ? 0.2 + 0.18 * (1 - Math.exp(-i / (o / 3))) : 0.38 - 0.28 * k;
        const fmtLevel = i < o ? 0.17 : 0.17 + 0.45 * k;
        const acc = passRate(accLevel, p.batch, za[i]!, 1);
        const fmt = passRate(fmtLevel, p.batch, zf[i]!, 1);
        col(g, 'rewards/accuracy_reward')[i] = acc.mean;
        col(g, 'rewards/accuracy_reward/std')[i] = acc.std;
        col(g, 'rewards/format_reward')[i] = fmt.mean;
        col(g, 'rewards/format_reward/std')[i] = fmt.std;
        col(g, 'reward')[i] = acc.mean + fmt.mean;
      }
    },
  },
  {
    // a batch of outlier returns: the critic's loss jumps 20× and settles over ~10 steps
    name: 'fail-value-loss-spike',
    format: 'verl',
    kind: 'value_loss_spike',
    p: { steps: 900, batch: 256, critic: true, epochs: 10, stepTime: 12, length0: 150, maxLength: 256 },
    onset: 604,
    sudden: true,
    rules: ['value_loss_spike'],
    apply: (g, o) => {
      const v = col(g, 'value_loss');
      for (let i = o; i < Math.min(g.steps.length, o + 15); i++)
        v[i] = v[i]! * (1 + 19 * Math.exp(-Math.max(0, i - o - 2) / 4));
    },
  },
  {
    // a degraded node (a GPU throttling, a slow NVLink): each step takes 5× as long from then on
    name: 'fail-slow-steps',
    format: 'trl',
    kind: 'slow_steps',
    p: { steps: 900, batch: 128, fns: ['accuracy_reward'] },
    onset: 530,
    sudden: true,
    rules: ['slow_steps'],
    apply: (g, o) => {
      const t = col(g, 'step_time');
      for (let i = o; i < g.steps.length; i++) t[i] = t[i]! * 5;
    },
  },
];

/** Every run of the suite, generated (deterministic: each run's seed is fixed). `scale` < 1 shortens every run
 * (the tests' small version), keeping onsets at the same share of the run. */
export function buildSuite(opts: { scale?: number } = {}): SuiteRun[] {
  const scale = opts.scale ?? 1;
  const out: SuiteRun[] = [];
  let seed = 7001;
  for (const h of healthyRuns) {
    const params: HealthyParams = { ...BASE, ...h.p, steps: Math.max(60, Math.round(h.p.steps * scale)), seed: seed++ };
    out.push({
      name: h.name,
      format: h.format,
      label: { kind: 'healthy', rules: [] },
      params,
      data: generateHealthy(params),
      finished: true,
    });
  }
  for (const f of failures) {
    const params: HealthyParams = { ...BASE, ...f.p, steps: Math.max(60, Math.round(f.p.steps * scale)), seed: seed++ };
    const data = generateHealthy(params);
    const o = Math.round(f.onset * (params.steps / f.p.steps));
    const tail = f.apply(data, o, rng(params.seed + 1_000_000), params) ?? undefined;
    out.push({
      name: f.name,
      format: f.format,
      label: {
        kind: f.kind,
        onset: data.steps[Math.min(o, data.steps.length - 1)]!,
        sudden: f.sudden,
        ...(f.significantAfter !== undefined && {
          significant: data.steps[Math.min(o + Math.round(f.significantAfter * scale), data.steps.length - 1)]!,
        }),
        rules: f.rules,
      },
      params,
      data,
      tail,
      finished: false,
    });
  }
  return out;
}
