/**
 * Where each metric should sit over a report's window (the GRPO preset's ranges and the config's own), and how a
 * range is written.
 */
import type { Config } from '../config/schema.ts';

/**
 * Where a metric should sit over the report's window. `absolute`: fixed numbers (the table of a GRPO training
 * analysis of Qwen2.5-Coder-1.5B on OCaml problems, verl and TRL docs). `baseline`: factors of the run's own early
 * median, for metrics whose level depends on the model and task. `reward_cv` is not logged: it is reward_std /
 * |reward| per record.
 */
export interface ExpectedRange {
  metric: string;
  /** `milestones`: at least the line from 0 at epoch 0 through the preset's milestones for the metric (the
   * training analysis: reward > 0.20 by epoch 0.5, > 0.35 by 1.0), flat after the last; without epochs,
   * `baseline` with min */
  basis: 'absolute' | 'baseline' | 'milestones';
  min?: number;
  max?: number;
  /** the knowledge entry (src/engine/presets/knowledge.ts) that explains a value below / above the range */
  low?: string;
  high?: string;
  source: string;
  /** factors of the early median used instead when the run's early median lies outside the absolute range */
  fallback?: { min?: number; max?: number };
}

/** The GRPO preset's ranges, most important first (the order findings and actions are listed in). */
export const GRPO_RANGES: readonly ExpectedRange[] = [
  {
    metric: 'frac_zero_std',
    basis: 'absolute',
    max: 0.1,
    high: 'mode_collapse',
    source: 'GRPO training analysis: healthy < 0.10',
  },
  {
    metric: 'reward',
    basis: 'milestones',
    min: 1,
    low: 'reward_low',
    source: 'GRPO training analysis: on track for the reward milestones',
  },
  {
    metric: 'reward_cv',
    basis: 'absolute',
    max: 0.3,
    high: 'reward_cv',
    source: 'GRPO training analysis: healthy CV < 0.30',
  },
  {
    metric: 'entropy',
    basis: 'absolute',
    min: 0.1,
    max: 0.2,
    low: 'entropy_range',
    high: 'entropy_range',
    source: 'GRPO training analysis: 0.10-0.20 for code generation',
    fallback: { min: 0.25, max: 4 },
  },
  {
    metric: 'grad_norm',
    basis: 'absolute',
    min: 0.01,
    max: 0.5,
    low: 'grad_norm_range',
    high: 'grad_norm_range',
    source: 'GRPO training analysis: 0.01-0.5',
    fallback: { min: 0.1, max: 10 },
  },
  {
    metric: 'clipped_ratio',
    basis: 'absolute',
    max: 0.1,
    high: 'truncation',
    source: 'verl best practices: above 0.1 truncates too much',
  },
  { metric: 'kl', basis: 'absolute', max: 10, high: 'kl_out_of_range', source: 'TRL docs: KL within about 10' },
  {
    metric: 'completion_length',
    basis: 'baseline',
    min: 0.5,
    max: 3,
    low: 'length_collapse',
    high: 'length_explosion',
    source: 'ours: 0.5x-3x its early median (length_collapse, length_explosion)',
  },
];

const PRESET_RANGES = { grpo: GRPO_RANGES, none: [] } as const;

/** The ranges in force: the preset's, with `report.ranges` of the config replacing or adding (absolute). */
export function rangesFor(config: Pick<Config, 'alerts' | 'report'> | undefined): ExpectedRange[] {
  const base = [...PRESET_RANGES[config?.alerts.preset ?? 'grpo']];
  for (const [metric, o] of Object.entries(config?.report.ranges ?? {})) {
    const at = base.findIndex((r) => r.metric === metric);
    const own: ExpectedRange = {
      ...(at >= 0 ? base[at] : {}),
      metric,
      basis: 'absolute',
      min: o.min,
      max: o.max,
      fallback: undefined,
      source: 'config report.ranges',
    };
    if (at >= 0) base[at] = own;
    else base.push(own);
  }
  return base;
}

/** `0.01-0.5`, `< 0.1`, `> 0.2`, with `x` for a baseline: `0.5x-3x early median (120)`. */
export function describeRange(r: ExpectedRange, baseline?: number): string {
  const base = baseline === undefined ? '' : ` (${+baseline.toPrecision(3)})`;
  if (r.basis === 'milestones')
    return baseline === undefined ? 'on track for the milestones' : `>= early median${base}`;
  const f = (v: number): string => (r.basis === 'baseline' ? `${v}x` : String(v));
  const span =
    r.min !== undefined && r.max !== undefined
      ? `${f(r.min)}-${f(r.max)}`
      : r.max !== undefined
        ? `< ${f(r.max)}`
        : `> ${f(r.min ?? 0)}`;
  return r.basis === 'baseline' ? `${span} early median${base}` : span;
}
