/** The rule book in force for a config: its preset (grpo or none), changed and extended by `alerts.rules`. */
import type { Config } from '../../config/schema.ts';
import { RuleBook } from '../rules.ts';
import { GRPO_PRESET } from './grpo.ts';

const PRESETS = { grpo: GRPO_PRESET, none: [] } as const;

/** The rules in force for a config: its preset, changed and extended by `alerts.rules`. */
export function ruleBookFor(config: Config): RuleBook {
  return RuleBook.build(PRESETS[config.alerts.preset], config.alerts.rules);
}
