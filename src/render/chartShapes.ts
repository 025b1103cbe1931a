/**
 * Charts drawn from a compiled shape. Compiling the vega-lite spec and parsing the vega spec cost about as much as
 * drawing, yet the alert cards' charts come in few shapes: the same layers, sizes and axis formats, other rows and
 * texts. So a chart's spec is split into its shape (the spec with each layer's rows named and each title and y range
 * a placeholder) and what fills it; a shape is compiled and parsed once, its placeholders turned into vega signals,
 * and each chart's view is given its rows and signals. The SVG is the one the whole path draws
 * (test/render/chartShapes.test.ts compares the two over a varied set of charts).
 */
import * as vega from 'vega';
import type { TopLevelSpec } from 'vega-lite';
import { compileVegaLite, useDejaVuTextMetrics, viewOptions } from './vegaEnv.ts';

/** Shapes kept parsed; the least recently used is dropped. */
const KEEP_SHAPES = 32;

/** A value of the chart put in its spec's place by a signal. */
interface Filled {
  signal: string;
  placeholder: string | number;
  value: string | number;
}

/** A chart's spec split into its shape (`key`, `spec`) and what fills it. */
interface Template {
  key: string;
  spec: TopLevelSpec;
  data: Array<{ name: string; values: unknown[] }>;
  filled: Filled[];
}

/** Parsed shapes, most recently used last. */
const shapes = new Map<string, vega.Runtime>();

/**
 * Renders a chart's vega-lite spec (`lineChartSpec`'s: layers of inline rows) to SVG with vega's headless view. Each
 * chart gets a view of its own: a view drawn again keeps the axis ticks the charts share in the order it first drew
 * them, which changes the SVG.
 */
export async function specToSvg(spec: TopLevelSpec): Promise<string> {
  useDejaVuTextMetrics();
  const t = templateOf(spec);
  const view = new vega.View(runtimeOf(t), viewOptions());
  try {
    for (const f of t.filled) view.signal(f.signal, f.value);
    for (const d of t.data) view.data(d.name, d.values);
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** The shape parsed, from the shapes kept or now. */
function runtimeOf(t: Template): vega.Runtime {
  let runtime = shapes.get(t.key);
  if (runtime) shapes.delete(t.key);
  else runtime = vega.parse(compiledShape(t));
  shapes.set(t.key, runtime);
  if (shapes.size > KEEP_SHAPES) shapes.delete(shapes.keys().next().value!);
  return runtime;
}

/** The shape's vega spec: its placeholders are signals, declared with the spec's own. */
function compiledShape(t: Template): vega.Spec {
  const vg = compileVegaLite(t.spec).spec;
  const found = new Set<string>();
  const bySignal = new Map<string | number, string>(t.filled.map((f) => [f.placeholder, f.signal]));
  const swap = (node: unknown): unknown => {
    if (typeof node === 'string' || typeof node === 'number') {
      const signal = bySignal.get(node);
      if (signal === undefined) {
        if (typeof node === 'string' && node.includes(PLACEHOLDER)) {
          throw new Error(`chart shape: a placeholder inside compiled text (${node.slice(0, 80)})`);
        }
        return node;
      }
      found.add(signal);
      return { signal };
    }
    if (Array.isArray(node)) return node.map(swap);
    if (node && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, swap(v)]));
    }
    return node;
  };
  const out = swap(vg) as vega.Spec;
  for (const f of t.filled) {
    if (!found.has(f.signal)) throw new Error(`chart shape: ${f.signal} is not in the compiled spec`);
  }
  out.signals = [...(out.signals ?? []), ...t.filled.map((f) => ({ name: f.signal, value: f.value }))];
  return out;
}

const PLACEHOLDER = 'rlwatch:placeholder:';
/** numbers no chart spec holds besides the y range put in their place */
const NUMBER_PLACEHOLDER = 7_654_321.125;

/**
 * Splits the spec: each `data: {values}` becomes a named source, and the chart's title and subtitle, each axis title and
 * each explicit scale domain a placeholder (what is left is the same for every chart of the shape, and is its key).
 */
export function templateOf(spec: TopLevelSpec): Template {
  const data: Template['data'] = [];
  const filled: Filled[] = [];
  const fill = (value: string | number): string | number => {
    const signal = `rlwatch_fill_${filled.length}`;
    const placeholder =
      typeof value === 'string' ? `${PLACEHOLDER}${filled.length}` : NUMBER_PLACEHOLDER + filled.length;
    filled.push({ signal, placeholder, value });
    return placeholder;
  };
  const walk = (node: unknown, key: string | null): unknown => {
    if (Array.isArray(node)) return node.map((x) => walk(x, null));
    if (!node || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === 'data' && v && typeof v === 'object' && Array.isArray((v as { values?: unknown }).values)) {
        const name = `rlwatch_data_${data.length}`;
        data.push({ name, values: (v as { values: unknown[] }).values });
        out[k] = { name };
      } else if (
        typeof v === 'string' &&
        ((key === 'title' && (k === 'text' || k === 'subtitle')) || (key === 'axis' && k === 'title'))
      ) {
        out[k] = fill(v);
      } else if (key === 'scale' && k === 'domain' && Array.isArray(v) && v.every((x) => typeof x === 'number')) {
        out[k] = v.map((x: number) => fill(x));
      } else {
        out[k] = walk(v, k);
      }
    }
    return out;
  };
  const templated = walk(spec, null) as TopLevelSpec;
  return { key: JSON.stringify(templated), spec: templated, data, filled };
}
