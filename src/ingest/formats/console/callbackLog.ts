/**
 * The R1-Zero GRPO logging guide's ComprehensiveLoggingCallback: a `Step N | Loss: .. | LR: .. | Epoch: ..` line,
 * then blocks that belong to that step until the next one:
 *            GRPO | Policy: 1.2340 | Value: 0.5670 | Entropy: 0.0890
 *   Reward Breakdown:
 *     accuracy       :  0.750 ± 0.433 [ 0.000,  1.000]      -> rewards/accuracy, /std, /min, /max
 *     total          :  2.250 (combined)                    -> reward
 *   Generation Quality:
 *     Format compliance:  87.5% (7/8)                       -> format_compliance_pct
 *   Performance:
 *     GPU memory:     4.32GB (reserved: 5.12GB)             -> gpu_memory_gb, gpu_memory_reserved_gb
 * and every few steps a GENERATION EXAMPLES block (best and worst content with its reward breakdown), read as
 * examples of the current step. `±` may arrive as `Â±` or `¬±` (UTF-8 read as Latin-1 / Mac Roman).
 */
import type { ParseResult } from '../../records.ts';
import { canonicalName, parseNumber } from '../../metricNames.ts';
import { NOISE, exampleKey, metricResult } from '../common.ts';
import { readKeyValueLine } from './keyValue.ts';

type Section = 'none' | 'rewards' | 'quality' | 'performance';

const STEP_LINE = /^Step\s+\d+\s*\|/;
const EXAMPLE_HEAD = /^(BEST|WORST) EXAMPLE\b/;
/** what a section's unit turns into in the metric name */
const UNIT_SUFFIX: Readonly<Record<string, string>> = { '%': '_pct', GB: '_gb', MB: '_mb' };

interface OpenExample {
  which: string;
  content: string[];
  breakdown: Record<string, number>;
  inBreakdown: boolean;
}

export class CallbackLog {
  private step: number | undefined;
  private section: Section = 'none';
  private inExamples = false;
  private example: OpenExample | undefined;

  /** undefined: not a line of this callback */
  feed(line: string): ParseResult | undefined {
    if (this.inExamples) return this.feedExamples(line);
    if (line.trim() === '') {
      // a blank line ends a section (a progress bar after it is indented too)
      this.section = 'none';
      return undefined;
    }
    if (STEP_LINE.test(line)) return this.stepLine(line);
    if (line.trim() === 'GENERATION EXAMPLES') {
      this.inExamples = true;
      this.section = 'none';
      return NOISE;
    }
    if (this.step === undefined) return undefined;
    const t = line.trim();
    if (t === 'Reward Breakdown:') return this.enter('rewards');
    if (t === 'Generation Quality:') return this.enter('quality');
    if (t === 'Performance:') return this.enter('performance');
    if (t.startsWith('GRPO |')) return this.grpoLine(t);
    // section lines are indented; anything else ends the block
    if (this.section === 'none' || !/^\s/.test(line)) {
      this.section = 'none';
      return undefined;
    }
    return this.section === 'rewards' ? this.rewardLine(t) : this.measureLine(t);
  }

  private enter(section: Section): ParseResult {
    this.section = section;
    return NOISE;
  }

  private stepLine(line: string): ParseResult | undefined {
    const kv = readKeyValueLine(line, parseNumber);
    if (kv?.step === undefined) return undefined;
    this.step = kv.step;
    this.section = 'none';
    const values = new Map<string, number>();
    for (const [key, value] of kv.pairs) values.set(canonicalName(key), value);
    if (kv.epoch !== undefined) values.set('epoch', kv.epoch);
    return metricResult(values, this.step);
  }

  /** `GRPO | Policy: 1.2340 | Value: 0.5670 | Entropy: 0.0890`: the parts of the loss */
  private grpoLine(t: string): ParseResult {
    const kv = readKeyValueLine(t.slice(6), parseNumber);
    if (kv === undefined || kv.pairs.length === 0) return NOISE;
    const values = new Map<string, number>();
    for (const [key, value] of kv.pairs) {
      const k = key.toLowerCase();
      values.set(k === 'entropy' ? 'entropy' : `grpo/${k}_loss`, value);
    }
    return metricResult(values, this.step);
  }

  /** `accuracy : 0.750 ± 0.433 [ 0.000, 1.000]` or `total : 2.250 (combined)` */
  private rewardLine(t: string): ParseResult {
    const colon = t.indexOf(':');
    if (colon <= 0) return NOISE;
    const name = t.slice(0, colon).trim();
    const tokens = plusMinus(t.slice(colon + 1))
      .split(/[\s,[\]]+/)
      .filter((x) => x !== '');
    const mean = parseNumber(tokens[0] ?? '');
    if (mean === undefined) return NOISE;
    const values = new Map<string, number>();
    if (name === 'total') {
      values.set('reward', mean);
      return metricResult(values, this.step);
    }
    const base = `rewards/${name}`;
    values.set(base, mean);
    let i = 1;
    if (tokens[i] === '±') {
      const std = parseNumber(tokens[i + 1] ?? '');
      if (std !== undefined) values.set(`${base}/std`, std);
      i += 2;
    }
    const min = parseNumber(tokens[i] ?? '');
    const max = parseNumber(tokens[i + 1] ?? '');
    if (min !== undefined && max !== undefined) {
      values.set(`${base}/min`, min);
      values.set(`${base}/max`, max);
    }
    return metricResult(values, this.step);
  }

  /** `Avg think length:  89.2 chars`, `GPU memory: 4.32GB (reserved: 5.12GB)`, `RAM usage: 12.45GB (62.3%)` */
  private measureLine(t: string): ParseResult {
    const colon = t.indexOf(':');
    if (colon <= 0 || !/^[A-Za-z]/.test(t)) return NOISE;
    const label = slug(t.slice(0, colon));
    const rest = t.slice(colon + 1).trim();
    const paren = rest.indexOf('(');
    const values = new Map<string, number>();
    const main = measure(paren < 0 ? rest : rest.slice(0, paren));
    if (main) values.set(label + main.suffix, main.value);
    if (paren >= 0) {
      const inner = rest.slice(paren + 1, rest.lastIndexOf(')') > paren ? rest.lastIndexOf(')') : undefined);
      const innerColon = inner.indexOf(':');
      const extra = measure(innerColon < 0 ? inner : inner.slice(innerColon + 1));
      // `(7/8)` is a count, not a measure
      if (extra && !inner.includes('/')) {
        const name = innerColon < 0 ? label : `${label}_${slug(inner.slice(0, innerColon))}`;
        values.set(name + extra.suffix, extra.value);
      }
    }
    return values.size === 0 ? NOISE : metricResult(values, this.step);
  }

  private feedExamples(line: string): ParseResult | undefined {
    const t = line.trim();
    const head = EXAMPLE_HEAD.exec(t);
    const rule = t.length >= 10 && (/^=+$/.test(t) || /^-+$/.test(t));
    if (STEP_LINE.test(line) || (!this.example && !head && !rule)) {
      // between examples only rules and example heads appear: anything else (a new step, a job that died
      // mid-block) ends the block and is read as usual
      this.inExamples = false;
      this.example = undefined;
      return this.feed(line);
    }
    if (head || rule) {
      const done = this.closeExample();
      if (head) this.example = { which: head[1]!.toLowerCase(), content: [], breakdown: {}, inBreakdown: false };
      // the closing rule of the block: `=====` after an example
      else if (t.startsWith('=') && done !== undefined) this.inExamples = false;
      return done ?? NOISE;
    }
    const ex = this.example;
    if (!ex) return NOISE;
    if (!ex.inBreakdown && t === 'Reward breakdown:') ex.inBreakdown = true;
    else if (ex.inBreakdown) {
      const colon = t.indexOf(':');
      const value = colon > 0 ? parseNumber(t.slice(colon + 1)) : undefined;
      if (value !== undefined) ex.breakdown[t.slice(0, colon).trim()] = value;
    } else ex.content.push(ex.content.length === 0 ? line.replace(/^\s*Content:\s?/, '') : line);
    return NOISE;
  }

  private closeExample(): ParseResult | undefined {
    const ex = this.example;
    this.example = undefined;
    if (!ex) return undefined;
    const { total, ...breakdown } = ex.breakdown;
    const completion = ex.content.join('\n').trim();
    const reward = total ?? Object.values(breakdown).reduce((a, b) => a + b, 0);
    return {
      kind: 'example',
      record: {
        key: exampleKey(`${this.step ?? ''}:${ex.which}`, completion),
        completion,
        reward,
        breakdown,
        ...(this.step === undefined ? {} : { step: this.step }),
      },
    };
  }
}

/** `¬±` / `Â±` (mis-decoded) and `+-` / `+/-` (ASCII) as `±`, with spaces around it. */
function plusMinus(s: string): string {
  return s.replace(/[Â¬]?±|\+\/?-/g, ' ± ');
}

function slug(label: string): string {
  return label
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');
}

/** `87.5%` -> 87.5 `_pct`; `4.32GB` -> 4.32 `_gb`; `3.24s`, `145.3 chars`, `2.14 per response` -> the number. */
function measure(text: string): { value: number; suffix: string } | undefined {
  const t = text.trim();
  let end = 0;
  while (end < t.length && /[-+\d.eE]/.test(t[end]!)) end++;
  const value = parseNumber(t.slice(0, end));
  if (value === undefined) return undefined;
  const unit = t.slice(end).trim().split(' ')[0] ?? '';
  return { value, suffix: UNIT_SUFFIX[unit] ?? '' };
}
