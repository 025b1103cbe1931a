/**
 * Writes a suite run as its trainer would: TRL's `trainer_state.json` (whole, once: a backfill reads it as the
 * Trainer left it), verl's console `.log` (the console logger's `step:N - key:value - ...` lines behind Ray's
 * coloured actor prefix, between progress bars), or flat JSON lines. Numbers are written as Python's json and
 * repr write them (`NaN`, `nan`), so a NaN reaches rlwatch as the trainer would have printed it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Format, SuiteRun } from './runs.ts';

/** canonical name → the key each format logs it under (absent: the format does not log it) */
export const KEYS: Record<Format, Record<string, string>> = {
  trl: {
    loss: 'loss',
    grad_norm: 'grad_norm',
    lr: 'learning_rate',
    reward: 'reward',
    reward_std: 'reward_std',
    kl: 'kl',
    entropy: 'entropy',
    completion_length: 'completions/mean_length',
    clipped_ratio: 'completions/clipped_ratio',
    frac_zero_std: 'frac_reward_zero_std',
    pg_clipfrac: 'clip_ratio/region_mean',
    step_time: 'step_time',
    epoch: 'epoch',
  },
  verl: {
    entropy: 'actor/entropy',
    value_loss: 'critic/vf_loss',
    loss: 'actor/pg_loss',
    kl: 'actor/kl_loss',
    pg_clipfrac: 'actor/pg_clipfrac',
    ppo_kl: 'actor/ppo_kl',
    grad_norm: 'actor/grad_norm',
    lr: 'actor/lr',
    reward: 'critic/score/mean',
    completion_length: 'response_length/mean',
    clipped_ratio: 'response_length/clip_ratio',
    step_time: 'timing_s/step',
  },
  jsonl: {
    epoch: 'epoch',
    reward: 'reward',
    reward_std: 'reward_std',
    frac_zero_std: 'frac_zero_std',
    kl: 'kl',
    entropy: 'entropy',
    grad_norm: 'grad_norm',
    loss: 'loss',
    lr: 'lr',
    completion_length: 'completion_length',
    clipped_ratio: 'clipped_ratio',
    step_time: 'step_time',
  },
};

/** The (canonical, logged key) pairs a run writes: its format's keys, and TRL's per-function rewards. */
export function loggedKeys(run: SuiteRun): Array<[canonical: string, key: string]> {
  const pairs: Array<[string, string]> = [];
  for (const [canonical, key] of Object.entries(KEYS[run.format]))
    if (run.data.metrics.has(canonical)) pairs.push([canonical, key]);
  if (run.format === 'trl') {
    for (const fn of run.params.fns ?? []) {
      pairs.push([`rewards/${fn}`, `rewards/${fn}/mean`], [`rewards/${fn}/std`, `rewards/${fn}/std`]);
    }
  }
  return pairs;
}

/** Python's json.dumps of a float */
const pyJson = (v: number): string =>
  Number.isNaN(v) ? 'NaN' : v === Infinity ? 'Infinity' : v === -Infinity ? '-Infinity' : String(v);
/** Python's repr of a float, as verl's console logger prints it */
const pyRepr = (v: number): string =>
  Number.isNaN(v) ? 'nan' : v === Infinity ? 'inf' : v === -Infinity ? '-inf' : String(v);

function trainerState(run: SuiteRun): string {
  const keys = loggedKeys(run);
  const n = run.data.steps.length;
  const entries = run.data.steps.map((step, i) => {
    const fields = keys.map(([c, k]) => [k, run.data.metrics.get(c)![i]!] as const);
    fields.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `    {\n${[...fields, ['step', step] as const].map(([k, v]) => `      ${JSON.stringify(k)}: ${pyJson(v)}`).join(',\n')}\n    }`;
  });
  const epoch = run.data.metrics.get('epoch')![n - 1]!;
  if (run.finished) {
    // the Trainer's closing summary: the run ended of itself
    entries.push(
      `    {\n      "epoch": ${pyJson(epoch)},\n      "step": ${run.data.steps[n - 1]},\n      "total_flos": 0.0,\n` +
        `      "train_loss": 0.0123,\n      "train_runtime": ${(n * run.params.stepTime).toFixed(4)},\n` +
        `      "train_samples_per_second": 1.3,\n      "train_steps_per_second": 0.04\n    }`,
    );
  }
  return (
    `{\n  "best_global_step": null,\n  "best_metric": null,\n  "best_model_checkpoint": null,\n  "epoch": ${pyJson(epoch)},\n` +
    `  "eval_steps": 500,\n  "global_step": ${run.data.steps[n - 1]},\n  "is_hyper_param_search": false,\n` +
    `  "is_local_process_zero": true,\n  "is_world_process_zero": true,\n  "log_history": [\n${entries.join(',\n')}\n  ],\n` +
    `  "logging_steps": 1,\n  "max_steps": ${run.params.steps},\n  "num_input_tokens_seen": 0,\n` +
    `  "num_train_epochs": ${Math.ceil(run.params.epochs)},\n  "save_steps": 100,\n  "total_flos": 0.0,\n` +
    `  "train_batch_size": ${run.params.batch / run.params.group},\n  "trial_name": null,\n  "trial_params": null\n}\n`
  );
}

const ansi = (text: string): string => `\x1b[36m(TaskRunner pid=48213)\x1b[0m ${text}`;

function verlConsole(run: SuiteRun): string {
  const total = run.params.steps;
  const keys = loggedKeys(run);
  const stepsPerEpoch = total / run.params.epochs;
  const lines = [
    ansi(
      "{'actor_rollout_ref': {'actor': {'optim': {'lr': " + run.params.peakLr + ", 'lr_warmup_steps_ratio': 0.05}},",
    ),
    ansi(`              'rollout': {'n': ${run.params.group}, 'response_length': ${run.params.maxLength}}},`),
    ansi(` 'data': {'train_batch_size': ${run.params.batch / run.params.group}},`),
    ansi(
      ` 'trainer': {'project_name': 'suite', 'experiment_name': '${run.name}', 'total_epochs': ${run.params.epochs},`,
    ),
    ansi("             'logger': ['console']}}"),
    ansi(`Total training steps: ${total}`),
  ];
  const bar = (k: number): string =>
    ansi(
      `Training Progress:   ${Math.floor((100 * k) / total)}%|          | ${k}/${total} [00:00<00:00, ${run.params.stepTime.toFixed(2)}s/it]`,
    );
  run.data.steps.forEach((step, i) => {
    const parts = [`step:${step}`, 'global_seqlen/mean:73216.5'];
    for (const [c, k] of keys) parts.push(`${k}:${pyRepr(run.data.metrics.get(c)![i]!)}`);
    parts.push(`training/global_step:${step}`, `training/epoch:${Math.floor((step - 1) / stepsPerEpoch)}`);
    lines.push(ansi(parts.join(' - ')), bar(step));
  });
  lines.push(...(run.tail ?? []));
  return `${lines.join('\n')}\n`;
}

function flatJsonl(run: SuiteRun): string {
  const keys = loggedKeys(run);
  const out: string[] = [];
  run.data.steps.forEach((step, i) => {
    const fields = [
      `"step": ${step}`,
      ...keys.map(([c, k]) => `${JSON.stringify(k)}: ${pyJson(run.data.metrics.get(c)![i]!)}`),
    ];
    out.push(`{${fields.join(', ')}}`);
  });
  return `${out.join('\n')}\n`;
}

/** Writes the run under `root/<name>/` and returns the file's path. A TRL run that did not finish left its state in
 * its last checkpoint's folder (the Trainer writes one at each save; it belongs to the run above it). */
export function writeRun(root: string, run: SuiteRun): string {
  const dir = join(root, run.name);
  let file: string;
  let text: string;
  if (run.format === 'trl') {
    file = run.finished
      ? join(dir, 'trainer_state.json')
      : join(dir, `checkpoint-${run.data.steps.at(-1)}`, 'trainer_state.json');
    text = trainerState(run);
  } else if (run.format === 'verl') {
    file = join(dir, 'train.log');
    text = verlConsole(run);
  } else {
    file = join(dir, 'metrics.jsonl');
    text = flatJsonl(run);
  }
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, text);
  return file;
}
