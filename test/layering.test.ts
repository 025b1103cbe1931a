import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Folder-level import cycles in src/. A unit is a top-level folder (`store/`) or a file at the root of src/ (`cli`).
 * An import A -> B closes a loop when B's imports lead back to A. The loops of today are pinned so that a new one
 * fails here; remove one and shrink the list.
 */
const SRC = join(import.meta.dirname, '..', 'src');

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

const unitOf = (path: string): string => {
  const parts = relative(SRC, path).split(/[\\/]/);
  return parts.length > 1 ? `${parts[0]}/` : (parts[0] as string).replace(/\.ts$/, '');
};

/** Relative specifiers of static imports and re-exports (`... from '...'`, `import '...'`) and of `import('...')`. */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^import\s*)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** unit -> units it imports, over the files given. */
function unitGraph(paths: string[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const path of paths) {
    const from = unitOf(path);
    for (const [, spec] of readFileSync(path, 'utf8').matchAll(IMPORT)) {
      const to = unitOf(resolve(dirname(path), spec as string));
      if (to === from) continue;
      const out = graph.get(from) ?? new Set<string>();
      graph.set(from, out.add(to));
    }
  }
  return graph;
}

/** The edges `A -> B` of the graph that lie on a cycle (B reaches A), sorted. */
function loopEdges(graph: Map<string, Set<string>>): string[] {
  const reaches = (start: string, goal: string): boolean => {
    const seen = new Set([start]);
    const todo = [start];
    for (let at = todo.pop(); at !== undefined; at = todo.pop()) {
      for (const next of graph.get(at) ?? []) {
        if (next === goal) return true;
        if (seen.has(next)) continue;
        seen.add(next);
        todo.push(next);
      }
    }
    return false;
  };
  return [...graph].flatMap(([a, outs]) => [...outs].filter((b) => reaches(b, a)).map((b) => `${a} -> ${b}`)).sort();
}

/**
 * The imports between folders that close a loop today (38). Most of src/ is one strongly connected knot; the
 * folders that import each other directly are: commands <-> interact (the registry lists the handlers, which take
 * its reply types), commands <-> report, config <-> engine, config <-> platforms, config <-> store, engine <-> store,
 * ingest <-> store (the store takes ingest's record types), interact <-> notify, notify <-> report. lib/ (errors,
 * logging, paths, zod, durations, globs, numbers) imports nothing of src/.
 */
const KNOWN_LOOPS = [
  'commands/ -> config/',
  'commands/ -> engine/',
  'commands/ -> ingest/',
  'commands/ -> interact/',
  'commands/ -> notify/',
  'commands/ -> render/',
  'commands/ -> report/',
  'commands/ -> store/',
  'config/ -> engine/',
  'config/ -> platforms/',
  'config/ -> store/',
  'engine/ -> config/',
  'engine/ -> store/',
  'ingest/ -> store/',
  'interact/ -> commands/',
  'interact/ -> config/',
  'interact/ -> notify/',
  'interact/ -> store/',
  'notify/ -> config/',
  'notify/ -> engine/',
  'notify/ -> interact/',
  'notify/ -> render/',
  'notify/ -> report/',
  'notify/ -> store/',
  'platforms/ -> config/',
  'platforms/ -> engine/',
  'platforms/ -> interact/',
  'platforms/ -> notify/',
  'platforms/ -> render/',
  'platforms/ -> store/',
  'render/ -> engine/',
  'report/ -> commands/',
  'report/ -> config/',
  'report/ -> engine/',
  'report/ -> notify/',
  'report/ -> store/',
  'store/ -> config/',
  'store/ -> ingest/',
];

describe('folder-level import cycles in src/', () => {
  const graph = unitGraph(files(SRC));

  it('no import between folders closes a loop beyond the ones pinned', () => {
    expect(loopEdges(graph)).toEqual(KNOWN_LOOPS);
  });

  it('lib/ imports nothing of src/ outside itself: every folder may use it', () => {
    expect([...(graph.get('lib/') ?? [])]).toEqual([]);
  });

  it('the check sees static, type-only, re-exported and dynamic imports, and the loops they close', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export * from './c.ts';",
      "import './d.ts';",
      "  const e = await import('./e.ts');",
      "import { z } from 'zod/mini';",
    ].join('\n');
    expect([...text.matchAll(IMPORT)].map((m) => m[1])).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './e.ts']);
    // store/contract.ts takes ingest's record types
    expect(graph.get('store/')?.has('ingest/')).toBe(true);
    const made = new Map([
      ['a/', new Set(['b/'])],
      ['b/', new Set(['c/'])],
      ['c/', new Set(['a/', 'd/'])],
      ['d/', new Set<string>()],
    ]);
    expect(loopEdges(made)).toEqual(['a/ -> b/', 'b/ -> c/', 'c/ -> a/']);
  });
});
