/**
 * The README is the entrance and docs/ the reference: every relative link between them lands on a file (and on a
 * heading, when it names one), the README stays short, its minimal config is one rlwatch accepts, and the
 * configuration page lists every field of the schema's own sections.
 */
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/loadConfig.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { tempDir } from '../helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(path, 'utf8');

function markdownUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownUnder(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const PAGES = [join(ROOT, 'README.md'), ...markdownUnder(join(ROOT, 'docs'))];

/** The text outside fenced and inline code, where a `[x](y)` is a link. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorsOf = (text: string): Set<string> =>
  new Set([...prose(text).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));

describe('the README and docs/', () => {
  it('link only to files that exist, and to headings those files have', () => {
    expect(PAGES.length).toBeGreaterThan(10);
    const broken: string[] = [];
    let relativeLinks = 0;
    for (const page of PAGES) {
      for (const m of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        relativeLinks++;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : resolve(dirname(page), path);
        const where = `${relative(ROOT, page)} -> ${target}`;
        if (!existsSync(file)) broken.push(`${where}: no such file`);
        else if (anchor !== undefined && !anchorsOf(read(file)).has(anchor)) broken.push(`${where}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
    expect(relativeLinks).toBeGreaterThan(30);
  });

  it('a link to a missing file or heading is caught', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.md'), '# A page\n\n## What to try\n');
    const text = 'see [a](a.md#what-to-try), [b](a.md#nothing) and `[c](c.md)`';
    const targets = [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    expect(targets).toEqual(['a.md#what-to-try', 'a.md#nothing']);
    expect(anchorsOf(read(join(dir, 'a.md')))).toEqual(new Set(['a-page', 'what-to-try']));
    expect(slug('Email (SMTP)')).toBe('email-smtp');
    expect(slug('Feishu / Lark')).toBe('feishu--lark');
  });

  it('the README is an entrance of at most 200 lines, with the two quick-start commands', () => {
    const readme = read(join(ROOT, 'README.md'));
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    expect(readme).toContain('npm ci && bin/rlwatch demo');
    expect(readme).toMatch(/^npm test\b/m);
    expect(readme).toContain('rlwatch notify --test');
  });

  it("the README's minimal config is one rlwatch loads, rules included", async () => {
    const readme = read(join(ROOT, 'README.md'));
    const block = /## A minimal config[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const file = join(tempDir(), 'rlwatch.yaml');
    writeFileSync(file, block!, { mode: 0o600 });
    const { config } = await loadConfig(file, {});
    expect(config.watch.roots).toEqual([join(dirname(file), 'runs')]);
    expect(config.alerts.rules).toEqual([{ id: 'mode_collapse', escalate: { value: 0.9, for: 3 } }]);
    // the preset's rule, patched: its page at 0.9, its early warning as it was
    const rule = ruleBookFor(config)
      .forRun('r')
      .find((r) => r.id === 'mode_collapse');
    expect(rule).toMatchObject({
      value: 0.5,
      severity: 'warning',
      escalate: { value: 0.9, for: 3, severity: 'critical' },
    });
  });

  it('docs/configuration.md has a row for every field of the schema, platform sections included', () => {
    const page = read(join(ROOT, 'docs', 'configuration.md'));
    const documented = new Set(
      [...page.matchAll(/^\| (.+?) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([a-zA-Z.]+)`/g)].map((k) => k[1]!)),
    );
    const fields = fieldsOf(ConfigSchema, 2);
    expect(fields).toEqual(
      expect.arrayContaining(['db', 'watch.prefix', 'ingest.maxMetricNames', 'telegram.commands', 'webhook.charts']),
    );
    expect(fields.filter((f) => !documented.has(f))).toEqual([]);
  });
});

/** A schema's fields, `section.field` down to `depth` levels, through the defaults and optionals that wrap them. */
function fieldsOf(schema: unknown, depth: number, prefix = ''): string[] {
  type Def = { type: string; innerType?: { _zod: { def: Def } }; shape?: Record<string, unknown> };
  let def = (schema as { _zod: { def: Def } })._zod.def;
  while (def.innerType) def = def.innerType._zod.def;
  if (def.type !== 'object' || !def.shape || depth === 0) return [prefix];
  return Object.entries(def.shape).flatMap(([key, inner]) =>
    fieldsOf(inner, depth - 1, prefix ? `${prefix}.${key}` : key),
  );
}
