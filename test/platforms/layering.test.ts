import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', '..', 'src');
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
const all = files(SRC).map((f) => ({ path: relative(SRC, f).replaceAll('\\', '/'), text: readFileSync(f, 'utf8') }));

/** Platform names as they would appear in code or comments. */
const PLATFORM_NAME = /discord|slack|telegram|\bteams\b|mattermost|feishu|\blark\b|webhook|e-?mail|smtp|nodemailer/i;
const importsOf = (text: string): string[] =>
  [...text.matchAll(/(?:from|import\()\s*'([^']+)'/g)].map((m) => m[1] as string);

describe('the platform layer is a folder per platform plus one registration line', () => {
  it('no file outside src/platforms/ names a platform (the registration list is the one exception)', () => {
    const naming = all
      .filter((f) => !f.path.startsWith('platforms/'))
      .filter((f) => PLATFORM_NAME.test(f.text))
      .map((f) => `${f.path}: ${PLATFORM_NAME.exec(f.text)?.[0]}`);
    expect(naming).toEqual([]);
    // the check itself sees what it looks for
    expect(all.find((f) => f.path === 'platforms/index.ts')?.text).toMatch(PLATFORM_NAME);
  });

  it('platforms import the notify layer, never the reverse', () => {
    const upward = all
      .filter((f) => f.path.startsWith('notify/'))
      .flatMap((f) =>
        importsOf(f.text)
          .filter((i) => i.includes('platforms/'))
          .map((i) => `${f.path} imports ${i}`),
      );
    expect(upward).toEqual([]);
    const usesNotify = all
      .filter((f) => /^platforms\/(discord|slack)\//.test(f.path))
      .some((f) => importsOf(f.text).some((i) => i.includes('/notify/')));
    expect(usesNotify).toBe(true);
  });

  it('only the app, the config and the CLI reach into src/platforms/, through the list or the terminal', () => {
    const reaching = all
      .filter((f) => !f.path.startsWith('platforms/'))
      .flatMap((f) =>
        importsOf(f.text)
          .filter((i) => i.includes('platforms/'))
          .map((i) => `${f.path} -> ${i.replace(/^(\.\.?\/)+/, '')}`),
      );
    for (const r of reaching) expect(r).toMatch(/-> platforms\/(index|platform|terminal\/terminal)\.ts$/);
  });

  it('a platform loads its client library only inside create(): its entry imports statically only zod, node:, its own light modules', () => {
    const entries = all.filter((f) => /^platforms\/[^/]+\/index\.ts$/.test(f.path));
    expect(entries.length).toBeGreaterThanOrEqual(2);
    for (const e of entries) {
      // type-only imports vanish at run time; a value import of an npm package (other than zod) or of the bot loads it
      const staticImports = [...e.text.matchAll(/^import (?!type )[^;]*? from '([^']+)'/gm)].map((m) => m[1] as string);
      expect(
        staticImports.filter((i) => !/^(zod$|node:|\.\.?\/)/.test(i) || /bot\.ts$/.test(i)),
        e.path,
      ).toEqual([]);
    }
  });
});
