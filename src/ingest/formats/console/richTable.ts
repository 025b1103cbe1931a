/**
 * TRL's `log_completions` console tables (rich), one panel per logging step:
 *   ╭──────── Step 5 ────────╮
 *   │ ┏━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━┓ │
 *   │ ┃ Prompt ┃ Completion ┃ accuracy_reward ┃ Advantage ┃ │
 *   │ ┡━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━┩ │
 *   │ │ user … │ We are …   │            1.00 │      0.35 │ │   (a cell wraps over many lines)
 *   │ ├────────┼────────────┼─────────────────┼───────────┤ │
 *   │ └────────┴────────────┴─────────────────┴───────────┘ │
 *   ╰────────────────────────╯
 * Each row becomes a generation example of that step: the columns between Completion and Advantage are the
 * reward functions (their sum is the reward, each one a breakdown entry); columns after Advantage (parsed
 * answers, solutions) are not scores.
 */
import type { ParseResult } from '../../records.ts';
import { parseNumber } from '../../metricNames.ts';
import { NOISE, exampleKey, shortHash } from '../common.ts';

const PANEL_TOP = '╭';
const PANEL_BOTTOM = '╰';
const HEAD_SEP = '┃';
const CELL_SEP = '│';

export class RichTable {
  active = false;
  private step: number | undefined;
  private columns: string[][] = [];
  private cells: string[][] = [];

  /** undefined: not a table line (and no table open) */
  feed(line: string): ParseResult | undefined {
    if (!this.active) {
      const top = line.indexOf(PANEL_TOP);
      if (top < 0 || !line.includes('──', top)) return undefined;
      this.open(line.slice(top));
      return NOISE;
    }
    const t = line.trim();
    if (!t.startsWith(CELL_SEP) && !t.startsWith(PANEL_BOTTOM)) {
      // the panel was cut off (a killed job, a trimmed log): this line is the log again
      this.active = false;
      return undefined;
    }
    if (t.startsWith(PANEL_BOTTOM)) {
      const row = this.flush();
      this.active = false;
      return row;
    }
    const inner = stripPanel(t);
    if (inner.startsWith(HEAD_SEP)) {
      addLine(this.columns, splitCells(inner, HEAD_SEP));
      this.cells = this.columns.map(() => []);
    } else if (inner.startsWith(CELL_SEP)) {
      const parts = splitCells(inner, CELL_SEP);
      if (parts.length === this.columns.length) addLine(this.cells, parts);
    } else if (inner.startsWith('├') || inner.startsWith('└')) {
      return this.flush();
    }
    return NOISE;
  }

  private open(top: string): void {
    this.active = true;
    this.columns = [];
    this.cells = [];
    const at = top.indexOf('Step ');
    const n = at < 0 ? NaN : parseInt(top.slice(at + 5), 10);
    this.step = Number.isInteger(n) && n >= 0 ? n : undefined;
  }

  private flush(): ParseResult {
    // rich folds a long column name over lines; reward function names are identifiers, so no spaces between
    const names = this.columns.map((lines) => lines.join('').trim());
    const text = this.cells.map((lines) => lines.join('\n').trim());
    this.cells = this.columns.map(() => []);
    const completionAt = names.indexOf('Completion');
    if (completionAt < 0 || text.every((t) => t === '')) return NOISE;
    const advantageAt = names.indexOf('Advantage');
    const breakdown: Record<string, number> = {};
    let reward = 0;
    let scored = 0;
    for (let c = completionAt + 1; c < (advantageAt < 0 ? names.length : advantageAt); c++) {
      const value = parseNumber(text[c]!);
      if (value === undefined) continue;
      breakdown[names[c]!] = value;
      reward += value;
      scored++;
    }
    if (scored === 0) return NOISE;
    const advantage = advantageAt < 0 ? undefined : parseNumber(text[advantageAt]!);
    if (advantage !== undefined) breakdown['advantage'] = advantage;
    const promptAt = names.indexOf('Prompt');
    const prompt = promptAt < 0 ? undefined : text[promptAt];
    const completion = text[completionAt]!;
    return {
      kind: 'example',
      record: {
        // GRPO groups repeat a prompt, and their completions often share the first 200 characters
        key: exampleKey(`${shortHash(prompt ?? '')}:${shortHash(completion)}`, completion),
        completion,
        reward,
        breakdown,
        ...(prompt === undefined ? {} : { prompt }),
        ...(this.step === undefined ? {} : { step: this.step }),
      },
    };
  }
}

/** `│ ┃ a ┃ b ┃ │` -> `┃ a ┃ b ┃`: the panel's own border around the table. */
function stripPanel(t: string): string {
  let s = t;
  if (s.startsWith(CELL_SEP)) s = s.slice(1);
  if (s.endsWith(CELL_SEP)) s = s.slice(0, -1);
  return s.trim();
}

function splitCells(inner: string, sep: string): string[] {
  const parts = inner.split(sep);
  return parts.slice(1, -1);
}

function addLine(into: string[][], parts: string[]): void {
  parts.forEach((p, i) => {
    (into[i] ??= []).push(p.trim());
  });
}
