import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', 'src');

/** Every TypeScript file under src/, relative to it. */
function sources(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => relative(SRC, join(SRC, f)))
    .sort();
}

/** The text of the comment a file opens with (a block or a run of line comments), or null when code comes first. */
function openingComment(text: string): string | null {
  if (text.startsWith('/**')) {
    const end = text.indexOf('*/');
    return end < 0 ? null : text.slice(3, end);
  }
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('//')) break;
    lines.push(line.slice(2));
  }
  return lines.length > 0 ? lines.join('\n') : null;
}

describe('module headers', () => {
  it('every file in src/ opens with a comment saying what the module is for, above its imports', () => {
    const files = sources();
    expect(files.length).toBeGreaterThan(100);
    const missing = files.filter((f) => {
      const said = openingComment(readFileSync(join(SRC, f), 'utf8'));
      // a header says something: more than a stray `//` or an empty block
      return said === null || said.replace(/[\s*]/g, '').length < 10;
    });
    expect(missing).toEqual([]);
  });

  it('reads a header as the comment before any code, not one further down', () => {
    expect(openingComment('/** Reads the config file. */\nimport x from "y";\n')).toBe(' Reads the config file. ');
    expect(openingComment('// Reads the config file,\n// once.\nimport x from "y";\n')).toBe(
      ' Reads the config file,\n once.',
    );
    expect(openingComment('import x from "y";\n/** a function */\nexport function f() {}\n')).toBeNull();
    expect(openingComment('/* licence */\nimport x from "y";\n')).toBeNull();
  });
});
