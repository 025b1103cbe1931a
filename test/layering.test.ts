import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The folders of src/ in one order: a folder imports only from itself and the folders before it. A unit is a
 * top-level folder (`store/`) or a file at the root of src/ (by its name, without `.ts`).
 *
 * lib, types, config, store, ingest, engine, render, report, notify, commands, interact, platforms, app, cli: the
 * pipeline's order, with two choices:
 * - store/ before ingest/: the ingestor writes batches to the store (its interfaces, its error codes, its skip
 *   counts), while the store needs of ingest only the records it is given, and those types live in store/.
 * - commands/ before interact/: the registry in interact/ lists the handlers and imports them, so it sits above
 *   them; what handlers share (the context, run lookup, times) is commands/' own, and the Reply they return is
 *   render/'s, since notify/ redacts replies and front ends draw them.
 *
 * No loop between folders can form without an import that goes backwards, so pinning those pins the loops too.
 * The ones left (EXCEPTIONS) say why they stay; the list only shrinks: a new backward import fails here, and so
 * does an exception that no longer exists.
 */
const ORDER = [
  'lib/',
  'types/',
  'config/',
  'store/',
  'ingest/',
  'engine/',
  'render/',
  'report/',
  'notify/',
  'commands/',
  'interact/',
  'platforms/',
  'app/',
  'cli/',
];

/** The imports that still go backwards, by folder, each with why it stays. */
const EXCEPTIONS: Record<string, string> = {
  // each platform owns its section (one folder per platform); a schema assembled later, in app/, would leave every
  // ConfigSchema.parse before the assembly (the defaults commands and tests parse) refusing or lacking the sections
  'config/ -> platforms/': "the config's schema takes each platform's section from the platform list",
};

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

/** `A -> B` between units -> the files of A that import B, over the files given. */
function unitEdges(paths: string[]): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const path of paths) {
    const from = unitOf(path);
    for (const [, spec] of readFileSync(path, 'utf8').matchAll(IMPORT)) {
      const to = unitOf(resolve(dirname(path), spec as string));
      if (to === from) continue;
      const key = `${from} -> ${to}`;
      const by = edges.get(key) ?? new Set<string>();
      edges.set(key, by.add(relative(SRC, path)));
    }
  }
  return edges;
}

/** The edges that go to a unit later in `order` than their own, sorted. */
const backwards = (edges: Iterable<string>, order: readonly string[]): string[] =>
  [...edges]
    .filter((e) => {
      const [from, to] = e.split(' -> ') as [string, string];
      return order.indexOf(to) > order.indexOf(from);
    })
    .sort();

describe('the folders of src/ in one order', () => {
  const edges = unitEdges(files(SRC));
  const units = new Set([...edges.keys()].flatMap((e) => e.split(' -> ')));

  it('every folder of src/ has its place in the order, and the order names only folders there are', () => {
    const top = readdirSync(SRC, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? `${e.name}/` : unitOf(join(SRC, e.name)),
    );
    expect(top.filter((u) => !ORDER.includes(u))).toEqual([]);
    expect(ORDER.filter((u) => !top.includes(u))).toEqual([]);
    expect([...units].filter((u) => !ORDER.includes(u))).toEqual([]);
  });

  it('every import goes to an earlier folder, but for the pinned exceptions, each still there', () => {
    const back = backwards(edges.keys(), ORDER);
    const where = back.map((e) => `${e} (${[...(edges.get(e) ?? [])].join(', ')})`);
    expect(back, `backward imports:\n${where.join('\n')}`).toEqual(Object.keys(EXCEPTIONS).sort());
  });

  it('lib/ imports nothing of src/ outside itself: every folder may use it', () => {
    expect([...edges.keys()].filter((e) => e.startsWith('lib/ -> '))).toEqual([]);
  });

  it('the check sees static, type-only, re-exported and dynamic imports, and the edges that go backwards', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export * from './c.ts';",
      "import './d.ts';",
      "  const e = await import('./e.ts');",
      "import { z } from 'zod/mini';",
    ].join('\n');
    expect([...text.matchAll(IMPORT)].map((m) => m[1])).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './e.ts']);
    expect(backwards(['a/ -> b/', 'b/ -> a/', 'c/ -> a/', 'a/ -> c/'], ['a/', 'b/', 'c/'])).toEqual([
      'a/ -> b/',
      'a/ -> c/',
    ]);
  });
});
