/**
 * What vega and vega-lite need around them to draw rlwatch's charts in Node: a compile that leaves `Set.prototype`
 * as it found it, a loader that loads nothing, and text measured as DejaVu Sans draws it.
 */
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

/**
 * vega-lite defines `Set.prototype.toJSON` when it loads, for its own hashing, and other libraries break on
 * it (a chat client's event emitter fails to load after it). The definition is taken off the prototype at once
 * and put back only for the synchronous span of a compile.
 */
const vegaLiteSetToJSON = Object.getOwnPropertyDescriptor(Set.prototype, 'toJSON');
delete (Set.prototype as { toJSON?: unknown }).toJSON;

export function compileVegaLite(spec: TopLevelSpec): ReturnType<typeof compile> {
  if (vegaLiteSetToJSON) Object.defineProperty(Set.prototype, 'toJSON', vegaLiteSetToJSON);
  try {
    return compile(spec);
  } finally {
    delete (Set.prototype as { toJSON?: unknown }).toJSON;
  }
}

/** Refuses every load: charts carry their data inline, so vega never needs files or the network. */
export const offlineLoader: vega.Loader = {
  load: (uri: string) => Promise.reject(new Error(`rlwatch charts do not load external resources (${uri})`)),
  sanitize: (uri: string) => Promise.reject(new Error(`rlwatch charts do not load external resources (${uri})`)),
  http: (uri: string) => Promise.reject(new Error(`rlwatch charts do not load external resources (${uri})`)),
  file: (uri: string) => Promise.reject(new Error(`rlwatch charts do not load external resources (${uri})`)),
};

/** The options of every view that draws a chart: headless, offline, quiet. */
export const viewOptions = (): vega.ViewOptions => ({ renderer: 'none', loader: offlineLoader, logLevel: vega.Error });

/*
 * Text measurement. Without the `canvas` package vega guesses every character as 0.8 em wide, which
 * is ~25% too wide for DejaVu Sans: titles get cut short and axes get too much room. Like vl-convert,
 * we give vega a better `textMetrics.width`: the advance widths of DejaVu Sans (regular and bold) for
 * printable ASCII, in thousandths of an em, measured with resvg; other characters count 0.7 em.
 */
// prettier-ignore
const DEJAVU_REGULAR = [
  318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636,
  636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 709, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863,
  748, 787, 603, 787, 695, 635, 595, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635,
  615, 344, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 395, 521, 392, 634, 592, 818, 592, 592, 525, 636,
  337, 636, 838,
];
// prettier-ignore
const DEJAVU_BOLD = [
  348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696, 696, 696,
  696, 696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775, 637, 995,
  837, 850, 733, 850, 770, 680, 703, 812, 774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500, 675, 716, 593, 716,
  678, 405, 716, 712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652, 582, 712,
  365, 712, 838,
];

interface TextItem {
  text?: unknown;
  fontSize?: number;
  fontWeight?: string | number;
}

/** Width in pixels of `text` (or the item's own text) in DejaVu Sans at the item's size and weight. */
export function dejaVuTextWidth(item: TextItem, text?: unknown): number {
  const value = text === undefined ? item.text : text;
  if (value === null || value === undefined) return 0;
  const str = Array.isArray(value) ? value.join(' ') : String(value);
  const size = typeof item.fontSize === 'number' ? item.fontSize : 11;
  const weight = item.fontWeight;
  const bold =
    weight === 'bold' ||
    weight === 'bolder' ||
    (typeof weight === 'number' && weight >= 600) ||
    (typeof weight === 'string' && Number(weight) >= 600);
  const table = bold ? DEJAVU_BOLD : DEJAVU_REGULAR;
  let units = 0;
  for (let i = 0; i < str.length; i++) {
    const c = str.charCodeAt(i);
    units += c >= 32 && c < 127 ? (table[c - 32] as number) : 700;
  }
  return (units * size) / 1000;
}

let textMetricsInstalled = false;

/** Points vega's (module-global) text measurement at {@link dejaVuTextWidth}, unless a canvas measures text. */
export function useDejaVuTextMetrics(): void {
  if (textMetricsInstalled) return;
  textMetricsInstalled = true;
  const metrics = (vega as unknown as { textMetrics?: { width: unknown; estimateWidth: unknown } }).textMetrics;
  // Only replace vega's guess; a real canvas (if one is ever installed) measures better.
  if (metrics && metrics.width === metrics.estimateWidth) metrics.width = dejaVuTextWidth;
}
